"""Runs for the report tests, made by the real pipeline (parse, run, finalize) once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.execution.sampling import ProcessGroups
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.runner import Recorder, RunOptions, complete, plan

REPO = Path(__file__).resolve().parents[3]

# Every status a row can end in, an arm property, a metric with thresholds, control characters in output.
MIXED = """---
repeat: 3
metrics:
  - name: size
    extract: json.size
    unit: bytes
    direction: lower
    threshold: {max: 100}
---

| Name | Command | arm | CEL Validation | Skip |
|---|---|---|---|---|
| small | `echo '{"size": 10}'` | A | `json.size < 50` | |
| small b | `echo '{"size": 12}'` | B | `json.size < 50` | |
| big | `echo '{"size": 500}'` | A | `true` | |
| broken | `printf 'not json\\001'` | | `json.size > 0` | |
| later | `true` | | | not on this machine |
"""


def run_fixture(path: Path, tmp: Path, **options: object) -> RunResult:
    """Run a fixture through the real pipeline (no engine, no Prefect) and return the finished run."""
    run_options = RunOptions(paths=(str(path),), out=str(tmp / "state"), **options)  # type: ignore[arg-type]
    planned = plan(run_options)
    recorder = Recorder(Store(tmp / "state"), "report-test", planned.matrix)
    rows = []
    for spec in planned.matrix.rows:
        row = run_row(spec, RunSettings(run_id="report-test"), ProcessGroups(), on_sample=recorder.on_sample)
        recorder.on_row(row)
        rows.append(row)
    return complete(recorder, run_options, rows)


@pytest.fixture(scope="session")
def matrix_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The example matrix: 4 rows x 5 samples, 3 metrics, 3 FAIL rows (one flaky)."""
    return run_fixture(REPO / "examples" / "matrix.md", tmp_path_factory.mktemp("matrix"), group_by=("selector",))


@pytest.fixture(scope="session")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """PASS, FAIL (metric threshold), ERR (CEL on non-JSON), SKIP rows, two arms of one row."""
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "mixed.md").write_text(MIXED)
    return run_fixture(folder / "mixed.md", folder)
