"""Rows are submitted after the rows they compare with, and a row's final verdict includes those comparisons."""

from __future__ import annotations

import threading
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.runs.options import RunOptions
from fixtures_core.runs.plan import plan
from fixtures_core.spec import RowSpec
from flows.flow.board import RowBoard, baselines_first

FIXTURE = """---
metrics:
  - name: ms
    extract: json.ms
    unit: ms
    direction: lower
    baseline: base
    threshold: {regressionPercent: 25}
---

| Name | Command |
|---|---|
| slower | `true` |
| base | `true` |
| other | `true` |
"""
MS = {"slower": 150.0, "base": 100.0, "other": 110.0}


def sample(row: RowSpec, index: int, deadline: float, scope: Containment) -> SampleResult:
    return SampleResult(index, "PASS", 1.0, 0, "", "", Check("pass"), metrics={"ms": MetricValue("pass", MS[row.name])})


def rows(tmp_path: Path) -> tuple[RowSpec, ...]:
    (tmp_path / "m.md").write_text(FIXTURE)
    return plan(RunOptions(paths=(str(tmp_path / "m.md"),))).matrix.rows


def test_baseline_rows_come_first_otherwise_the_order_is_kept(tmp_path: Path) -> None:
    assert [r.name for r in baselines_first(rows(tmp_path))] == ["base", "slower", "other"]


def test_a_row_waits_for_its_baseline_and_fails_on_the_regression(tmp_path: Path, containment: Containment) -> None:
    order = baselines_first(rows(tmp_path))
    board = RowBoard(order)
    base, slower, other = order
    raw = {spec.name: run_row(spec, RunSettings("r"), containment, sample_runner=sample) for spec in order}
    assert raw["slower"].status == "PASS"  # its samples passed: only the comparison fails it

    found: dict[str, str] = {}
    waiting = threading.Thread(target=lambda: found.update(slower=board.final(slower, raw["slower"], None,
                                                                              threading.Event()).status))  # fmt: skip
    waiting.start()
    waiting.join(timeout=0.5)
    assert waiting.is_alive(), "finalized before its baseline row was posted"
    board.post(raw["base"])
    waiting.join(timeout=10)
    assert found == {"slower": "FAIL"}  # +50% against base, 25% allowed
    assert board.final(other, raw["other"], None, threading.Event()).status == "PASS"  # +10%
    assert board.final(base, raw["base"], None, threading.Event()).status == "PASS"


def test_a_stopped_run_stops_waiting(tmp_path: Path, containment: Containment) -> None:
    order = baselines_first(rows(tmp_path))
    board = RowBoard(order)
    stop = threading.Event()
    stop.set()
    slower = order[1]
    raw = run_row(slower, RunSettings("r"), containment, sample_runner=sample)
    # The baseline never came: its comparison cannot be made, which the row says (never a silent pass).
    final = board.final(slower, raw, None, stop)
    assert final.status == "ERR" and "base" in (final.metrics["ms"].comparison.error or "")  # type: ignore[union-attr]
