"""The A/B parts of the HTML report.

``ship_decisions`` leads the page: per suite the SHIP-GATE VERDICT, each
failed gate with the cases that broke it (and what was seen), and per case
its arms' scores, the margin now, then (the shipped run's) and its change,
the winner and DISQUALIFIED. ``ab_sections`` comes further down with the
rest: the judge, the averages, every gate with its CEL, the known limits, and
per case each arm's axes, findings and evidence (diff, verify results,
transcript) and the judge's input, output and rationale, linked when the page
has links (``reports.evidence_links``).
"""

from __future__ import annotations

from html import escape

from fixtures_core.analysis.shipgate import CaseOutcome, SuiteOutcome
from fixtures_core.judgment import Judgment
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, shipgate, status_words
from fixtures_core.reports.evidence_links import EvidenceLinks
from fixtures_core.reports.html_parts import Html, badge, tr
from fixtures_core.results import RowResult
from fixtures_core.suite import SCORE_METRIC
from fixtures_core.verdicts.gates import Breach, GateResult

_ATTEMPT_FILES = (
    ("diff.patch", "diff"),
    ("verify.json", "verify"),
    ("stdout.txt", "transcript"),
    ("stderr.txt", "stderr"),
    ("input.md", "prompt"),
)
_JUDGE_FILES = (
    ("input.json", "judge input"),
    ("input.txt", "judge input"),
    ("output.txt", "judge output"),
    ("judgment.json", "judgment"),
    ("input-swapped.json", "judge input (swapped)"),
    ("input-swapped.txt", "judge input (swapped)"),
    ("output-swapped.txt", "judge output (swapped)"),
)


# --- links ---------------------------------------------------------------------------------


def evidence_href(links: EvidenceLinks, run_id: str, relative: str) -> str | None:
    """A link to a file named relative to a run's folder (``../OTHER/...`` names another run's)."""
    parts = relative.split("/")
    if len(parts) > 2 and parts[0] == "..":
        return links.href(parts[1], "/".join(parts[2:]))
    return links.href(run_id, relative)


def evidence_run(run: RunResult, row: RowResult) -> str:
    """The run whose folder holds a row's attempts (a re-judged run reads another's)."""
    suite = next((s for s in run.suites if s.file == row.file), None)
    return suite.evidence_run if suite is not None and suite.evidence_run else run.run_id


def attempt_links(links: EvidenceLinks, run_id: str, folder: str) -> list[str]:
    """Links to an attempt's diff, verify results, transcript, stderr and prompt (those that exist)."""
    found = []
    for name, shown in _ATTEMPT_FILES:
        href = evidence_href(links, run_id, f"{folder.rstrip('/')}/{name}")
        if href:
            found.append(f'<a href="{href}">{shown}</a>')
    return found


def _judge_links(links: EvidenceLinks, run_id: str, judgment: Judgment) -> list[str]:
    found = []
    for name, shown in _JUDGE_FILES:
        href = evidence_href(links, run_id, f"{judgment.evidence.rstrip('/')}/{name}") if judgment.evidence else None
        if href:
            found.append(f'<a href="{href}">{shown}</a>')
    return found


# --- the ship decision (first screen) ------------------------------------------------------


def shipped_scores(run: RunResult) -> dict[tuple[str, str, str], tuple[float, bool, str]]:
    """Each arm row's score in the shipped run its suite's gates read: (file, row, ``score``) -> (then,
    whether its case broke a failed gate while the score fell, the shipped run's name)."""
    found: dict[tuple[str, str, str], tuple[float, bool, str]] = {}
    for suite in run.suites:
        if suite.baseline is None:
            continue
        # a drop marks its lane when its case broke a failed gate that reads the shipped scores
        broken = {breach.case for gate in suite.gates if "baseline_score" in gate.cel for breach in gate.breaking}
        for case in suite.cases:
            for outcome in case.arms.values():
                if outcome.baseline_score is None:
                    continue
                fell = outcome.score is not None and outcome.score < outcome.baseline_score
                found[(suite.file, outcome.row, SCORE_METRIC)] = (
                    outcome.baseline_score,
                    fell and case.name in broken,
                    suite.baseline,
                )
    return found


def ship_decisions(run: RunResult, links: EvidenceLinks | None = None) -> str:
    """Every suite's ship decision ('' for a run without A/B suites)."""
    return "\n".join(_decision(suite, index, run) for index, suite in enumerate(run.suites))


def _decision(suite: SuiteOutcome, index: int, run: RunResult | None = None) -> str:
    look = status_words.suite(suite)
    parts = [
        f'<section class="ship box-{look.css}" id="ship-{index}" data-verdict="{suite.verdict}">',
        f'<h2>Ship decision <code>{escape(suite.file)}</code> <span class="ship-gate-verdict">'
        f"{badge(status_words.Look(shipgate.verdict_text(suite), look.tone))}</span></h2>",
        _compared(suite),
        _broken_gates(suite),
        _why_broken(suite, run) if run is not None else "",
        _decision_table(suite),
        "</section>",
    ]
    return "".join(part for part in parts if part)


def _compared(suite: SuiteOutcome) -> str:
    """What the suite was compared with; the verdict box above already names a saved run with its facts."""
    if suite.baseline is None:
        return '<p class="muted">no shipped run to compare with (first run)</p>'
    if suite.baseline_facts is not None:
        return ""
    return f'<p class="muted">compared with {escape(suite.baseline)}</p>'


def _broken_gates(suite: SuiteOutcome) -> str:
    """One line per gate that did not pass: its answer, the cases that broke it with what was seen of each,
    or why it was not evaluated (the words of ``status_words.gate_text``)."""
    if suite.dry_run:
        return '<p class="muted">Dry run: nothing was scored; the gates were not evaluated.</p>'
    unsettled = [gate for gate in suite.gates if gate.status != "pass"]
    hard = [gate for gate in suite.gates if gate.severity == "hard"]
    passed = sum(gate.status == "pass" for gate in hard)
    if not unsettled:
        return f'<p class="gates-held">every gate held ({passed} of {len(hard)} hard gates passed)</p>'
    items = []
    for gate in unsettled:
        told = f"<b>{escape(gate.severity)} gate '{escape(gate.name)}' {badge(status_words.gate(gate))}</b>"
        details = status_words.gate_details(gate, escape, _marked_breach, notes=False)  # the gates table has them
        items.append(f'<li class="gate-{gate.severity} gate-{gate.status}">{told}' + "".join(": " + d for d in details))
    summary = f'<p class="muted">{passed} of {len(hard)} hard gates passed</p>'
    return f'<ul class="broken">{"".join(items)}</ul>{summary}'


def _marked_breach(breach: Breach) -> str:
    return f'<span class="broke" data-case="{escape(breach.case)}">{escape(str(breach))}</span>'


def _decision_table(suite: SuiteOutcome) -> str:
    """Per case: each arm's score (DQ), the margin now, then and its change, the winner, the verdict."""
    compared = suite.baseline is not None
    arms = [f"{arm} now (then)" if compared else arm for arm in suite.arms]
    titles = ["case", *arms, "margin", *(["then", "change"] if compared else []), "winner", "verdict"]
    numeric = set(range(1, len(suite.arms) + (4 if compared else 2)))
    broken = {breach.case for gate in suite.gates for breach in gate.breaking}
    lines = []
    for case in suite.cases:
        arms = [_arm_cell(case, arm, suite.dry_run, compared) for arm in suite.arms]
        margin = [shipgate.points(case.margin, sign=True)]
        if compared:
            change = (
                case.margin - case.baseline_margin
                if case.margin is not None and case.baseline_margin is not None
                else None
            )
            margin += [shipgate.points(case.baseline_margin, sign=True), shipgate.points(change, sign=True)]
        verdict = badge(status_words.case(case, suite))
        name = Html(
            f'<span class="gating" title="broke a gate">! {escape(case.name)}</span>'
            if case.name in broken
            else escape(case.name)
        )
        cells = [name, *arms, *margin, case.winner or "-", verdict]
        lines.append(
            tr(cells, numeric=numeric, css=f"decision case-{case.status}" + (" broke" if case.name in broken else ""))
        )
    return '<table class="decision">' + tr(titles, header=True, numeric=numeric) + "".join(lines) + "</table>"


def _why_broken(suite: SuiteOutcome, run: RunResult) -> str:
    """Why each case that broke a gate went as it did, inline (``describe.case_reasons``): the failing
    verification command and what it printed, a disqualification, the judge's reason."""
    broken = {breach.case for gate in suite.gates for breach in gate.breaking}
    items = []
    for case in suite.cases:  # in the decision table's order
        reasons = describe.case_reasons(case, suite, run) if case.name in broken else []
        if reasons:
            told = " · ".join(escape(reason) for reason in reasons)
            items.append(f'<li data-case="{escape(case.name)}"><b>{escape(case.name)}</b>: {told}</li>')
    if not items:
        return ""
    title = '<p class="muted why-title">why the cases that broke a gate went as they did:</p>'
    return f'{title}<ul class="why-broken">{"".join(items)}</ul>'


# --- the suite's details (further down) ------------------------------------------------------


def ab_sections(run: RunResult, links: EvidenceLinks | None = None) -> str:
    """Every suite's section ('' for a run without A/B suites)."""
    return "\n".join(_suite(run, suite, index, links) for index, suite in enumerate(run.suites))


def _suite(run: RunResult, suite: SuiteOutcome, index: int, links: EvidenceLinks | None) -> str:
    look = status_words.suite(suite)
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
    parts.append(_gates_table(suite))
    problems = shipgate.problem_lines(suite)
    if problems:
        parts.append('<ul class="ab-problems">' + "".join(f"<li>{escape(p)}</li>" for p in problems) + "</ul>")
    shown = badge(status_words.Look(shipgate.verdict_text(suite), look.tone))
    parts.append(f'<p class="ship-gate-verdict">{shown}</p>')
    parts += [_case_details(run, case, suite, links) for case in suite.cases]
    return f'<section class="ab-suite" data-verdict="{suite.verdict}">' + "\n".join(parts) + "</section>"


def _cases_table(suite: SuiteOutcome) -> str:
    head = tr(["case", *suite.arms, "margin", "winner", "known limit", "verdict"], header=True)
    lines = []
    for case in suite.cases:
        arms = [_arm_cell(case, arm, suite.dry_run) for arm in suite.arms]
        limit = "-" if case.known_limit is None else f"[{case.known_limit[0]:g}, {case.known_limit[1]:g}]"
        verdict = badge(status_words.case(case, suite))
        cells = [case.name, *arms, shipgate.points(case.margin, sign=True), case.winner or "-", limit, verdict]
        lines.append(tr(cells, numeric=set(range(1, len(suite.arms) + 2)), css=f"case case-{case.status}"))
    return '<table class="ab-cases">' + head + "".join(lines) + "</table>"


def _arm_cell(case: CaseOutcome, arm: str, dry_run: bool, then: bool = False) -> str:
    """An arm's score (``then``: and the shipped run's, ``80 (90)``), and a DISQUALIFIED badge."""
    outcome = case.arms.get(arm)
    shown = shipgate.arm_cell(case, arm, dry_run, mark=False)  # the badge says it
    if then and outcome is not None and outcome.baseline_score is not None and not dry_run:
        shown += f" ({shipgate.points(outcome.baseline_score)})"
    if outcome is None or not outcome.disqualified:
        return shown
    return Html(f"{escape(shown)} {badge(status_words.arm('disqualified'), 'loses the case')}")


def _gates_table(suite: SuiteOutcome) -> str:
    gates, cases = suite.gates, suite.cases
    if not gates:
        return '<p class="muted">No ship gates.</p>'
    head = tr(["gate", "severity", "outcome", "CEL"], header=True)
    lines = [
        tr(
            [
                gate.name,
                gate.severity,
                _gate_answer(gate),
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


def _gate_answer(gate: GateResult) -> Html:
    """A gate's badge, then what decided it (the cases that broke it, why it was not evaluated)."""
    details = status_words.gate_details(gate, escape, _marked_breach)
    return Html(badge(status_words.gate(gate)) + "".join(f" {d}" for d in details))


def _case_details(run: RunResult, case: CaseOutcome, suite: SuiteOutcome, links: EvidenceLinks | None) -> str:
    look = status_words.case(case, suite)
    opened = " open" if look.tone != "pass" else ""
    summary = (
        f"<summary>{escape(case.name)} {badge(look)} <span class='muted'>margin "
        f"{escape(shipgate.points(case.margin, sign=True))}, winner {escape(case.winner or '-')}</span></summary>"
    )
    rows = {row.name: row for row in run.rows if row.file == suite.file}
    attempts_run = suite.evidence_run or run.run_id
    body = []
    if case.error:
        body.append(f'<p class="gating">{escape(case.error)}</p>')
    for arm in suite.arms:
        outcome = case.arms.get(arm)
        if outcome is None:
            continue
        axes = ", ".join(f"{axis} {shipgate.points(value)}" for axis, value in outcome.axes.items())
        ended = f" {badge(status_words.arm(outcome.result))}" if outcome.result else ""
        why = "; ".join(outcome.disqualified_by) or "the judge"
        verdict = f" — disqualified, loses the case: {why}" if outcome.disqualified else ""
        body.append(
            f'<p class="arm"><b>{escape(arm)}</b>{ended}: {escape(shipgate.points(outcome.score))} points'
            f"{' (' + escape(axes) + ')' if axes else ''}{escape(verdict)}</p>"
        )
        if outcome.findings:
            body.append("<ul class='findings'>" + "".join(f"<li>{escape(f)}</li>" for f in outcome.findings) + "</ul>")
        row = rows.get(outcome.row)
        if links is not None and row is not None:
            for sample in row.samples:
                if sample.attempt is None:
                    continue
                found = attempt_links(links, attempts_run, sample.attempt.evidence)
                if found:
                    body.append(f'<p class="evidence">sample {sample.index}: {"".join(found)}</p>')
    for judgment in case.judgments:
        labels = ", ".join(f"{label} = {arm}" for label, arm in sorted(judgment.labels.items()))
        said = judgment.rationale or judgment.error or "(no rationale given)"
        found = _judge_links(links, run.run_id, judgment) if links is not None else []
        body.append(
            f'<p class="judgment">Judge on sample {judgment.sample} ({escape(labels)}): winner '
            f"{escape(judgment.winner or '-')}{' (the two orders disagreed)' if judgment.disagreement else ''}. "
            f'<span class="rationale">{escape(said)}</span></p>'
            + (f'<p class="evidence">{"".join(found)}</p>' if found else "")
        )
    return f'<details class="case-detail"{opened}>{summary}' + "".join(body) + "</details>"
