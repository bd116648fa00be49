"""The HTML report: one self-contained page with the verdict, rows, plots, suite figures and drill-down."""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape

from fixtures_core.analysis.baseline import compare
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.html import html


def test_the_page_is_self_contained(matrix_run: RunResult) -> None:
    page = html(matrix_run)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert page.count("<script") == 1 and "<script>" in page  # one inline script: sorting and the filter
    # The only URLs are SVG namespace names, which browsers never fetch.
    assert set(re.findall(r"https?://[^\"' )]+", page)) == {"http://www.w3.org/2000/svg"}
    assert re.findall(r'\b(?:src|href)="(?!#)', page) == []  # links stay inside the page


def test_the_page_has_the_verdict_rows_plots_suite_and_samples(matrix_run: RunResult) -> None:
    page = html(matrix_run)
    assert '<span id="verdict" class="badge verdict tone-fail">FAIL</span>' in page
    assert len(re.findall(r'<tr class="row[ "]', page)) == 4
    assert page.count('<svg class="plot"') == 3  # reasoning_tokens, duration_ms, cost_usd
    assert page.count('<circle class="sample"') == 60  # 20 samples x 3 metrics
    assert '<span class="badge tone-fail">FAIL (flaky)</span>' in page  # API flaky
    assert page.count('<tr class="group">') == 1 + 4  # all rows, then one per selector (--group-by)
    assert page.count('<details class="row-detail"') == 4
    assert len(re.findall(r'<details class="row-detail" id="[\w-]+" open>', page)) == 3  # failing rows open
    assert "CEL assertion false (clause 1 of 2 is false: " in page
    assert "threshold 120,000 ms is beyond the axis" in page


def test_a_comparison_with_a_saved_run_is_shown(matrix_run: RunResult) -> None:
    compared = replace(matrix_run, comparison=compare(matrix_run, matrix_run, 0.0, "shipped"))
    page = html(compared)
    assert f'<h2 id="comparison">Comparison with shipped (run {matrix_run.run_id})</h2>' in page
    assert '<p id="comparison-verdict">No regression against baseline</p>' in page
    assert "<td>sample pass rate</td>" in page


def test_user_text_is_escaped(mixed_run: RunResult) -> None:
    row = mixed_run.fixtures[0].rows[0]
    evil = replace(row, name="<img src=x onerror=alert(1)>", error="<b>bold</b>")
    run = replace(mixed_run, fixtures=(replace(mixed_run.fixtures[0], rows=(evil,)),), label="<i>")
    page = html(run)
    assert "<img" not in page and "<b>bold" not in page and "<i>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_every_status_renders(mixed_run: RunResult) -> None:
    page = html(mixed_run)
    for status in ("PASS", "FAIL", "ERR", "SKIP"):
        assert f'data-status="{status}' in page
    assert "skip: true" in page
    assert "withheld" in page


def test_the_verdict_box_says_why(ab_run: RunResult) -> None:
    page = html(ab_run)
    box = page[page.index('<div id="verdict-box"') : page.index("</div>")]
    assert 'class="verdict-box box-tone-fail"' in box
    assert "hard ship gate &#x27;careful wins every gated case by 5 points or more&#x27;" in box
    assert "6 passed, 0 failed" in box


def test_an_ab_suite_has_its_section_with_cases_gates_judge_and_verdict(ab_run: RunResult) -> None:
    page = html(ab_run)
    (suite,) = ab_run.suites
    start = page.index('<section class="ab-suite"')
    section = page[start : page.index("</section>", start)]
    cases = re.findall(r'<tr class="case case-\w+">(.*?)</tr>', section)
    assert [re.sub(r"<[^>]+>", "", c.split("</td>")[0]) for c in cases] == ["loud-flag", "config-comments", "docstring"]
    loud = next(case for case in suite.cases if case.name == "loud-flag")
    assert loud.margin is not None and f'<td class="num">+{loud.margin:g}</td>' in cases[0]
    assert "DISQUALIFIED" in cases[1] and "[-3, 3]" in cases[2]
    gates = re.findall(r'<tr class="gate (hard|soft) gate-(\w+)">', section)
    assert gates == [("hard", "pass"), ("hard", "fail"), ("soft", "pass")]
    assert "Known limits" in section and "docstring [-3, 3]" in section
    assert '<span class="badge tone-fail">SHIP-GATE VERDICT: FAIL</span>' in section
    assert "disqualifier: silent catch (an error swallowed) at config.py:12" in section
    rationale = next(j.rationale for c in suite.cases for j in c.judgments if c.name == "config-comments")
    assert rationale and f'<span class="rationale">{escape(rationale)}</span>' in section


def test_a_regression_against_the_saved_run_is_marked_on_plots_and_tables(matrix_run: RunResult) -> None:
    flaky = next(r for r in matrix_run.rows if r.name == "API flaky")
    better = {**flaky.metrics, "duration_ms": replace(flaky.metrics["duration_ms"], value=1.0, values=(1.0,) * 5)}
    old_rows = tuple(replace(r, metrics=better) if r.name == "API flaky" else r for r in matrix_run.rows)
    saved = replace(matrix_run, fixtures=(replace(matrix_run.fixtures[0], rows=old_rows),))
    page = html(replace(matrix_run, comparison=compare(saved, matrix_run, 0.0, "shipped")))
    assert page.count('<line class="saved regressed"') == 1  # the flaky row's duration lane
    assert page.count('<line class="saved"') == 3 * 4 - 1
    assert "! API flaky</text>" in page
    assert '<tr class="regressed"><td>API flaky</td>' in page
    assert "✗ regressed vs shipped" in page
    assert re.search(r'class="row regressed" id="line-\d+" data-row="API flaky"', page)
    assert "duration_ms regressed vs shipped" in page


def test_suite_text_is_escaped(ab_run: RunResult) -> None:
    (suite,) = ab_run.suites
    evil = "<img src=x onerror=alert(1)>"
    case = replace(suite.cases[0], name=evil, error=evil)
    judged = [replace(j, rationale=evil) for j in case.judgments]
    gate = replace(suite.gates[0], name=evil, cel=evil)
    hostile = replace(suite, file=evil, cases=(replace(case, judgments=tuple(judged)),), gates=(gate,))
    page = html(replace(ab_run, suites=(hostile,)))
    assert "<img" not in page
    assert page.count("&lt;img src=x onerror=alert(1)&gt;") >= 5  # file, case, error, rationale, gate, CEL
