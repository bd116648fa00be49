"""The terminal report (``fixtures_core.reports.terminal``): rows and metrics tables, failure details,
the verdict line and the history table, rendered to text by a real rich Console."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console, RenderableType

from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.reports import describe, terminal
from fixtures_core.results import Check, Outcomes, RowResult, SampleResult, Status


def text_of(*renderables: RenderableType) -> str:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    for renderable in renderables:
        console.print(renderable)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def cells_by_row(text: str) -> dict[str, list[str]]:
    """The body lines of a rendered table, keyed by their first cell."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells:
            rows[cells[0]] = cells[1:]
    return rows


def rendered(run: RunResult) -> str:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    terminal.render(run, console)
    out = console.file
    assert isinstance(out, io.StringIO)
    return out.getvalue()


def test_rows_table_shows_status_passed_and_pass_k_of_each_row(mixed_run: RunResult) -> None:
    table = terminal.rows_table(mixed_run)
    rows = cells_by_row(text_of(table))
    assert table.title == f"assay run {mixed_run.run_id}"
    # passed, median (varies), pass@k, pass^k: 'broken' stopped after its one erring sample of 3
    assert {name: (cells[0], cells[1], cells[3], cells[4]) for name, cells in rows.items()} == {
        "small": ("PASS", "3/3", "1", "1"),
        "small b": ("PASS", "3/3", "1", "1"),
        "big": ("FAIL", "3/3", "1", "1"),
        "broken": ("ERR", "0/1 of 3", "withheld", "withheld"),
        "later": ("SKIP", "-", "-", "-"),
    }
    assert rows["later"][2] == "-" and rows["small"][2].endswith(" ms")


def test_metrics_table_marks_each_metric_and_is_absent_without_metrics(mixed_run: RunResult) -> None:
    table = terminal.metrics_table(mixed_run)
    assert table is not None
    rows = cells_by_row(text_of(table))
    assert rows["small"] == ["size (mean)", "10 bytes", "", "", "ok"]
    assert rows["big"] == ["size (mean)", "500 bytes", "", "", "✗ 500 bytes is above max 100"]
    assert rows["broken"][1] == "-" and rows["broken"][4].startswith("error: sample 0: json.size failed")
    fixtures = tuple(replace(f, rows=tuple(replace(r, metrics={}) for r in f.rows)) for f in mixed_run.fixtures)
    assert terminal.metrics_table(replace(mixed_run, fixtures=fixtures)) is None


def test_render_shows_failures_suite_line_and_verdict_last(mixed_run: RunResult) -> None:
    lines = [line.rstrip() for line in rendered(mixed_run).splitlines()]
    broken = lines.index(next(line for line in lines if line.startswith("ERR broken  (")))
    assert lines[broken].endswith("mixed.md:16)")
    assert lines[broken + 2 : broken + 5] == ["  CEL: json.size > 0", "  failing samples: 0", "  stdout of sample 0:"]
    assert any(line.startswith("FAIL big  (") for line in lines)
    assert "suite: pass@k and pass^k withheld: row 'broken' (sample 0 errored)" in lines
    assert [line for line in lines if line][-2:] == [
        "ERR  2 passed, 1 failed, 1 errored, 1 skipped; 10 samples",
        "verdict: ERR · exit 2 — 1 row errored: 'broken'; 1 row failed: 'big'",
    ]


@pytest.mark.parametrize(
    ("status", "dry_run", "shown", "style"),
    [
        ("PASS", False, "PASS", "green bold"),
        ("FAIL", False, "FAIL", "red bold"),
        ("ERR", False, "ERR", "magenta bold"),
        ("PASS", True, "DRY RUN", "dim bold"),
    ],
)
def test_verdict_line_colour_follows_the_verdict(
    mixed_run: RunResult, status: Status, dry_run: bool, shown: str, style: str
) -> None:
    run = replace(mixed_run, status=status, options={**mixed_run.options, "dry_run": dry_run})
    line = terminal.verdict_line(run)
    assert line.plain.startswith(f"\n{shown}  {describe.counts(run)}")
    assert str(line.style) == style


def test_verdict_line_carries_the_run_error(mixed_run: RunResult) -> None:
    line = terminal.verdict_line(replace(mixed_run, error="interrupted: samples were cancelled"))
    assert line.plain.endswith("\nerror: interrupted: samples were cancelled")


def test_history_shows_each_saved_run_with_its_verdict_and_pass_rate(tmp_path: Path, mixed_run: RunResult) -> None:
    store = Store(tmp_path)
    store.write_run(mixed_run)
    store.write_run(replace(mixed_run, run_id="20990101T000000Z-labelled", label="nightly"))
    console = Console(file=io.StringIO(), width=240, color_system=None)
    terminal.render_history(store.runs(), console)
    out = console.file
    assert isinstance(out, io.StringIO)
    rows = cells_by_row(out.getvalue())
    # 2 passed of 4 counted rows (the SKIP row is not counted): 50%
    # the run's own verdict, the baseline gate's answer ("-": not compared), the exit code
    assert rows[mixed_run.run_id] == ["", mixed_run.started_at, "ERR", "-", "2", "5", "50%"]
    assert rows["20990101T000000Z-labelled"][:1] == ["nightly"]


def unsafe_row() -> RowResult:
    escapes = "\x1b[2J\x1b]0;title\x07"  # clear the screen, set the window title
    sample = SampleResult(0, "FAIL", 1.0, 1, f"{escapes}agent output", "", Check("fail", error="exit code 1"))
    return RowResult("f.md::r", "f.md", "r", 3, "FAIL", 1, ("agent",), {}, (sample,), Outcomes("fail", "pass"))


def test_failure_excerpt_carries_no_escape_sequence_to_the_terminal() -> None:
    console = Console(file=io.StringIO(), width=240, color_system=None)
    terminal.render_failure(describe.failure(unsafe_row()), console)
    out = console.file
    assert isinstance(out, io.StringIO)
    assert "agent output" in out.getvalue()
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    assert "\\x1b[2J\\x1b]0;title\\x07agent output" in out.getvalue()  # shown, to be read


@pytest.mark.parametrize("width", [200, 80, 60, 44, 30, 12])
def test_history_never_cuts_a_run_id_at_any_width(tmp_path: Path, mixed_run: RunResult, width: int) -> None:
    store = Store(tmp_path)
    long_id = "20261203T145633.519440Z-0123456789ab-a-long-branch-name"
    store.write_run(replace(mixed_run, run_id=long_id, label="nightly"))
    store.write_run(mixed_run)
    console = Console(file=io.StringIO(), width=width, color_system=None)
    terminal.render_history(store.runs(), console)
    out = console.file
    assert isinstance(out, io.StringIO)
    text = out.getvalue()
    assert "…" not in text
    found = set(text.split())  # whole words: an id cut or wrapped into two lines is not one
    assert {long_id, mixed_run.run_id} <= found, text
    assert "ERR" in text  # the verdict stays beside the id
    if width == 200:  # room for every column
        assert all(name in text for name in ("label", "started", "baseline", "exit", "rows", "pass rate"))


def test_history_at_80_columns_drops_the_baseline_exit_and_start_before_cutting_an_id(
    tmp_path: Path, mixed_run: RunResult
) -> None:
    store = Store(tmp_path)
    run_id = "20261203T145633.519440Z-abc1234-main"  # as a run in a git work tree is named
    store.write_run(replace(mixed_run, run_id=run_id, label="nightly"))
    console = Console(file=io.StringIO(), width=80, color_system=None)
    terminal.render_history(store.runs(), console)
    out = console.file
    assert isinstance(out, io.StringIO)
    rows = cells_by_row(out.getvalue())
    assert rows[run_id] == ["nightly", "ERR", "5", "50%"]  # label, verdict, rows, pass rate
