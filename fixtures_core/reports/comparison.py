"""The comparison with a baseline as every report shows it: lines of words and figures.

``comparison_lines`` turns an ``analysis.baseline.Comparison`` into the lines
a reader sees (the figures table, rows still failing, changed, added and
removed rows, warnings, the verdict), with every number already formatted;
``text_lines`` lays them out as plain text (the terminal report and the
Markdown report, fenced), ``reports.html`` as tables. One wording, one set of
number formats, whatever the medium. No significance test is shown, as none
is computed (seeds 01 and 04 rule them out of v1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fixtures_core.analysis.baseline import Comparison, RunFacts

__all__ = [
    "ComparisonLines",
    "FigureLine",
    "Mark",
    "RowLine",
    "baseline_facts",
    "baseline_named",
    "comparison_lines",
    "regressions",
    "still_failing_text",
    "text_lines",
]

# regressed: a gating line that regressed ("!"); held: a gating line that held;
# informational: a line that can never gate ("·").
Mark = Literal["regressed", "held", "informational"]

_TEXT_MARK: dict[Mark, str] = {"regressed": "! ", "held": "  ", "informational": "· "}
_ABSENT = "(absent)"


@dataclass(frozen=True)
class FigureLine:
    """A suite rate or a row's metric, baseline against current, formatted."""

    mark: Mark
    name: str
    baseline: str
    current: str
    delta: str
    note: str
    moved: bool = True  # it regressed, or its change shows as more than zero (+0.0%, +0.000 are unchanged)


@dataclass(frozen=True)
class RowLine:
    """A row whose status changed, or that was added (before ``(absent)``) or removed (after ``(absent)``)."""

    mark: Mark
    row: str  # the row's name, or ``file::name`` when two changed rows share a name
    before: str
    after: str


@dataclass(frozen=True)
class ComparisonLines:
    """Everything a report says about a comparison, in reading order.

    error: set, with nothing else but the tolerance, when no comparison could be made.
    """

    tolerance: str  # the allowed drop of suite rates, formatted
    error: str | None
    figures: tuple[FigureLine, ...]
    still_failing: tuple[str, ...]  # names of rows that failed in the baseline and still fail (never gating)
    rows: tuple[RowLine, ...]
    warnings: tuple[str, ...]
    verdict: str | None


def comparison_lines(comparison: Comparison) -> ComparisonLines:
    """The lines of ``comparison``: rates, then metrics, then rows; gating regressions first within each."""
    tolerance = f"{comparison.tolerance:.3f}"
    if comparison.error is not None:
        return ComparisonLines(tolerance, comparison.error, (), (), (), (), None)
    figures = [
        FigureLine(
            _mark(rate.gating, rate.regressed),
            rate.name,
            _number(rate.baseline, ".3f"),
            _number(rate.current, ".3f"),
            _number(rate.delta, "+.3f"),
            rate.note or "",
            rate.regressed or (rate.delta is not None and round(abs(rate.delta), 3) > 0),
        )
        for rate in comparison.rates
    ]
    figures += [
        FigureLine(
            _mark(metric.gating, metric.regressed),
            f"{metric.row}: {metric.name} ({metric.unit})",
            _number(metric.baseline, ".4g"),
            _number(metric.current, ".4g"),
            _number(metric.delta_percent, "+.1f", "%"),
            metric.note or "",
            metric.regressed or (metric.delta_percent is not None and round(abs(metric.delta_percent), 1) > 0),
        )
        for metric in comparison.metrics
    ]
    names = [change.row for change in comparison.changes]
    rows = tuple(
        RowLine(
            "regressed" if change.gating else "informational",
            change.row if names.count(change.row) == 1 else f"{change.file}::{change.row}",
            change.before or _ABSENT,
            change.after or _ABSENT,
        )
        for change in comparison.changes
    )
    return ComparisonLines(
        tolerance=tolerance,
        error=None,
        figures=tuple(figures),
        still_failing=tuple(row_id.split("::", 1)[-1] for row_id in comparison.still_failing),
        rows=rows,
        warnings=comparison.warnings,
        verdict="Regression against baseline" if comparison.regressed else "No regression against baseline",
    )


def baseline_named(comparison: Comparison, name: object = None) -> str:
    """The baseline as reports name it: the name it was given (``--baseline base``; else its file) and
    its run's id, ``base (run ID)``."""
    shown = name if isinstance(name, str) and name else comparison.baseline
    if comparison.baseline_run is None or shown == comparison.baseline_run:
        return shown
    return f"{shown} (run {comparison.baseline_run})"


def baseline_facts(facts: RunFacts) -> str:
    """A saved run for people: ``run ID, label 'v1', started 2026-12-01T02:00:00Z, commit 0123456789ab``."""
    told = [f"run {facts.run_id}"]
    if facts.label:
        told.append(f"label {facts.label!r}")
    told.append(f"started {facts.started_at}")
    if facts.commit:
        told.append(f"commit {facts.commit[:12]}")
    return ", ".join(told)


def regressions(found: ComparisonLines) -> list[str]:
    """What regressed, with its numbers: ``API high: duration_ms (ms) 3012 -> 4521 (+50.1%)``,
    ``suite pass rate 0.750 -> 0.500 (-0.250)``, ``API low PASS -> FAIL``."""
    told = [f"{f.name} {f.baseline} -> {f.current} ({f.delta})" for f in found.figures if f.mark == "regressed"]
    return told + [f"{r.row} {r.before} -> {r.after}" for r in found.rows if r.mark == "regressed"]


def still_failing_text(names: tuple[str, ...]) -> str:
    """The sentence that lists rows failing on both sides."""
    return f"still failing, as in the baseline (not a regression): {', '.join(names)}"


def text_lines(comparison: Comparison) -> list[str]:
    """Plain text lines: the figures table, rows still failing, changed rows, warnings and the verdict.

    ``!`` marks a gating line that regressed, ``·`` an informational line
    (one that cannot gate), two spaces a gating line that held.
    """
    found = comparison_lines(comparison)
    lines = [f"Baseline comparison (tolerance {found.tolerance})"]
    if comparison.baseline_facts is not None:
        lines.append(f"baseline: {baseline_facts(comparison.baseline_facts)}")
    if found.error is not None:
        return [*lines, f"Comparison failed: {found.error}"]
    header = FigureLine("held", "METRIC", "BASELINE", "CURRENT", "DELTA", "")
    lines += _table([header, *found.figures])
    if found.still_failing:
        lines += ["", _TEXT_MARK["informational"] + still_failing_text(found.still_failing)]
    if found.rows:
        lines += ["", "Changed rows"]
        for row in found.rows:
            lines.append(f"{_TEXT_MARK[row.mark]}{row.row}  {row.before} -> {row.after}")
    if found.warnings:
        lines += ["", *(f"warning: {warning}" for warning in found.warnings)]
    if found.verdict is not None:
        lines += ["", found.verdict]
    return lines


def _mark(gating: bool, regressed: bool) -> Mark:
    if regressed:
        return "regressed"
    return "held" if gating else "informational"


def _number(value: float | None, spec: str, suffix: str = "", empty: str = "-") -> str:
    return empty if value is None else f"{value:{spec}}{suffix}"


def _table(lines: list[FigureLine]) -> list[str]:
    """Left-aligned names, right-aligned numbers, notes last in parentheses."""
    columns = [[line.name, line.baseline, line.current, line.delta] for line in lines]
    widths = [max(len(cells[i]) for cells in columns) for i in range(4)]
    text = []
    for line, cells in zip(lines, columns, strict=True):
        padded = [cells[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)
        ]
        note = f"  ({line.note})" if line.note else ""
        text.append((_TEXT_MARK[line.mark] + "  ".join(padded) + note).rstrip())
    return text
