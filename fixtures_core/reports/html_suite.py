"""The A/B section of the HTML report: per suite, the cases (arms' scores, margin, winner,
disqualifications and findings, the judge's rationale), the gates with their severity and the
cases' known limits, and the SHIP-GATE VERDICT, from the same lines as the terminal's report."""

from __future__ import annotations

from html import escape

from fixtures_core.analysis.shipgate import CaseOutcome, GateResult, SuiteOutcome
from fixtures_core.reports import shipgate
from fixtures_core.reports.html_parts import Html, badge, tr

_GATE_STATUS = {"pass": "PASS", "fail": "FAIL", "error": "ERR", "not_evaluated": "SKIP"}


def ab_sections(suites: tuple[SuiteOutcome, ...]) -> str:
    """Every suite's section ('' for a run without A/B suites)."""
    return "\n".join(_suite(suite, index) for index, suite in enumerate(suites))


def _suite(suite: SuiteOutcome, index: int) -> str:
    shown = shipgate.verdict_text(suite)
    colour = suite.verdict if not suite.dry_run else "SKIP"
    parts = [
        f'<h2 id="ab-{index}" class="ab">A/B suite <code>{escape(suite.file)}</code></h2>',
        f'<p class="muted">{escape(shipgate.judge_line(suite))}</p>',
        _cases_table(suite),
    ]
    if not suite.dry_run:
        parts.append(
            '<ul class="ab-summary">' + "".join(f"<li>{escape(x)}</li>" for x in shipgate.summary_lines(suite))
        )
        parts[-1] += "</ul>"
    parts.append(_gates_table(suite.gates, suite.cases))
    problems = shipgate.problem_lines(suite)
    if problems:
        parts.append('<ul class="ab-problems">' + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul>")
    parts.append(f'<p class="ship-gate-verdict">{badge(colour, shown)}</p>')
    parts += [_case_details(case, suite) for case in suite.cases]
    return f'<section class="ab-suite" data-verdict="{suite.verdict}">' + "\n".join(parts) + "</section>"


def _cases_table(suite: SuiteOutcome) -> str:
    head = tr(["case", *suite.arms, "margin", "winner", "known limit", "verdict"], header=True)
    lines = []
    for case in suite.cases:
        arms = [_arm_cell(case, arm, suite.dry_run) for arm in suite.arms]
        limit = "-" if case.known_limit is None else f"[{case.known_limit[0]:g}, {case.known_limit[1]:g}]"
        cells = [case.name, *arms, shipgate.points(case.margin, sign=True), case.winner or "-", limit, case.verdict]
        lines.append(tr(cells, numeric=set(range(1, len(suite.arms) + 2)), css=f"case case-{case.status}"))
    return '<table class="ab-cases">' + head + "".join(lines) + "</table>"


def _arm_cell(case: CaseOutcome, arm: str, dry_run: bool) -> str:
    outcome = case.arms.get(arm)
    shown = shipgate.arm_cell(case, arm, dry_run, mark=False)  # the badge says it
    if outcome is None or not outcome.disqualified:
        return shown
    return Html(f'{escape(shown)} <span class="badge FAIL" title="loses the case">DISQUALIFIED</span>')


def _gates_table(gates: tuple[GateResult, ...], cases: tuple[CaseOutcome, ...]) -> str:
    if not gates:
        return '<p class="muted">No ship gates.</p>'
    head = tr(["gate", "severity", "outcome", "CEL"], header=True)
    lines = [
        tr(
            [
                gate.name,
                gate.severity,
                badge(_GATE_STATUS[gate.status], shipgate.gate_outcome(gate)),
                Html(f"<code>{escape(gate.cel)}</code>"),
            ],
            css=f"gate {gate.severity} gate-{gate.status}",
        )
        for gate in gates
    ]
    limits = [case for case in cases if case.known_limit is not None]
    note = ""
    if limits:
        named = ", ".join(f"{c.name} [{c.known_limit[0]:g}, {c.known_limit[1]:g}]" for c in limits if c.known_limit)
        note = (
            f'<p class="muted known-limits">Known limits (cases whose margin must stay in a range, '
            f"whatever the gates say of winners): {escape(named)}</p>"
        )
    return '<h3>Gates</h3><table class="gates">' + head + "".join(lines) + "</table>" + note


def _case_details(case: CaseOutcome, suite: SuiteOutcome) -> str:
    opened = " open" if case.status != "PASS" or any(o.disqualified for o in case.arms.values()) else ""
    summary = (
        f"<summary>{escape(case.name)} {badge(case.status)} <span class='muted'>margin "
        f"{escape(shipgate.points(case.margin, sign=True))}, winner {escape(case.winner or '-')}</span></summary>"
    )
    body = []
    if case.error:
        body.append(f'<p class="gating">{escape(case.error)}</p>')
    for arm in suite.arms:
        outcome = case.arms.get(arm)
        if outcome is None:
            continue
        axes = ", ".join(f"{axis} {shipgate.points(value)}" for axis, value in outcome.axes.items())
        verdict = " — disqualified: loses the case" if outcome.disqualified else ""
        body.append(
            f'<p class="arm"><b>{escape(arm)}</b>: {escape(shipgate.points(outcome.score))} points'
            f"{' (' + escape(axes) + ')' if axes else ''}{escape(verdict)}</p>"
        )
        if outcome.findings:
            body.append("<ul class='findings'>" + "".join(f"<li>{escape(f)}</li>" for f in outcome.findings) + "</ul>")
    for judgment in case.judgments:
        labels = ", ".join(f"{label} = {arm}" for label, arm in sorted(judgment.labels.items()))
        said = judgment.rationale or judgment.error or "(no rationale given)"
        body.append(
            f'<p class="judgment">Judge on sample {judgment.sample} ({escape(labels)}): winner '
            f"{escape(judgment.winner or '-')}{' (the two orders disagreed)' if judgment.disagreement else ''}. "
            f'<span class="rationale">{escape(said)}</span></p>'
        )
    return f'<details class="case-detail"{opened}>{summary}' + "".join(body) + "</details>"
