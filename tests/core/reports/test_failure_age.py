"""Every output that lists failing rows says how long each has failed, from the saved runs of its suite:
``new tonight`` or ``failing since run ID (date, commit), K runs`` (a seeded history in a real state folder)."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.reports import markdown, terminal
from fixtures_core.reports.html import Context, html
from fixtures_core.reports.outputs import ReportFiles
from fixtures_core.reports.trends import since_of
from tests.core.analysis.test_trends import broke_four_nights_ago, row, run


def tonight(tmp_path: Path) -> tuple[RunResult, Path, str]:
    """14 saved nights (breaks failing since night 10), then tonight: breaks still fails, steady is new."""
    state = tmp_path / ".assay"
    store = Store(state)
    nights = broke_four_nights_ago()
    for night in nights:
        store.write_run(night)
    now = run(14, [row("steady", 0), row("breaks", 0), row("wobbly", 3)])
    store.write_run(now)
    since = f"failing since run {nights[10].run_id} (2026-12-11, commit abc1234def56), 5 runs"
    return now, state, since


def test_the_markdown_summary_dates_each_failing_row(tmp_path: Path) -> None:
    now, state, since = tonight(tmp_path)
    text = markdown.render(now, since=since_of(now, state))
    lines = text.splitlines()
    assert any(line.startswith("- **FAIL** breaks (`nightly.md:1`) (failing since run ") for line in lines)
    assert any(line.startswith("- **FAIL** steady (`nightly.md:1`) (new tonight)") for line in lines)
    assert "5 runs" in next(line for line in lines if line.startswith("- **FAIL** breaks"))
    assert any(line.startswith("- still failing: 'breaks' failing since run ") for line in lines)


def test_junit_messages_start_with_the_age(tmp_path: Path) -> None:
    now, state, since = tonight(tmp_path)
    target = tmp_path / "junit.xml"
    ReportFiles(junit=str(target)).write(now, state=state)
    messages = {
        case.get("name"): failure.get("message")
        for case in ET.parse(target).iter("testcase")
        for failure in case.iter("failure")
    }
    assert messages["breaks"] is not None and messages["breaks"].startswith(since + ": ")
    assert messages["steady"] is not None and messages["steady"].startswith("new tonight: ")


def test_the_terminal_report_dates_each_failure(tmp_path: Path) -> None:
    now, state, since = tonight(tmp_path)
    buffer = io.StringIO()
    terminal.render(now, Console(file=buffer, width=80, color_system=None), since=since_of(now, state))
    lines = buffer.getvalue().splitlines()
    breaks = lines.index(next(line for line in lines if line.startswith("FAIL breaks")))
    assert lines[breaks + 1] == "  " + since
    steady = lines.index(next(line for line in lines if line.startswith("FAIL steady")))
    assert lines[steady + 1] == "  new tonight"


def test_the_run_page_dates_each_failure_and_names_the_rows_still_failing(tmp_path: Path) -> None:
    now, state, since = tonight(tmp_path)
    page = html(now, Context(since=since_of(now, state)))
    assert f'<span class="age">{since}</span> · ' in page
    assert '<span class="age new">new tonight</span> · ' in page
    assert f"still failing: &#x27;breaks&#x27; {since}" in page
