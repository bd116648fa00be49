"""Finalize a run: metric summaries, row-to-row comparisons, repeat statistics, verdict.

Runs once, after every row has finished, because a row's comparison needs its
baseline row. Metric values go through one pandas DataFrame (a row per sample
and metric) grouped once by row and metric, so the cost grows linearly with
samples x metrics; each aggregate is ``metrics.aggregate`` (one definition).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from fixtures_core.analysis.metrics import (
    aggregate,
    recorded,
    regression_failure,
    regression_percent,
    regression_points,
    threshold_failure,
)
from fixtures_core.analysis.passk import SuiteFigures, group_figures, row_stochastic, suite_figures
from fixtures_core.results import BudgetFigures, MetricComparison, MetricSummary, Outcome, RowResult
from fixtures_core.spec import MetricSpec, RowSpec
from fixtures_core.verdicts import row as row_verdict
from fixtures_core.verdicts.precedence import combine_outcomes

if TYPE_CHECKING:  # imported where it is used: pandas costs ~0.25 s, and most commands never finalize
    import pandas as pd


@dataclass(frozen=True)
class Summary:
    """Counts of a run, and its suite-level repeat statistics.

    The run's status is not here: it also weighs A/B ship gates and arm rows
    (``runs.ab.run_status``) and interruptions.
    """

    rows: int
    passed: int
    failed: int
    errored: int
    skipped: int
    samples: int
    stochastic: SuiteFigures | None = None
    groups: Mapping[str, Mapping[str, SuiteFigures]] | None = None
    sample_budget: BudgetFigures | None = None  # a run whose adaptive rows share a sample budget

    @classmethod
    def of(cls, rows: Sequence[RowResult]) -> Summary:
        """The counts of ``rows`` by status (passed is ``RowResult.passed``, the one definition)."""
        return cls(
            rows=len(rows),
            passed=sum(r.passed for r in rows),
            failed=sum(r.status == "FAIL" for r in rows),
            errored=sum(r.status == "ERR" for r in rows),
            skipped=sum(r.status == "SKIP" for r in rows),
            samples=sum(1 for r in rows for s in r.samples if s.status != "SKIP"),  # that ran: a dry run's none
        )

    @property
    def counted(self) -> int:
        """Rows that count for a pass rate: every row but the skipped ones."""
        return self.rows - self.skipped


def finalize_rows(
    specs: Sequence[RowSpec],
    results: Sequence[RowResult],
    k: int | None = None,
) -> list[RowResult]:
    """Every row with its metrics, comparisons and repeat statistics, in spec order; a row none of
    whose samples ran (a dry run) is SKIP."""
    by_id = {r.id: row_verdict.dry_run_skipped(r) for r in results}
    pairs = [(spec, by_id[spec.id]) for spec in specs if spec.id in by_id]
    extracted = extracted_values(metric_table(results))
    summaries = {spec.id: _summaries(spec, row, extracted) for spec, row in pairs}
    rows_by_name = {spec.name: row for spec, row in pairs}
    finished = []
    for spec, row in pairs:
        metrics = {
            name: _compare(spec, name, summary, summaries, rows_by_name) for name, summary in summaries[spec.id].items()
        }
        done = row_verdict.with_metrics(row, metrics)
        if done.status != "SKIP":
            done = replace(done, stochastic=row_stochastic(done.samples, k, done.name))
        finished.append(done)
    return finished


def summarize(rows: Sequence[RowResult], k: int | None = None, group_by: Sequence[str] = ()) -> Summary:
    """Counts, suite figures and per-group figures of finalized rows."""
    return replace(
        Summary.of(rows),
        stochastic=suite_figures(rows, k),
        groups={prop: group_figures(rows, k, prop) for prop in group_by} or None,
    )


def metric_table(rows: Sequence[RowResult]) -> pd.DataFrame:
    """One DataFrame row per (row, sample, metric): its value, extraction status and error."""
    import pandas as pd

    records = [
        (row.id, sample.index, name, value.value, value.status, value.error)
        for row in rows
        for sample in row.samples
        for name, value in sample.metrics.items()
    ]
    return pd.DataFrame.from_records(records, columns=["row", "sample", "metric", "value", "status", "error"])


@dataclass(frozen=True)
class Extracted:
    """What a row's samples gave for one metric: the values in sample order, the first error."""

    values: tuple[float, ...] = ()
    error: str | None = None


def extracted_values(table: pd.DataFrame) -> dict[tuple[str, str], Extracted]:
    """Group the metric table once by (row, metric): linear in samples x metrics."""
    if table.empty:
        return {}
    keys = ["row", "metric"]
    passing: dict[Any, tuple[float, ...]] = (
        table[table["status"] == "pass"].groupby(keys, sort=False)["value"].agg(tuple).to_dict()
    )
    errors: dict[Any, str] = table[table["status"] == "error"].groupby(keys, sort=False)["error"].first().to_dict()
    return {
        cast(tuple[str, str], key): Extracted(tuple(float(v) for v in passing.get(key, ())), errors.get(key))
        for key in passing.keys() | errors.keys()
    }


def _summaries(
    spec: RowSpec, row: RowResult, extracted: Mapping[tuple[str, str], Extracted]
) -> dict[str, MetricSummary]:
    if not spec.metrics or row.status == "SKIP":
        return {}
    # Every sample must give a value: an adaptive row's are the samples it took (its n, not its max).
    required = len(row.samples) if spec.adaptive else spec.repeat
    return {m.name: _summary(m, required, extracted.get((spec.id, m.name), Extracted())) for m in spec.metrics}


def _summary(metric: MetricSpec, required: int, extracted: Extracted) -> MetricSummary:
    values = extracted.values
    base = dict(unit=metric.unit, aggregate=metric.aggregate, direction=metric.direction, gate=metric.gate,
                values=values, threshold=metric.threshold)  # fmt: skip
    try:
        value = aggregate(values, metric.aggregate) if values else None
    except ValueError as exc:  # it overflows: an error of this metric, not of the run
        return MetricSummary(status="error", error=str(exc), **base)  # type: ignore[arg-type]
    if extracted.error is not None:
        return MetricSummary(status="error", value=value, error=extracted.error, **base)  # type: ignore[arg-type]
    if len(values) < required:
        reason = f"{len(values)} of {required} samples gave a value"
        return MetricSummary(status="not_evaluated", value=value, error=reason, **base)  # type: ignore[arg-type]
    assert value is not None
    failure = threshold_failure(value, metric.threshold, metric.unit)
    return MetricSummary(status="fail" if failure else "pass", value=value, error=failure, **base)  # type: ignore[arg-type]


def _baseline_name(spec: RowSpec, metric_name: str) -> str | None:
    return next(m for m in spec.metrics if m.name == metric_name).baseline_for(spec.name)


def _compare(
    spec: RowSpec,
    name: str,
    summary: MetricSummary,
    summaries: Mapping[str, Mapping[str, MetricSummary]],
    rows_by_name: Mapping[str, RowResult],
) -> MetricSummary:
    baseline_name = _baseline_name(spec, name)
    if baseline_name is None:
        return summary
    gating = summary.threshold.limits_regression
    baseline_row = rows_by_name.get(baseline_name)
    other = summaries.get(baseline_row.id, {}).get(name) if baseline_row is not None else None
    if other is None:
        comparison = _impossible(baseline_name, name, baseline_row, gating=gating)
    else:
        comparison = _comparison(baseline_name, summary, other)
    return replace(
        summary,
        comparison=comparison,
        status=_compared_status(summary.status, comparison.status, gating=gating),
        error=summary.error if summary.status in ("fail", "error") else comparison.error,
    )


def _impossible(baseline_name: str, name: str, baseline_row: RowResult | None, gating: bool) -> MetricComparison:
    """A comparison that cannot be made: an error when it gates (fail closed), else not evaluated."""
    if baseline_row is None:
        reason = f"baseline row '{baseline_name}' is not in this run"
    elif baseline_row.status == "SKIP":
        reason = f"baseline row '{baseline_name}' was skipped"
    else:
        reason = f"baseline row '{baseline_name}' has no metric '{name}'"
    return MetricComparison(baseline_name, "error" if gating else "not_evaluated", error=reason)


def _compared_status(own: Outcome, comparison: Outcome, gating: bool) -> Outcome:
    """A metric's outcome with its comparison: a gating comparison that was not evaluated
    leaves the metric not evaluated, never "pass"."""
    if own == "not_evaluated":
        return own
    if comparison == "not_evaluated" and gating and own == "pass":
        return "not_evaluated"
    return combine_outcomes([own, comparison])


def _comparison(baseline_name: str, summary: MetricSummary, other: MetricSummary) -> MetricComparison:
    if summary.status not in ("pass", "fail") or other.status not in ("pass", "fail"):
        side = "this row" if summary.status not in ("pass", "fail") else f"baseline row '{baseline_name}'"
        return MetricComparison(baseline_name, "not_evaluated", other.value, error=f"{side} has no complete value")
    assert summary.value is not None and other.value is not None
    if summary.direction == "none":
        return MetricComparison(baseline_name, "pass", other.value)
    points = regression_points(summary.value, other.value, summary.direction)
    try:
        percent: float | None = regression_percent(summary.value, other.value, summary.direction)
    except ZeroDivisionError as exc:
        if summary.threshold.regression_percent is not None:
            return MetricComparison(baseline_name, "error", other.value, error=str(exc))
        percent = None  # only points are limited: a zero baseline is fine
    failure = regression_failure(percent, points, summary.threshold, summary.unit)
    if failure is not None:
        reason = failure.replace(" exceeds", f" vs '{baseline_name}' exceeds", 1)
        return MetricComparison(baseline_name, "fail", other.value, recorded(percent), recorded(points), reason)
    return MetricComparison(baseline_name, "pass", other.value, recorded(percent), recorded(points))
