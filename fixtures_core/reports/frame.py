"""The sample x metric frame of a run, for pandas, notebooks and spreadsheets.

One line per sample: run id, file, row, arm, sample index, status, wall time,
exit code, then one ``metric.NAME`` column per metric (the ``metric.`` prefix
keeps a metric called ``duration_ms`` apart from the sample's own wall time).
The values come from the long table finalize aggregates (``finalize.metric_table``),
pivoted so a sample is one line.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

from fixtures_core.analysis.finalize import metric_table
from fixtures_core.errors import UsageError
from fixtures_core.files import write_atomic
from fixtures_core.records.rundoc import RunResult

if TYPE_CHECKING:  # imported where it is used, as in finalize: most commands never write a frame
    import pandas as pd

FORMATS = (".csv", ".parquet")
METRIC_PREFIX = "metric."
_KEYS = ["row_id", "sample"]


def sample_frame(run: RunResult) -> pd.DataFrame:
    """A DataFrame with one line per sample of the run, metrics as columns."""
    import pandas as pd

    samples = pd.DataFrame.from_records(
        [
            (
                run.run_id,
                row.file,
                row.name,
                _arm(row.properties.get("arm")),
                row.id,
                s.index,
                s.status,
                s.duration_ms,
                s.exit_code,
            )
            for row in run.rows
            for s in row.samples
        ],
        columns=["run_id", "file", "row", "arm", "row_id", "sample", "status", "duration_ms", "exit_code"],
    )
    samples["exit_code"] = samples["exit_code"].astype("Int64")  # a killed sample has none
    values = metric_table(run.rows).rename(columns={"row": "row_id"})
    if values.empty:
        return samples.drop(columns="row_id")
    wide = values.pivot_table(index=_KEYS, columns="metric", values="value", aggfunc="first", sort=False)
    wide.columns = [f"{METRIC_PREFIX}{name}" for name in wide.columns]
    return samples.merge(wide.reset_index(), on=_KEYS, how="left").drop(columns="row_id")


def _arm(value: object) -> str | None:
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
