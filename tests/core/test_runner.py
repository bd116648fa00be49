"""What every engine shares: a run always ends with a run.json, ERR when it must."""

from __future__ import annotations

from pathlib import Path

import pytest

import fixtures_core.runner as runner
from fixtures_core.errors import UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.rundoc import load_run
from fixtures_core.runner import Recorder, RunOptions, RunStop, complete, plan, store_for


def test_a_failure_while_finalizing_still_ends_the_run_with_an_err_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, containment: Containment
) -> None:
    fixture = tmp_path / "f.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| a | `true` |\n| b | `false` |\n")
    options = RunOptions(paths=(str(fixture),), out=str(tmp_path / "state"), engine="local")
    recorder = Recorder(store_for(options), "r1", plan(options).matrix)
    rows = []
    for spec in recorder.matrix.rows:  # as an engine does: run, record, collect
        row = run_row(spec, RunSettings(run_id="r1"), containment, on_sample=recorder.on_sample)
        recorder.on_row(row)
        rows.append(row)

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug in finalize")

    monkeypatch.setattr(runner, "finalize_rows", broken)  # fault injection: the code after it must cope
    run = complete(recorder, options, rows, RunStop("cancelled", "interrupted: samples were cancelled"))
    assert (run.status, run.stopped) == ("ERR", "cancelled")
    assert run.error == "interrupted: samples were cancelled; finalize failed: RuntimeError: a bug in finalize"
    assert [(r.name, r.status) for r in run.rows] == [("a", "PASS"), ("b", "FAIL")]
    assert (run.summary.passed, run.summary.failed, run.summary.samples) == (1, 1, 2)
    assert load_run(tmp_path / "state" / "runs" / "r1" / "run.json") == run


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"repeat": 0}, "--repeat must be a whole number >= 1, got 0"),
        ({"repeat": -1}, "--repeat must be a whole number >= 1, got -1"),
        ({"parallel": 0}, "--parallel must be >= 1, got 0"),
        ({"engine": "dask"}, "--engine must be prefect or local, got 'dask'"),
    ],
)
def test_options_out_of_range_are_usage_errors(values: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        RunOptions(paths=("a.md",), **values).check()  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_a_state_folder_that_is_a_file_is_a_usage_error_before_anything_is_read(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "state"
    not_a_folder.write_text("")
    with pytest.raises(UsageError) as raised:
        plan(RunOptions(paths=(str(tmp_path / "missing.md"),), out=str(not_a_folder)))
    assert str(raised.value) == f"--out {not_a_folder} is not a folder: give the state folder (default .assay)"
