"""The Markdown report says what the terminal report says, laid out as Markdown."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.reports import markdown, terminal
from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.runs.close import complete
from fixtures_core.runs.options import RunOptions
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder
from fixtures_core.spec import RowSpec

FIXTURE = """---
repeat: 4
metrics:
  - name: ms
    extract: json.ms
    unit: ms
    aggregate: median
    direction: lower
    baseline: base
    threshold: {regressionPercent: 25}
---

| Name | Command | CEL |
|---|---|---|
| base | `true` | `json.ok \\|\\| json.retry` |
| slower | `true` | `json.ok \\|\\| json.retry` |
| wobbly | `true` | `json.ok \\|\\| json.retry` |
"""

# (passed?, ms) per sample of each row: base passes at 100 ms; slower passes at 150 ms
# (+50% against base: a regression); wobbly passes 3 of 4 samples (flaky).
SAMPLES = {
    "base": [(True, 100)] * 4,
    "slower": [(True, 150)] * 4,
    "wobbly": [(True, 100), (False, 100), (True, 100), (True, 100)],
}


def fake_sample(row: RowSpec, index: int, deadline: float, scope: Containment) -> SampleResult:
    passed, ms = SAMPLES[row.name][index]
    return SampleResult(
        index=index,
        status="PASS" if passed else "FAIL",
        duration_ms=12.0,
        exit_code=0,
        stdout=f'{{"ok": {str(passed).lower()}, "ms": {ms}}}\nsecond line\n',
        stderr="" if passed else "provider said: try again\n",
        command=Check("pass"),
        assertions=Check("pass" if passed else "fail", expression=row.expect.cel),
        metrics={"ms": MetricValue("pass", float(ms))},
    )


@pytest.fixture
def run(tmp_path: Path, containment: Containment) -> RunResult:
    fixture = tmp_path / "suite.md"
    fixture.write_text(FIXTURE)
    options = RunOptions(paths=(str(fixture),), out=str(tmp_path / "state"), k=2)
    matrix = plan(options).matrix
    recorder = Recorder(Store(tmp_path / "state"), "run-1", matrix)
    settings = RunSettings(run_id="run-1")
    rows = [run_row(row, settings, containment, sample_runner=fake_sample) for row in matrix.rows]
    return complete(recorder, options, rows)


def terminal_text(run: RunResult) -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    terminal.render(run, console)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_markdown_carries_the_verdict_tables_reasons_and_document(run: RunResult) -> None:
    text = markdown.render(run, "state/runs/run-1/run.json")
    assert text.startswith("# assay run `run-1`: **FAIL**\n")
    # rows table: the flaky label, samples passed, pass@2 and pass^2 (wobbly, n=4, c=3:
    # pass@2 = 1 - C(1,2)/C(4,2) = 1; pass^2 = C(3,2)/C(4,2) = 3/6 = 0.5)
    assert "| wobbly | **FAIL (flaky)** | 3/4 | 12 ms | 1 | 0.5 |" in text
    assert "| base | PASS | 4/4 | 12 ms | 1 | 1 |" in text
    # metrics table with the baseline row's value and the signed regression (150 vs 100: +50%)
    mark = "✗ +50.0% vs 'base' exceeds the allowed 25%"
    assert f"| slower | ms (median) | 150 ms | 100 (base) | +50.0% | {mark} |" in text
    # why each row failed, where it is, the CEL (its || escaped nowhere outside tables), the excerpt
    assert "### FAIL slower (`" in text and "suite.md:16`)" in text
    assert "- CEL: `json.ok || json.retry`" in text
    assert "- failing samples: 1" in text
    assert "stderr of sample 1:\n\n```\nprovider said: try again\n```" in text
    assert "- suite: pass@2 1 (rows 3/3), pass^2 0.833 (rows 2/3)" in text  # (1 + 1 + 0.5) / 3
    assert "**FAIL** 1 passed, 2 failed, 0 errored, 0 skipped; 12 samples" in text
    assert text.rstrip().endswith("Run document: `state/runs/run-1/run.json`")


def test_markdown_and_terminal_give_the_same_reasons(run: RunResult) -> None:
    text, shown = markdown.render(run), terminal_text(run)
    for line in ("metric ms: +50.0% vs 'base' exceeds the allowed 25%", "failing samples: 1", "FAIL (flaky)",
                 "pass@2 1 (rows 3/3)", "1 passed, 2 failed, 0 errored, 0 skipped; 12 samples"):  # fmt: skip
        assert line in shown, line
        assert line in text.replace("\\_", "_"), line


def test_the_answer_comes_first_and_the_details_are_collapsed(run: RunResult) -> None:
    text = markdown.render(run)
    answer, details = text.split("<details>", 1)
    assert answer.splitlines()[2].startswith("Verdict: FAIL · exit 1 — 2 rows failed: 'slower', 'wobbly'")
    failing = [line for line in answer.splitlines() if line.startswith("- **")]
    assert [line.split(" (`")[0] for line in failing] == ["- **FAIL** slower", "- **FAIL (flaky)** wobbly"]
    assert "exceeds the allowed 25%" in failing[0] and "suite.md:16`)" in failing[0]
    assert "| row |" not in answer and "### FAIL" not in answer  # the tables and reasons are folded
    summaries = [line for line in text.splitlines() if line.startswith("<details><summary>")]
    assert summaries == [
        "<details><summary>Rows (3)</summary>",
        "<details><summary>Metrics</summary>",
        "<details><summary>Why rows failed (2)</summary>",
        "<details><summary>Suite figures</summary>",
    ]
    assert text.count("<details>") == text.count("</details>") == 4
    assert "| base | PASS | 4/4 |" in details


def test_a_failed_ship_gate_is_in_the_answer(ab_run: RunResult) -> None:
    answer = markdown.render(ab_run).split("<details>", 1)[0]
    assert (
        "- A/B suite `" in answer
        and "**SHIP-GATE VERDICT: FAIL** (hard gate 'careful wins every gated case by 5 points or more': FAILED: "
        "broken by loud-flag (margin was 16), config-comments (margin was 20))"
        in answer  # docstring is a known limit the gate leaves out; each case with what the gate saw of it
    )


def test_since_the_previous_run_and_the_baseline_lead_the_summary(matrix_run: RunResult, tmp_path: Path) -> None:
    from dataclasses import replace

    from fixtures_core.analysis.baseline import compare
    from fixtures_core.analysis.trends import since_previous
    from fixtures_core.reports.html import Context, html

    # The night before, 'CLI high' passed and 'API low' failed too; today it fails and 'API low' still does.
    rows = {row.name: row for row in matrix_run.rows}
    before = replace(
        matrix_run,
        run_id="20261201T020000.000000Z-abc1234-main",
        label="nightly",
        fixtures=(replace(matrix_run.fixtures[0], rows=(rows["API high"], replace(rows["CLI high"], status="PASS"),
                                                       rows["API low"], rows["API flaky"])),),
    )  # fmt: skip
    since = since_previous(before, matrix_run)
    compared = replace(matrix_run, comparison=compare(before, matrix_run, 0.0, "state/baselines/shipped.json"))

    text = markdown.render(compared, since=since)
    answer = text.split("<details>", 1)[0]
    assert (
        "**since the previous run: 1 new failure, 0 fixed, 2 still failing, cost +0% (0.6992 -\\> 0.6992 usd)**"
        in answer
    )
    assert "- new failures: 'CLI high'" in answer
    assert "- previous run: 20261201T020000.000000Z-abc1234-main (label 'nightly', started " in answer
    assert f"- baseline state/baselines/shipped.json: run {before.run_id}, label 'nightly', started " in answer
    assert "- cost: " in answer and "usd (cost\\_usd over 20 samples)" in answer  # Markdown-escaped
    # the regression with its numbers, never a bare name
    assert "Regression against baseline (state/baselines/shipped.json (run 20261201" in answer
    assert "pass rate 0.500 -\\> 0.250 (-0.250), CLI high PASS -\\> FAIL" in answer

    page = html(compared, Context(since=since))
    assert '<div id="since" class="since"><p><b>since the previous run: 1 new failure, 0 fixed' in page
    assert f"baseline state/baselines/shipped.json: run {before.run_id}, label &#x27;nightly&#x27;" in page
