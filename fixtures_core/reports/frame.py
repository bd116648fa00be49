"""The sample x metric frame of a run, for pandas, notebooks and spreadsheets.

One line per sample; the columns, in order (README's "Reports" lists them with their units):

    run_id, file, row, row_status, case, arm, outcome, sample, status, reason, duration_ms, exit_code,
    prop.NAME ...    every property of the rows (columns of their tables, frontmatter keys)
    metric.NAME ...  every metric's value

``row_status`` is the row's answer as every report shows it (``status_words.row``: ``PASS``, ``FAIL (flaky)``,
``LOST``, ``DISQUALIFIED``...). ``case`` and ``arm`` are an A/B suite's (empty elsewhere), ``outcome`` how the arm
ended its case (won, lost, tie or disqualified: a disqualified arm never reads as a plain PASS); ``status`` is the
sample's own; ``reason`` says why a sample did not
pass (empty for a PASS). The ``metric.`` and ``prop.`` prefixes keep a metric or a column called
``duration_ms`` or ``status`` apart from the sample's own. Units: ``duration_ms`` is milliseconds,
and ``frame.attrs["units"]`` maps each ``metric.NAME`` column to its metric's unit (Parquet keeps
it in the file's metadata). The values come from the long table finalize aggregates
(``finalize.metric_table``), pivoted so a sample is one line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from fixtures_core.analysis.finalize import metric_table
from fixtures_core.errors import UsageError
from fixtures_core.files import write_atomic
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import status_words
from fixtures_core.reports.describe import sample_reason

if TYPE_CHECKING:  # imported where it is used, as in finalize: most commands never write a frame
    import pandas as pd

FORMATS = (".csv", ".parquet")
METRIC_PREFIX = "metric."
PROPERTY_PREFIX = "prop."
SAMPLE_COLUMNS = [
    "run_id", "file", "row", "row_status", "case", "arm", "outcome", "sample", "status", "reason", "duration_ms",
    "exit_code",
]  # fmt: skip
_OWN_COLUMNS = ("case", "arm")  # properties with a column of their own
_KEYS = ["row_id", "sample"]


def sample_frame(run: RunResult) -> pd.DataFrame:
    """A DataFrame with one line per sample of the run: sample columns, properties, metrics."""
    import pandas as pd

    names = list(dict.fromkeys(k for row in run.rows for k in row.properties if k not in _OWN_COLUMNS))
    samples = pd.DataFrame.from_records(
        [
            (
                run.run_id,
                row.file,
                row.name,
                status_words.row(row).word,
                _text(row.properties.get("case")),
                _text(row.properties.get("arm")),
                row.case_result,
                s.index,
                s.status,
                "" if s.passed else sample_reason(s),
                s.duration_ms,
                s.exit_code,
                row.id,
                *(_text(row.properties.get(name)) for name in names),
            )
            for row in run.rows
            for s in row.samples
        ],
        columns=[*SAMPLE_COLUMNS, "row_id", *(f"{PROPERTY_PREFIX}{name}" for name in names)],
    )
    samples["exit_code"] = samples["exit_code"].astype("Int64")  # a killed sample has none
    units = {f"{METRIC_PREFIX}{name}": unit for name, unit in _units(run).items()}
    values = metric_table(run.rows).rename(columns={"row": "row_id"})
    if values.empty:
        frame = samples.drop(columns="row_id")
    else:
        wide = values.pivot_table(index=_KEYS, columns="metric", values="value", aggfunc="first", sort=False)
        wide.columns = [f"{METRIC_PREFIX}{name}" for name in wide.columns]
        frame = samples.merge(wide.reset_index(), on=_KEYS, how="left").drop(columns="row_id")
    frame.attrs["units"] = {"duration_ms": "ms", **{c: u for c, u in units.items() if c in frame.columns}}
    return frame


def _units(run: RunResult) -> dict[str, str]:
    """Each metric's unit (the same on every row: validation checks it against baselines)."""
    return {name: summary.unit for row in run.rows for name, summary in row.metrics.items() if summary.unit}


def _text(value: object) -> str | None:
    return None if value in (None, "") else str(value)


def check_frame_path(path: str) -> None:
    """Raise UsageError unless ``path`` names a format assay writes, with what it needs installed."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"--frame {path}: the file name must end in .csv or .parquet")
    if suffix == ".parquet" and importlib.util.find_spec("pyarrow") is None:
        raise UsageError(
            f"--frame {path}: Parquet needs pyarrow, which is not installed "
            "(pip install 'assay[parquet]'), or write .csv"
        )


def write_frame(run: RunResult, path: Path) -> None:
    """Write the sample frame as CSV or Parquet, chosen by the file name."""
    check_frame_path(str(path))
    frame = sample_frame(run)
    if path.suffix.lower() == ".parquet":
        write_atomic(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        write_atomic(path, lambda tmp: frame.to_csv(tmp, index=False))
