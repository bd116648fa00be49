"""The local engine's row loop (``runs.local.run_rows_locally``): rows on threads, each recorded as it
finishes, results in matrix order whatever order they finished in."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings
from fixtures_core.records.evidence import raw_rows
from fixtures_core.runs.local import run_rows_locally
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder


def test_rows_run_in_parallel_come_back_in_matrix_order_and_are_recorded(
    tmp_path: Path, containment: Containment
) -> None:
    fixture = tmp_path / "f.md"
    # The first row waits for the last one to have started, so they finish out of matrix order.
    started = tmp_path / "last-started"
    fixture.write_text(
        "| Name | Command |\n|---|---|\n"
        f"| first | `while [ ! -e {started} ]; do sleep 0.01; done` |\n"
        "| middle | `false` |\n"
        f"| last | `touch {started}` |\n"
    )
    options = RunOptions(paths=(str(fixture),), out=str(tmp_path / "state"), engine="local")
    recorder = Recorder(store_for(options), "r1", plan(options).matrix)
    rows = run_rows_locally(recorder, RunSettings(run_id="r1"), containment, parallel=3)
    assert [(r.name, r.status) for r in rows] == [("first", "PASS"), ("middle", "FAIL"), ("last", "PASS")]
    recorded = raw_rows(tmp_path / "state" / "runs" / "r1")
    assert sorted(r.name for r in recorded.values()) == ["first", "last", "middle"]
