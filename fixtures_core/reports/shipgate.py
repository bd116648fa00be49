"""The ship-gate report of an A/B suite: the table of cases, suite averages, gates, the verdict.

The same lines go to the terminal and, as Markdown, to ``report.md`` under the run.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from fixtures_core.analysis.shipgate import CaseOutcome, SuiteOutcome
from fixtures_core.reports import status_words
from fixtures_core.reports.comparison import baseline_facts
from fixtures_core.reports.markdown_text import code, escape, table_row
from fixtures_core.text import visible
from fixtures_core.verdicts.gates import GateResult

_WARN = status_words.Look("", "warn").style
_ERR = status_words.status("ERR").style


def points(value: float | None, sign: bool = False) -> str:
    """A score or margin as people read it: ``95``, ``89.5``, ``+7``, ``-1.5``; ``-`` when absent."""
    if value is None:
        return "-"
    text = f"{value:+.1f}" if sign else f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def judge_line(suite: SuiteOutcome) -> str:
    """Who judged, how blind, and what the judge said it was."""
    if suite.dry_run:
        return "Dry run: workspaces prepared, setup and verification ran; no arm ran, nothing was judged."
    judge = suite.judge
    if judge is None:
        return "Judge: none (no scores, no margins)"
    how = f"blind (seed {judge.seed})" if judge.blind else f"not blind (seed {judge.seed})"
    if judge.swap:
        how += ", both orders"
    command = judge.command[2] if judge.command[:2] == ("bash", "-c") else shlex.join(judge.command)
    line = f"Judge: {command}; {how}" + ("; devlyn's judge protocol" if judge.protocol == "devlyn" else "")
    if judge.provenance:
        line += f"; provenance: {', '.join(judge.provenance)}"
    return line


def case_table(suite: SuiteOutcome) -> list[list[str]]:
    """Header and one line per case: Fixture, one column per arm, Margin, Verdict."""
    rows = [["Fixture", *suite.arms, "Margin", "Verdict"]]
    for case in suite.cases:
        cells = [arm_cell(case, arm, suite.dry_run) for arm in suite.arms]
        rows.append([case.name, *cells, points(case.margin, sign=True), case.verdict])
    return rows


def arm_cell(case: CaseOutcome, arm: str, dry_run: bool, mark: bool = True) -> str:
    """An arm's score (``DQ`` after it when disqualified, unless ``mark`` is off); in a dry run, the share
    of verification commands that passed before any change."""
    outcome = case.arms.get(arm)
    if outcome is None:
        return "-"
    if dry_run:
        return "-" if outcome.verify_score is None else f"verify {outcome.verify_score:.0%}"
    return points(outcome.score) + (" DQ" if outcome.disqualified and mark else "")


def summary_lines(suite: SuiteOutcome) -> list[str]:
    """Suite averages, hard-floor violations, regression vs the saved run (``shipped`` unless the run named
    another): one ``label: value`` per line."""
    pairs = [(f"Suite average {arm} score:", points(suite.averages.get(arm))) for arm in suite.arms]
    if suite.compare is not None:
        pairs.append(("Suite average margin:", points(suite.margin, sign=True)))
    # devlyn's figure under devlyn's name (compile-report.py: cases whose first arm was disqualified); assay's own
    # count of failed hard gates under its own
    pairs.append(("Hard-floor violations:", str(suite.hard_floor_violations)))
    pairs.append(("Failed hard gates:", str(suite.failed_hard_gates)))
    pairs.append((f"Regression vs {suite.baseline or 'shipped'}:", regression_text(suite)))  # its own name and id
    if suite.baseline_facts is not None:
        told = "Compared with:" if suite.incomparable is None else "Not compared with:"
        pairs.append((told, baseline_facts(suite.baseline_facts)))
    width = max(len(label) for label, _value in pairs)
    return [f"{label.ljust(width)} {value}" for label, value in pairs]


def regression_text(suite: SuiteOutcome) -> str:
    """The margin against the saved run's, and the case that lost most; ``n/a (first run)`` without one."""
    if suite.baseline is None:
        return "n/a (first run)"
    if suite.incomparable is not None:
        return f"not compared: not comparable ({suite.incomparable})"
    if suite.margin is None or suite.baseline_margin is None:
        return f"n/a (no margin to compare with {suite.baseline})"
    text = f"suite margin {points(suite.margin, sign=True)} vs {points(suite.baseline_margin, sign=True)} "
    text += f"({points(suite.margin - suite.baseline_margin, sign=True)})"
    drops = [
        (case.margin - case.baseline_margin, case.name, case.baseline_margin, case.margin)
        for case in suite.cases
        if case.margin is not None and case.baseline_margin is not None
    ]
    if drops and min(drops)[0] < 0:
        worst_drop, name, then, now = min(drops)
        text += (
            f"; largest drop: {name} margin {points(then, sign=True)} -> {points(now, sign=True)} "
            f"({points(worst_drop, sign=True)})"
        )
    return text


def gate_lines(gates: Sequence[GateResult]) -> list[str]:
    """One line per gate: its answer, severity and name, then what decided it (the cases that broke it with
    their values, why it was not evaluated, the disqualified arms it read)."""
    lines = []
    for gate in gates:
        word, _colon, details = status_words.gate_text(gate).partition(": ")
        lines.append(f"  {word:<6} {gate.severity:<4} {gate.name}" + (f": {details}" if details else ""))
    return lines


def problem_lines(suite: SuiteOutcome) -> list[str]:
    """Errors of cases, disqualified arms, then warnings."""
    lines = [f"ERR {case.name}: {case.error}" for case in suite.cases if case.status == "ERR" and case.error]
    lines += [
        f"DISQUALIFIED {case.name}/{arm}: loses the case ({'; '.join(outcome.disqualified_by) or 'the judge'})"
        for case in suite.cases
        for arm, outcome in case.arms.items()
        if outcome.disqualified and not suite.dry_run  # a dry run judges nothing
    ]
    lines += [f"WARNING: {warning}" for warning in suite.warnings]
    failed = [
        o.row
        for case in suite.cases
        if case.status != "ERR"
        for o in case.arms.values()
        if o.status == "FAIL" and not o.disqualified
    ]
    if failed:
        lines.append(
            f"Arm rows that failed their own checks (evidence for the gates, not the verdict): {', '.join(failed)}"
        )
    return lines


def text_lines(suite: SuiteOutcome) -> list[str]:
    """The whole plain-text ship-gate report of one suite (without its verdict line)."""
    lines = [f"A/B suite {suite.file}", judge_line(suite)]
    if suite.arm_models:
        lines.append("Arms: " + "; ".join(f"{arm}: {model}" for arm, model in suite.arm_models.items()))
    lines.append("")
    table = _aligned(case_table(suite))
    lines += [*table, "-" * max(len(line) for line in table)]
    if suite.dry_run:
        lines.append("Dry run: nothing was scored; gates were not evaluated.")
    else:
        lines += summary_lines(suite)
    if suite.gates:
        lines += ["Gates:", *gate_lines(suite.gates)]
    return lines + problem_lines(suite)


def verdict_text(suite: SuiteOutcome) -> str:
    """``SHIP-GATE VERDICT: PASS``; a dry run's says ``DRY RUN`` (nothing was scored), ``DRY RUN ERR`` when it erred."""
    return f"SHIP-GATE VERDICT: {status_words.suite(suite).word}"


def render(suite: SuiteOutcome, console: Console) -> None:
    """Print one suite's ship-gate report."""
    console.print()
    for line in text_lines(suite):
        style = _WARN if line.startswith("WARNING") else _ERR if line.startswith("ERR ") else ""
        console.print(Text(visible(line), style=style), soft_wrap=True)
    console.print(Text(verdict_text(suite), style=status_words.suite(suite).style + " bold"))


def _aligned(rows: list[list[str]]) -> list[str]:
    """The first column left-aligned, numbers right-aligned, the verdict left-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0])]
        cells += [cell.rjust(width) for cell, width in zip(row[1:-1], widths[1:-1], strict=True)]
        cells.append(row[-1])
        lines.append("  ".join(cells).rstrip())
    return lines


# --- Markdown (report.md, the step summary, the Prefect artifact) ---------------------


def suite_markdown(suite: SuiteOutcome) -> list[str]:
    """One suite's ship-gate report as Markdown lines (``markdown.render`` puts it in every summary)."""
    table = case_table(suite)
    lines = [f"## A/B suite {code(suite.file)}", "", escape(judge_line(suite)), ""]
    if suite.arm_models:
        lines += [escape("Arms: " + "; ".join(f"{arm}: {m}" for arm, m in suite.arm_models.items())), ""]
    lines.append(table_row(*table[0]))
    lines.append("|---|" + "---:|" * (len(table[0]) - 2) + "---|")
    lines += [table_row(*map(escape, row)) for row in table[1:]]
    lines.append("")
    if not suite.dry_run:
        lines += [f"- {escape(line)}" for line in summary_lines(suite)]
        lines.append("")
    if suite.gates:
        lines += ["| gate | severity | outcome |", "|---|---|---|"]
        lines += [table_row(escape(g.name), g.severity, _gate_cell(g)) for g in suite.gates]
        lines.append("")
    problems = problem_lines(suite)
    if problems:
        lines += [f"- {escape(line)}" for line in problems] + [""]
    lines.append(f"**{verdict_text(suite)}**")
    return lines


def _gate_cell(gate: GateResult) -> str:
    return escape(status_words.gate_text(gate))
