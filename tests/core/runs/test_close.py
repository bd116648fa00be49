"""Closing a run, the same for every engine: a run always ends with a run.json, ERR when it must."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.rundoc import load_run
from fixtures_core.runs import close
from fixtures_core.runs.close import RunStop, complete
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder


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

    monkeypatch.setattr(close, "finalize_rows", broken)  # fault injection: the code after it must cope
    run = complete(recorder, options, rows, RunStop("cancelled", "interrupted: samples were cancelled"))
    assert (run.status, run.stopped) == ("ERR", "cancelled")
    assert run.error == "interrupted: samples were cancelled; finalize failed: RuntimeError: a bug in finalize"
    assert [(r.name, r.status) for r in run.rows] == [("a", "PASS"), ("b", "FAIL")]
    assert (run.summary.passed, run.summary.failed, run.summary.samples) == (1, 1, 2)
    assert load_run(tmp_path / "state" / "runs" / "r1" / "run.json") == run
