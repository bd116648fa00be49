"""The comparison with a baseline says the same lines in the terminal, Markdown and HTML reports."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import replace
from html.parser import HTMLParser

import pytest
from rich.console import Console

from fixtures_core.analysis.baseline import Comparison, compare
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import markdown, terminal
from fixtures_core.reports.comparison import comparison_lines, text_lines
from fixtures_core.reports.html import html
from fixtures_core.results import RowResult


def map_rows(run: RunResult, change: Callable[[RowResult], RowResult | None]) -> RunResult:
    """The run with every row passed through ``change`` (None drops the row)."""
    fixtures = tuple(
        replace(f, rows=tuple(row for row in map(change, f.rows) if row is not None)) for f in run.fixtures
    )
    return replace(run, fixtures=fixtures)


def renamed(row: RowResult, name: str) -> RowResult:
    return replace(row, name=name, id=f"{row.file}::{name}")


@pytest.fixture(scope="module")
def eventful(matrix_run: RunResult) -> RunResult:
    """The example matrix (API high passes; CLI high, API low and API flaky fail) against a baseline
    in which CLI high passed (a regression), API high was called API old (one row added, one
    removed), and API low and API flaky failed too (still failing)."""

    def baseline_row(row: RowResult) -> RowResult:
        if row.name == "CLI high":
            return replace(row, status="PASS")
        return renamed(row, "API old") if row.name == "API high" else row

    baseline = map_rows(matrix_run, baseline_row)
    return replace(matrix_run, comparison=compare(baseline, matrix_run, 0.0, "shipped"))


def comparison_of(run: RunResult) -> Comparison:
    assert run.comparison is not None
    return run.comparison


def test_lines_name_the_regression_the_rows_still_failing_and_the_added_and_removed_rows(eventful: RunResult) -> None:
    found = comparison_lines(comparison_of(eventful))

    assert found.still_failing == ("API low", "API flaky")
    assert [(r.mark, r.row, r.before, r.after) for r in found.rows] == [
        ("regressed", "CLI high", "PASS", "FAIL"),
        ("informational", "API high", "(absent)", "PASS"),
        ("informational", "API old", "PASS", "(absent)"),
    ]
    assert found.verdict == "Regression against baseline"
    pass_rate = next(f for f in found.figures if f.name == "pass rate")
    # baseline over the 3 rows both ran: CLI high passed, API low and API flaky failed = 1/3;
    # current over all 4: API high passed = 1/4. 1/4 - 1/3 = -0.083.
    assert (pass_rate.mark, pass_rate.baseline, pass_rate.current, pass_rate.delta) == (
        "regressed",
        "0.333",
        "0.250",
        "-0.083",
    )


def test_text_lines_mark_every_line(eventful: RunResult) -> None:
    lines = text_lines(comparison_of(eventful))

    assert lines[0] == "Baseline comparison (tolerance 0.000)"
    assert lines[1].startswith("baseline: run ")  # the saved run by id, label, start and commit
    assert lines[2].split() == ["METRIC", "BASELINE", "CURRENT", "DELTA"]  # no p column: run.json keeps it
    assert any(line.startswith("! pass rate ") for line in lines)
    assert "· still failing, as in the baseline (not a regression): API low, API flaky" in lines
    assert "! CLI high  PASS -> FAIL" in lines
    assert "· API high  (absent) -> PASS" in lines
    assert "· API old  PASS -> (absent)" in lines
    assert lines[-1] == "Regression against baseline"


def test_terminal_and_markdown_show_the_text_lines(eventful: RunResult) -> None:
    lines = text_lines(comparison_of(eventful))
    out = io.StringIO()
    terminal.render(eventful, Console(file=out, width=200, color_system=None))
    page = markdown.render(eventful)

    for line in lines:
        assert line in out.getvalue() and line in page


class Tables(HTMLParser):
    """The text of every table row of a page, by the table's class, and of every paragraph by its class or id."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[list[str]]] = {}
        self.paragraphs: dict[str, str] = {}
        self._table = ""
        self._cells: list[str] | None = None
        self._paragraph: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "table":
            self._table = named.get("class") or ""
        elif tag == "tr":
            self._cells = []
        elif tag in ("td", "th") and self._cells is not None:
            self._cells.append("")
        elif tag == "p":
            self._paragraph = named.get("id") or named.get("class") or ""
            self.paragraphs[self._paragraph] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr" and self._cells is not None:
            self.rows.setdefault(self._table, []).append(self._cells)
            self._cells = None
        elif tag == "p":
            self._paragraph = None

    def handle_data(self, data: str) -> None:
        if self._cells:
            self._cells[-1] += data
        if self._paragraph is not None:
            self.paragraphs[self._paragraph] += data


def test_html_shows_every_line_of_the_comparison(eventful: RunResult) -> None:
    found = comparison_lines(comparison_of(eventful))
    page = Tables()
    page.feed(html(eventful))

    marks = {"regressed": "!", "held": "", "informational": "·"}
    figures = [[marks[f.mark], f.name, f.baseline, f.current, f.delta, f.note] for f in found.figures]
    moved = [line for f, line in zip(found.figures, figures, strict=True) if f.moved]
    unchanged = [line for f, line in zip(found.figures, figures, strict=True) if not f.moved]
    assert unchanged and all(line[4] in ("+0.0%", "+0.000", "-") for line in unchanged)
    # what moved first; the unchanged lines after a button that folds them (the page's script shows it); no p
    assert page.rows["comparison"] == [
        ["", "what", "baseline", "current", "Δ", "note"],
        *moved,
        [f"show {len(unchanged)} unchanged lines"],
        *unchanged,
    ]
    changes = [[marks[r.mark], r.row, r.before, r.after] for r in found.rows]
    assert page.rows["changes"] == [["", "row", "baseline", "current"], *changes]
    assert (
        page.paragraphs["still-failing"] == "· still failing, as in the baseline (not a regression): API low, API flaky"
    )
    assert page.paragraphs["comparison-verdict"] == "Regression against baseline"


def test_html_header_words_the_verdict_as_the_other_reports(matrix_run: RunResult) -> None:
    same = replace(matrix_run, comparison=compare(matrix_run, matrix_run, 0.0, "shipped"))
    page = html(same)

    answer = "FAIL · no regression against shipped · exit 0"  # the run's own verdict, the gate's, the exit code
    assert same.verdict.answer == answer
    assert f'<p id="answer">verdict: {answer} — ' in page
    assert f"\nverdict: {answer} — " in terminal.verdict_line(same).plain
    assert markdown.verdict_line(same).endswith(f"; verdict: {answer}")


def test_a_failed_comparison_says_why_and_gives_no_verdict(matrix_run: RunResult) -> None:
    failed = Comparison("old.json", 0.0, True, (), (), (), (), (), (), error="baseline old.json: file not found")

    assert text_lines(failed) == [
        "Baseline comparison (tolerance 0.000)",
        "Comparison failed: baseline old.json: file not found",
    ]
    page = html(replace(matrix_run, comparison=failed))
    assert '<p class="gating">Comparison failed: baseline old.json: file not found</p>' in page
    assert "comparison-verdict" not in page


def test_no_report_and_no_run_document_holds_a_p_value(eventful: RunResult) -> None:
    """Seeds 01 and 04 rule significance tests out: no p column, no p-value, wherever a user reads."""
    from fixtures_core.records.rundoc import from_document, to_document
    from fixtures_core.reports.junit import junit

    document = to_document(eventful)
    assert "p_value" not in json.dumps(document)
    out = io.StringIO()
    terminal.render(eventful, Console(file=out, width=200))
    for text in (html(eventful), markdown.render(eventful, since=None), out.getvalue(), junit(eventful)):
        assert not re.search(r"\bp[ =]\d|p_value|p-value|>p<", text)

    # A run document an older assay wrote, with a p-value on every line, still loads (the keys are dropped).
    older = json.loads(json.dumps(document))
    comparison = older["comparison"]
    for line in (*comparison["rates"], *comparison["metrics"], *comparison["changes"]):
        line["p_value"] = 0.5
    assert to_document(from_document(older)) == document
