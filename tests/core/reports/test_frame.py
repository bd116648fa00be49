"""The sample x metric frame: one line per sample, a column per metric; CSV always, Parquet with pyarrow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from fixtures_core.errors import UsageError
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.frame import check_frame_path, sample_frame, write_frame

REPO = Path(__file__).resolve().parents[3]


def test_one_line_per_sample_and_a_column_per_metric(matrix_run: RunResult) -> None:
    frame = sample_frame(matrix_run)
    properties = [c for c in frame.columns if c.startswith("prop.")]
    assert list(frame.columns) == [
        "run_id", "file", "row", "row_status", "case", "arm", "outcome", "sample", "status", "reason", "duration_ms",
        "exit_code",
        *properties, "metric.reasoning_tokens", "metric.duration_ms", "metric.cost_usd",
    ]  # fmt: skip
    assert {"prop.selector", "prop.prompt"} <= set(properties)
    assert len(frame) == 20  # 4 rows x 5 samples
    flaky = frame[frame["row"] == "API flaky"].set_index("sample")
    assert list(flaky["status"]) == ["PASS", "PASS", "PASS", "FAIL", "PASS"]
    assert set(flaky["row_status"]) == {"FAIL (flaky)"}  # the row's answer, as every report shows it
    assert list(flaky["reason"]) == ["", "", "", flaky["reason"][3], ""]
    assert flaky["reason"][3].startswith("CEL assertion false (clause 1 of 2 is false: ")
    row = next(r for r in matrix_run.rows if r.name == "API flaky")
    assert (flaky["prop.selector"] == row.properties["selector"]).all()
    units = {name: summary.unit for name, summary in row.metrics.items()}
    assert frame.attrs["units"] == {"duration_ms": "ms", **{f"metric.{n}": u for n, u in units.items()}}
    row = next(r for r in matrix_run.rows if r.name == "API flaky")
    assert list(flaky["metric.duration_ms"]) == list(row.metrics["duration_ms"].values)
    assert (frame["run_id"] == matrix_run.run_id).all() and (frame["file"] == "examples/matrix.md").all()


def test_arms_and_missing_values(mixed_run: RunResult) -> None:
    frame = sample_frame(mixed_run)
    assert frame["case"].isna().all()  # no A/B suite in this run
    arms = frame.drop_duplicates("row")["arm"].tolist()  # a SKIP row has no sample line
    assert arms[:3] == ["A", "B", "A"] and pd.isna(arms[3])
    broken = frame[frame["row"] == "broken"]
    assert len(broken) == 1 and broken["metric.size"].isna().all()  # the ERR sample gave no value


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_written_files_read_back_equal(matrix_run: RunResult, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / "deep" / f"samples{suffix}"
    write_frame(matrix_run, path)
    loaded = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    expected = sample_frame(matrix_run)
    assert list(loaded.columns) == list(expected.columns)
    assert loaded["metric.cost_usd"].tolist() == pytest.approx(expected["metric.cost_usd"].tolist())
    assert loaded["row"].tolist() == expected["row"].tolist()
    if suffix == ".parquet":  # the units travel with the file
        assert loaded.attrs["units"] == expected.attrs["units"]


def test_an_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match=r"--frame out\.json: the file name must end in \.csv or \.parquet"):
        check_frame_path("out.json")


def test_parquet_without_pyarrow_says_what_to_install() -> None:
    # A fresh interpreter in which pyarrow cannot be found, as on an install without the extra.
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda name, *a: None if name == 'pyarrow' else real(name, *a)\n"
        "from fixtures_core.reports.frame import check_frame_path\n"
        "from fixtures_core.errors import UsageError\n"
        "try:\n    check_frame_path('x.parquet')\nexcept UsageError as e:\n    print(e)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert "Parquet needs pyarrow, which is not installed (pip install 'assay[parquet]'), or write .csv" in done.stdout


def test_an_arm_row_says_how_it_ended_its_case(ab_run: RunResult) -> None:
    frame = sample_frame(ab_run).set_index("row")
    # The example's hasty arm swallows an error in config-comments: disqualified, whatever its PASS.
    assert frame.loc["config-comments/hasty", "status"] == "PASS"
    assert frame.loc["config-comments/hasty", "outcome"] == "disqualified"
    assert frame.loc["config-comments/careful", "outcome"] == "won"
    assert frame.loc["loud-flag/hasty", "outcome"] == "lost"
    assert set(frame.loc[["docstring/careful", "docstring/hasty"], "outcome"]) == {"tie"}
