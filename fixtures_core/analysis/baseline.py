"""Compare a run with a saved run (the baseline) and say whether it regressed.

The baseline is any run document assay wrote; ``rundoc.load_run`` reads it
and this module only compares two ``RunResult`` values (no I/O). The rules
(DESIGN.md, "Runs, baselines and the CI gate"):

* Rows are matched by fixture file and row name. A row that passed in the
  baseline (``RowResult.passed``, the one definition) and is FAIL or ERR now
  gates **whatever the tolerance**: the tolerance cannot hide a breakage.
  Other status changes, added rows and removed rows are shown and never gate
  on their own.
* Suite rates (pass rate, sample pass rate, pass@k, pass^k) gate when they
  drop by more than the tolerance; a rise never gates. Baseline rates are
  taken over the baseline rows the current run also ran, so a removed,
  filtered-out or newly skipped row neither helps nor hurts; current rates
  are taken over every current row, so **an added failing row lowers them
  and gates**: committing a known-failing row needs a tolerance or a fix.
  SKIP rows are never counted. A rate withheld on either side is shown with
  the reason, never compared as zero.
* A metric gates only when it is ``gate: true`` with a ``direction`` and
  ``threshold.regressionPercent`` or ``threshold.regressionPoints``, and its
  aggregate worsened by more than that percent or that many of its units
  (``metrics.regression_failure``). Other metrics, cost among
  them, are shown as informational. A metric on one side only, a missing
  value, an incomplete aggregate (status ``not_evaluated`` or ``error`` on
  either side) or a zero baseline value is shown with a note, never compared.
* p-values (Mann-Whitney U over per-sample metric values, Fisher's exact
  test over sample pass counts) are information; they never gate.
* The gate fails closed: a baseline without rows, no row in common that ran
  on both sides, or metric gates of the baseline none of which is in the
  current run (all renamed) raise ``BaselineError``. A metric gate missing
  while others remain is skipped with a warning.
* A row that failed in the baseline and still fails is reported
  (``still_failing``), never gating: with a baseline the verdict answers
  "did it regress?" (``RunResult.verdict``).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from fixtures_core.analysis.finalize import Summary
from fixtures_core.analysis.metrics import (
    beyond,
    recorded,
    regression_failure,
    regression_percent,
    regression_points,
)
from fixtures_core.analysis.passk import SuiteFigures, suite_figures
from fixtures_core.errors import BaselineError, UsageError
from fixtures_core.results import MetricSummary, RowResult, Status
from fixtures_core.spec import Threshold
from fixtures_core.text import counted, excerpt


class ComparedFixture(Protocol):
    """What a comparison reads of a fixture file of a run: its name and digest."""

    @property
    def file(self) -> str: ...

    @property
    def sha256(self) -> str: ...


class ComparedRun(Protocol):
    """What a comparison reads of a run (``records.rundoc.RunResult`` is one: it stores the
    comparison, so this room cannot import it)."""

    @property
    def run_id(self) -> str: ...

    @property
    def rows(self) -> tuple[RowResult, ...]: ...

    @property
    def fixtures(self) -> Sequence[ComparedFixture]: ...

    @property
    def summary(self) -> Summary: ...

    @property
    def error(self) -> str | None: ...

    @property
    def started_at(self) -> str: ...

    @property
    def label(self) -> str | None: ...

    @property
    def environment(self) -> Mapping[str, object]: ...


__all__ = [
    "Comparison",
    "MetricDelta",
    "RateDelta",
    "RowChange",
    "RunFacts",
    "check_tolerance",
    "compare",
]

# Float noise allowed before a rate's drop counts as beyond the tolerance (rates lie in 0..1).
EPSILON = 1e-9

# Statuses a passing row must not turn into.
_BROKEN: tuple[Status, ...] = ("FAIL", "ERR")

RowKey = tuple[str, str]  # (fixture file, row name)


@dataclass(frozen=True)
class RowChange:
    """A row whose status differs from the baseline's, or that exists on one side only.

    row, file:  the row's name and fixture file (the identity rows match by).
    before:     baseline status; None for a row added since the baseline.
    after:      current status; None for a row removed since the baseline.
    gating:     True exactly when the row passed before and is FAIL or ERR now.
    """

    row: str
    file: str
    before: Status | None
    after: Status | None
    gating: bool


@dataclass(frozen=True)
class MetricDelta:
    """One metric of a row both runs ran: baseline aggregate against current aggregate.

    delta_percent: relative change ``(current - baseline) / |baseline| * 100``,
                   signed as the value moved (whether that is worse depends on
                   the direction); None when the two were not compared.
    gating:        the metric can gate (gate, direction, regressionPercent,
                   comparable values on both sides).
    regressed:     it gates here: worsened by more than regressionPercent.
    note:          why it was not compared, or how far it regressed.
    """

    row: str
    name: str
    unit: str
    baseline: float | None
    current: float | None
    delta_percent: float | None
    gating: bool
    regressed: bool
    note: str | None = None


@dataclass(frozen=True)
class RateDelta:
    """A suite rate in [0, 1]: pass rate, sample pass rate, pass@k or pass^k.

    delta:     ``current - baseline``; None when either side has no value.
    gating:    both sides have a value, so a drop beyond the tolerance gates.
    regressed: ``baseline - current > tolerance``.
    note:      why a value is missing, or that a drop was within the tolerance.
    """

    name: str
    baseline: float | None
    current: float | None
    delta: float | None
    gating: bool
    regressed: bool
    note: str | None = None


@dataclass(frozen=True)
class RunFacts:
    """What names a saved run for people: its id, label, when it started and the commit it ran on."""

    run_id: str
    started_at: str
    label: str | None = None
    commit: str | None = None

    @classmethod
    def of(cls, run: ComparedRun) -> RunFacts:
        """The facts of ``run`` (its commit from its recorded git state, when it has one)."""
        git = run.environment.get("git")
        commit = git.get("commit") if isinstance(git, Mapping) else None
        return cls(run.run_id, run.started_at, run.label or None, str(commit) if commit else None)


@dataclass(frozen=True)
class Comparison:
    """The verdict of a run against a baseline and every line behind it.

    baseline:  where the baseline came from (a path or name, for messages).
    tolerance: the allowed drop of suite rates, 0..1.
    regressed: any gating line regressed.
    changes:   changed, added and removed rows; gating ones first.
    metrics:   metric deltas of rows both runs ran; regressions first.
    rates:     suite rates; regressions first.
    added:     ids (``file::name``) of rows only in the current run.
    removed:   ids of rows only in the baseline.
    warnings:  things that make the comparison less like-for-like.
    error:     set instead of lines when no comparison could be made.
    """

    baseline: str
    tolerance: float
    regressed: bool
    changes: tuple[RowChange, ...]
    metrics: tuple[MetricDelta, ...]
    rates: tuple[RateDelta, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    warnings: tuple[str, ...]
    error: str | None = None
    still_failing: tuple[str, ...] = ()  # ids of rows that failed in the baseline and fail now: reported, not gating
    baseline_run: str | None = None  # the baseline's run id (older run documents have none)
    baseline_facts: RunFacts | None = None  # its id, label, start and commit (older run documents have none)


def check_tolerance(value: float) -> float:
    """The regression tolerance as a float; UsageError unless 0 <= value <= 1."""
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise UsageError(
            f"--regression-tolerance must be between 0 and 1 (an allowed drop in a rate, e.g. 0.05), got {value}"
        )
    return float(value)


def compare(
    baseline: ComparedRun, current: ComparedRun, tolerance: float = 0.0, baseline_path: str = "<baseline>"
) -> Comparison:
    """Compare ``current`` with ``baseline`` under the rules of the module docstring.

    Raises UsageError for a tolerance outside 0..1 and BaselineError when the
    baseline has no rows or shares no row that ran with the current run.
    """
    tolerance = check_tolerance(tolerance)
    before = _index(baseline.rows, baseline_path)
    after = _index(current.rows, None)
    if not before:
        raise BaselineError(baseline_path, "baseline has no rows")
    common = [key for key in before if key in after]
    if not common:
        raise BaselineError(
            baseline_path,
            f"no row in common with the current run (baseline: {_count(before)} in {_files(before)}; "
            f"current: {_count(after)} in {_files(after)}); rows are matched by fixture file and row name",
        )
    ran = [key for key in common if before[key].status != "SKIP" and after[key].status != "SKIP"]
    if not ran:
        raise BaselineError(
            baseline_path, f"none of the {_count(common)} in common ran in both runs (skipped on one side)"
        )
    unchecked = _check_metric_gates(before, after, ran, baseline_path)
    added = [after[key] for key in after if key not in before]
    removed = [before[key] for key in before if key not in after]

    changes = [_change(before[key], after[key]) for key in common if before[key].status != after[key].status]
    changes += [RowChange(row.name, row.file, None, row.status, gating=False) for row in added]
    changes += [RowChange(row.name, row.file, row.status, None, gating=False) for row in removed]
    metrics = [
        _metric_delta(after[key].name, name, before[key].metrics.get(name), after[key].metrics.get(name))
        for key in ran
        for name in _union(before[key].metrics, after[key].metrics)
    ]
    rates = _rates([before[key] for key in ran], list(after.values()), baseline, current, tolerance)
    if len(ran) < sum(1 for row in before.values() if row.status != "SKIP"):
        rates[0] = _with_note(rates[0], f"baseline over the {_count(ran)} both runs ran")
    regressed = any(c.gating for c in changes) or any(m.regressed for m in metrics) or any(r.regressed for r in rates)
    return Comparison(
        baseline_run=baseline.run_id,
        baseline_facts=RunFacts.of(baseline),
        baseline=baseline_path,
        tolerance=tolerance,
        regressed=regressed,
        changes=tuple(sorted(changes, key=lambda c: not c.gating)),
        metrics=tuple(sorted(metrics, key=lambda m: not m.regressed)),
        rates=tuple(sorted(rates, key=lambda r: not r.regressed)),
        added=tuple(row.id for row in added),
        removed=tuple(row.id for row in removed),
        warnings=(*unchecked, *_warnings(baseline, current, [(before[key], after[key]) for key in common])),
        still_failing=tuple(after[key].id for key in common if before[key].status == after[key].status == "FAIL"),
    )


def _check_metric_gates(
    before: Mapping[RowKey, RowResult], after: Mapping[RowKey, RowResult], ran: Sequence[RowKey], baseline_path: str
) -> list[str]:
    """Warnings for the baseline's metric gates this run lacks (seed 03: a metric on one side only is
    reported and skipped). When it lacks every one of them (all renamed or removed), nothing would
    gate on metrics any more: the comparison fails closed instead."""
    gating = {
        name
        for key in ran
        for name, metric in before[key].metrics.items()
        if metric.gate and metric.direction != "none" and metric.threshold.limits_regression
    }
    present = {name for key in ran for name in after[key].metrics}
    lost = sorted(gating - present)
    names = ", ".join(f"'{name}'" for name in lost)
    if lost and not gating & present:
        raise BaselineError(
            baseline_path,
            f"metric gate {names} of the baseline matches no metric of this run (renamed or removed?): "
            "the gate cannot be checked",
        )
    if not lost:
        return []
    kept = ", ".join(f"'{name}'" for name in sorted(gating & present))
    return [f"metric gate {names} of the baseline is not in this run: not checked (still gating: {kept})"]


# --- rows -----------------------------------------------------------------------


def _index(rows: Iterable[RowResult], baseline_path: str | None) -> dict[RowKey, RowResult]:
    """Rows by (file, name); a duplicate is an error (fixture validation forbids them)."""
    found: dict[RowKey, RowResult] = {}
    for row in rows:
        key = (row.file, row.name)
        if key in found:
            reason = f"row '{row.name}' appears twice in {row.file}"
            if baseline_path is None:
                raise ValueError(f"current run: {reason}")
            raise BaselineError(baseline_path, reason)
        found[key] = row
    return found


def _count(rows: Sequence[object] | Mapping[RowKey, object]) -> str:
    return counted(len(rows), "row")


def _files(rows: Mapping[RowKey, RowResult]) -> str:
    names = sorted({file for file, _name in rows})
    if not names:
        return "no fixture file"
    shown = ", ".join(names[:3])
    return shown + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _change(before: RowResult, after: RowResult) -> RowChange:
    gating = before.passed and after.status in _BROKEN
    return RowChange(after.name, after.file, before.status, after.status, gating)


def _sample_counts(rows: Iterable[RowResult]) -> tuple[int, int]:
    """(passed samples, other samples) over rows."""
    samples = [s for row in rows for s in row.samples]
    passed = sum(1 for s in samples if s.passed)
    return passed, len(samples) - passed


# --- suite rates ----------------------------------------------------------------


def _rates(
    before: list[RowResult], after: list[RowResult], baseline: ComparedRun, current: ComparedRun, tolerance: float
) -> list[RateDelta]:
    counts_b, counts_c = Summary.of(before), Summary.of(after)
    rows_b = (counts_b.passed, counts_b.counted - counts_b.passed)
    rows_c = (counts_c.passed, counts_c.counted - counts_c.passed)
    counted_b = [r for r in before if r.status != "SKIP"]
    counted_c = [r for r in after if r.status != "SKIP"]
    samples_b, samples_c = _sample_counts(counted_b), _sample_counts(counted_c)
    rates = [
        _rate("pass rate", _fraction(rows_b), _fraction(rows_c), tolerance),
        _rate("sample pass rate", _fraction(samples_b), _fraction(samples_c), tolerance),
    ]
    k_b, k_c = _suite_k(baseline), _suite_k(current)
    figures_b, figures_c = _figures(before, k_b), _figures(after, k_c)
    mismatch = _k_mismatch(k_b, k_c, before, after)
    for name, figure in (("pass@k", _pass_at_k), ("pass^k", _pass_hat_k)):
        value_b, value_c = figure(figures_b), figure(figures_c)
        if mismatch is not None:
            rates.append(RateDelta(name, value_b, value_c, None, False, False, mismatch))
            continue
        note = _withheld("baseline", figures_b) or _withheld("current", figures_c)
        rates.append(_rate(name, value_b, value_c, tolerance, note))
    return rates


def _pass_at_k(figures: SuiteFigures | str) -> float | None:
    return figures.pass_at_k if isinstance(figures, SuiteFigures) else None


def _pass_hat_k(figures: SuiteFigures | str) -> float | None:
    return figures.pass_hat_k if isinstance(figures, SuiteFigures) else None


def _fraction(counts: tuple[int, int]) -> float | None:
    passed, other = counts
    return passed / (passed + other) if passed + other else None


def _rate(name: str, before: float | None, after: float | None, tolerance: float, note: str | None = None) -> RateDelta:
    if before is None or after is None:
        side = "baseline" if before is None else "current"
        return RateDelta(name, before, after, None, False, False, note or f"no value in the {side} run")
    drop = before - after
    regressed = drop > tolerance + EPSILON
    if not regressed and drop > EPSILON:
        note = note or f"drop within tolerance {tolerance:.3f}"
    return RateDelta(name, before, after, after - before, True, regressed, note)


def _with_note(rate: RateDelta, note: str) -> RateDelta:
    text = f"{rate.note}; {note}" if rate.note else note
    return RateDelta(rate.name, rate.baseline, rate.current, rate.delta, rate.gating, rate.regressed, text)


def _suite_k(run: ComparedRun) -> int | None:
    return run.summary.stochastic.k if run.summary.stochastic is not None else None


def _figures(rows: list[RowResult], k: int | None) -> SuiteFigures | str:
    """The suite figures of these rows, as the run's summary computes them, or why there are none."""
    try:
        return suite_figures(rows, k)
    except ValueError as exc:  # a row without stochastic figures, or computed with another k
        return str(exc)


def _withheld(side: str, figures: SuiteFigures | str) -> str | None:
    if isinstance(figures, str):
        return f"withheld in {side}: {figures}"
    return f"withheld in {side}: {figures.withheld}" if figures.withheld else None


def _k_mismatch(k_b: int | None, k_c: int | None, before: list[RowResult], after: list[RowResult]) -> str | None:
    """Why pass@k of the two runs estimate different things, or None."""
    if k_b != k_c:
        return f"k differs (baseline {_k_text(k_b)}, current {_k_text(k_c)}); not compared"
    if k_b is not None:
        return None
    # k defaults to each row's n: a row whose repeat changed estimates another k.
    ks_c = {(r.file, r.name): r.stochastic.k for r in after if r.stochastic is not None}
    for row in before:
        k_row = row.stochastic.k if row.stochastic is not None else None
        k_now = ks_c.get((row.file, row.name))
        if k_row is not None and k_now is not None and k_row != k_now:
            return f"k differs for row '{row.name}' (baseline {k_row}, current {k_now}); not compared"
    return None


def _k_text(k: int | None) -> str:
    return "each row's n" if k is None else str(k)


# --- metrics --------------------------------------------------------------------


def _union(before: Mapping[str, MetricSummary], after: Mapping[str, MetricSummary]) -> list[str]:
    return [*before, *(name for name in after if name not in before)]


def _metric_delta(row: str, name: str, before: MetricSummary | None, after: MetricSummary | None) -> MetricDelta:
    if before is None or after is None:
        present = after or before
        assert present is not None
        side = "current" if before is None else "baseline"
        return MetricDelta(
            row, name, present.unit, _value(before), _value(after), None, False, False, note=f"only in {side}"
        )
    unshown = MetricDelta(row, name, after.unit, before.value, after.value, None, False, False)
    if before.unit != after.unit:
        return _noted(unshown, f"unit changed ({before.unit} -> {after.unit}); not compared")
    if before.aggregate != after.aggregate:
        return _noted(unshown, f"aggregate changed ({before.aggregate} -> {after.aggregate}); not compared")
    for side, summary in (("baseline", before), ("current", after)):
        if summary.value is None:
            return _noted(unshown, f"no value in {side}" + (f": {summary.error}" if summary.error else ""))
        # Seed 01: an aggregate is comparable only when every required sample gave a value.
        if summary.status == "not_evaluated":
            return _noted(unshown, f"{side} value incomplete: {summary.error or 'not every sample gave a value'}")
        if summary.status not in ("pass", "fail"):
            return _noted(unshown, f"{side} error: {summary.error or summary.status}")
    assert before.value is not None and after.value is not None
    threshold = after.threshold
    gates = after.gate and after.direction != "none" and threshold.limits_regression
    points_only = threshold.regression_percent is None and threshold.regression_points is not None
    if before.value == 0 and not (gates and points_only):
        return _noted(unshown, "baseline value is 0: a relative change is undefined; not compared")
    delta = None if before.value == 0 else (after.value - before.value) / abs(before.value) * 100.0
    if not gates:
        return MetricDelta(row, name, after.unit, before.value, after.value, recorded(delta), False, False)
    # the rules finalize applies between rows
    percent = None if before.value == 0 else regression_percent(after.value, before.value, after.direction)
    points = regression_points(after.value, before.value, after.direction)
    regressed = regression_failure(percent, points, threshold, after.unit) is not None
    note = _worse_note(percent, points, threshold, after.unit) if regressed else None
    return MetricDelta(row, name, after.unit, before.value, after.value, recorded(delta), True, regressed, note)


def _worse_note(percent: float | None, points: float, threshold: Threshold, unit: str) -> str:
    allowed = threshold.regression_percent
    if allowed is not None and percent is not None and beyond(percent, allowed):
        return f"{percent:.1f}% worse, allowed {allowed:g}%"
    return f"{points:.4g} {unit} worse, allowed {threshold.regression_points:g} {unit}"


def _value(summary: MetricSummary | None) -> float | None:
    return summary.value if summary is not None else None


def _noted(delta: MetricDelta, note: str) -> MetricDelta:
    return MetricDelta(delta.row, delta.name, delta.unit, delta.baseline, delta.current, None, False, False, note)


# --- warnings -------------------------------------------------------------------


def _warnings(baseline: ComparedRun, current: ComparedRun, pairs: list[tuple[RowResult, RowResult]]) -> list[str]:
    warnings = []
    if baseline.error is not None:
        warnings.append(f"the baseline run ended in error ({baseline.error}); rows it lacks count as added")
    digests = {f.file: f.sha256 for f in baseline.fixtures}
    for fixture in current.fixtures:
        old = digests.get(fixture.file)
        if old is not None and old != fixture.sha256:
            warnings.append(
                f"fixture {fixture.file} changed since the baseline (sha256 {old[:12]} -> {fixture.sha256[:12]})"
            )
    for before, after in pairs:
        if before.command != after.command:
            warnings.append(
                f"row '{after.name}' in {after.file} runs another command than in the baseline: "
                f"{_shown(before.command)} -> {_shown(after.command)}"
            )
    return warnings


def _shown(command: Sequence[str], limit: int = 60) -> str:
    return excerpt(shlex.join(command), limit)
