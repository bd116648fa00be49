"""Run a fixture through the real pipeline (parse, run every row, finalize, write) without an engine."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import run_row
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.runner import Recorder, RunOptions, complete, plan, settings_for


def run_fixture(path: Path, state: Path, run_id: str = "test-run", **options: object) -> RunResult:
    """Every row of ``path``, one after another, recorded under ``state``; the finished run."""
    run_options = RunOptions(paths=(str(path),), out=str(state), **options)  # type: ignore[arg-type]
    planned = plan(run_options)
    recorder = Recorder(Store(state), run_id, planned.matrix)
    rows = []
    with Containment() as containment:
        for spec in planned.matrix.rows:
            row = run_row(spec, settings_for(run_options, run_id), containment, on_sample=recorder.on_sample)
            recorder.on_row(row)
            rows.append(row)
        return complete(recorder, run_options, rows, baseline=planned.baseline, containment=containment)
