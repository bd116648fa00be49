"""Test helper: A/B example paths, and a fixture run through the real pipeline (plan, run and
record every row, finalize, write) one row after another, without an engine."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import new_run_id
from fixtures_core.runs.close import complete
from fixtures_core.runs.options import RunOptions, settings_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import open_run, run_recorded_row

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_SUITE = REPO / "examples" / "ab" / "suite.md"


def run_fixture(path: Path, state: Path, run_id: str = "test-run", **options: object) -> RunResult:
    """Every row of ``path``, one after another, recorded under ``state``; the finished run."""
    run_options = RunOptions(paths=(str(path),), out=str(state), **options)  # type: ignore[arg-type]
    planned = plan(run_options)
    recorder = open_run(run_options, run_id, planned)
    settings = settings_for(run_options, run_id)
    with Containment() as containment:
        rows = [run_recorded_row(row, settings, containment, recorder) for row in planned.matrix.rows]
        return complete(recorder, run_options, rows, baseline=planned.baseline, containment=containment)


def run_in_process(path: Path, out: Path, **options: object) -> RunResult:
    """``run_fixture`` under a new run id, so several runs can share one state folder."""
    return run_fixture(path, out, run_id=new_run_id(), **options)
