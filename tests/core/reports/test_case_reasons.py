"""Why an A/B case that broke a gate went as it did, inline on the ship decision: the failing verification
command and the end of what it printed, a disqualification, the judge's reason."""

from __future__ import annotations

from dataclasses import replace

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe
from fixtures_core.reports.html import html
from fixtures_core.results import RowResult
from fixtures_core.suite import VerifyResult


def test_the_cases_that_broke_a_gate_say_why_on_the_ship_decision(ab_run: RunResult) -> None:
    suite = ab_run.suites[0]
    cases = {case.name: case for case in suite.cases}
    loud = describe.case_reasons(cases["loud-flag"], suite, ab_run)
    assert "hasty: verify `python3 cli.py hello --loud` failed (missing_contains)" in loud
    assert any(line.startswith("judge (sample 0, winner careful): ") for line in loud)
    config = describe.case_reasons(cases["config-comments"], suite, ab_run)
    assert any(line.startswith("hasty: disqualified: ") for line in config)
    page = html(ab_run)
    decision = page[page.index('id="ship-0"') : page.index('<table class="decision">')]
    assert '<li data-case="loud-flag"><b>loud-flag</b>: hasty: verify `python3 cli.py hello --loud`' in decision
    assert 'data-case="docstring"' not in decision  # it broke no gate


def test_a_failing_verification_shows_the_end_of_what_it_printed(ab_run: RunResult) -> None:
    suite = ab_run.suites[0]
    case = next(case for case in suite.cases if case.name == "loud-flag")
    printed = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "t.py", line 1',
            "    assert calc.mul(5, 3) == 15",
            "AssertionError: 8",
        ]
    )
    failing = VerifyResult("python3 -c 'assert calc.mul(5, 3) == 15'", 1, False, printed, reason="exit")

    def broken(row: RowResult) -> RowResult:
        if row.name != "loud-flag/hasty":
            return row
        samples = tuple(
            replace(s, attempt=replace(s.attempt, verify=(failing,))) if s.attempt else s for s in row.samples
        )
        return replace(row, samples=samples)

    fixtures = tuple(replace(f, rows=tuple(broken(r) for r in f.rows)) for f in ab_run.fixtures)
    reasons = describe.case_reasons(case, suite, replace(ab_run, fixtures=fixtures))
    assert (
        "hasty: verify `python3 -c 'assert calc.mul(5, 3) == 15'` failed (exit 1): "
        "assert calc.mul(5, 3) == 15 / AssertionError: 8"
    ) in reasons
