"""assay's pure domain: parse fixtures, run rows, check with CEL, aggregate, compare.

Nothing here imports Prefect; ``flows`` orchestrates these functions. A
library call runs one row::

    from fixtures_core import load_matrix, run_row, RunSettings, Containment
    row = load_matrix(["examples/passing.md"]).rows[0]
    with Containment() as containment:
        result = run_row(row, RunSettings(run_id="adhoc"), containment)
"""

from fixtures_core.errors import (
    AssayError,
    BaselineError,
    CelError,
    FixtureError,
    RunFileError,
    UsageError,
    ValidationFailed,
)
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.matrix import load_matrix, select
from fixtures_core.parsing.validate import validate_matrix
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import Matrix, MetricSpec, RowSpec
from fixtures_core.verdicts.answer import Verdict

__all__ = [
    "AssayError",
    "BaselineError",
    "CelError",
    "Containment",
    "FixtureError",
    "Matrix",
    "MetricSpec",
    "RowResult",
    "RowSpec",
    "RunFileError",
    "RunResult",
    "RunSettings",
    "SampleResult",
    "UsageError",
    "ValidationFailed",
    "Verdict",
    "load_matrix",
    "load_run",
    "run_row",
    "select",
    "validate_matrix",
]
