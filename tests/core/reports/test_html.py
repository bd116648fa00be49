"""The HTML report: one self-contained page with the verdict, rows, plots, suite figures and drill-down."""

from __future__ import annotations

import re
from dataclasses import replace

from fixtures_core.analysis.baseline import compare
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.html import html


def test_the_page_is_self_contained(matrix_run: RunResult) -> None:
    page = html(matrix_run)
    assert "<script" not in page and "<link" not in page and "@import" not in page and "url(" not in page
    # The only URLs are SVG namespace names, which browsers never fetch.
    assert set(re.findall(r"https?://[^\"' )]+", page)) == {"http://www.w3.org/2000/svg"}
    assert re.findall(r'\b(?:src|href)="(?!#)', page) == []  # links stay inside the page


def test_the_page_has_the_verdict_rows_plots_suite_and_samples(matrix_run: RunResult) -> None:
    page = html(matrix_run)
    assert '<span id="verdict" class="badge verdict FAIL">FAIL</span>' in page
    assert page.count('<tr class="row"') == 4
    assert page.count('<svg class="plot"') == 3  # reasoning_tokens, duration_ms, cost_usd
    assert page.count('<circle class="sample"') == 60  # 20 samples x 3 metrics
    assert '<span class="flaky"' in page  # API flaky
    assert page.count('<tr class="group">') == 1 + 4  # all rows, then one per selector (--group-by)
    assert page.count('<details class="row-detail"') == 4
    assert page.count(" open><summary>") == 3  # failing rows open
    assert "CEL assertion false on sample 3 of 5" in page
    assert "threshold 120,000 ms is beyond the axis" in page


def test_a_comparison_with_a_saved_run_is_shown(matrix_run: RunResult) -> None:
    compared = replace(matrix_run, comparison=compare(matrix_run, matrix_run, 0.0, "shipped"))
    page = html(compared)
    assert '<h2 id="comparison">Comparison with shipped</h2>' in page
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
        assert f'data-status="{status}"' in page
    assert "skip: true" in page
    assert "withheld" in page
