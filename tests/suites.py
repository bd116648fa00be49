"""Test helper: run fixture files in this process the way ``assay run --engine local`` does."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.execution.sampling import ProcessGroups
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import new_run_id
from fixtures_core.runner import Recorder, RunOptions, complete, plan, settings_for, store_for
from flows.local import run_rows_locally

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_SUITE = REPO / "examples" / "ab" / "suite.md"


def run_in_process(path: Path, out: Path, **options: object) -> RunResult:
    """Plan, run on the local thread pool and complete (judge, gates, run document) one fixture file."""
    run_options = RunOptions(paths=(str(path),), out=str(out), engine="local", **options)  # type: ignore[arg-type]
    planned = plan(run_options)
    run_id = new_run_id()
    recorder = Recorder(store_for(run_options), run_id, planned.matrix)
    groups = ProcessGroups()
    rows = run_rows_locally(recorder, settings_for(run_options, run_id), groups, parallel=4)
    return complete(recorder, run_options, rows, baseline=planned.baseline, groups=groups)
