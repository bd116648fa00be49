"""Finalizing a run: metric summaries, row-to-row baselines, gates and callbacks.

Most tests write sample results out directly, so that every metric value is
known exactly; the last ones run real rows parsed from a fixture.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.analysis.finalize import Summary, finalize_rows, metric_table, summarize
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.parser import parse_file
from fixtures_core.records.rundoc import decode, encode
from fixtures_core.results import (
    Check,
    MetricValue,
    Outcomes,
    RowResult,
    SampleResult,
    Status,
)
from fixtures_core.spec import Aggregate, Direction, Expectation, MetricSpec, RowSpec, Sampling, Threshold
from fixtures_core.verdicts.precedence import combine_outcomes, worst

# A sample value is a number (extracted), None (the command failed: not evaluated) or "error".
Value = float | None | str


def ms_metric(
    *,
    baseline: str | None = None,
    direction: Direction = "lower",
    aggregate: Aggregate = "mean",
    regression: float | None = 25.0,
    minimum: float | None = None,
    maximum: float | None = None,
    gate: bool = True,
    name: str = "ms",
    points: float | None = None,
) -> MetricSpec:
    return MetricSpec(
        name=name,
        extract=f"json.{name}",
        unit="ms",
        file="f.md",
        line=3,
        aggregate=aggregate,
        direction=direction,
        baseline=baseline,
        threshold=Threshold(min=minimum, max=maximum, regression_percent=regression, regression_points=points),
        gate=gate,
    )


def spec(name: str, *metrics: MetricSpec, repeat: int = 3, skip: str | None = None) -> RowSpec:
    return RowSpec(
        file="f.md",
        line=10,
        name=name,
        argv=("agent",),
        expect=Expectation(),
        properties={},
        repeat=repeat,
        metrics=metrics,
        skip=skip,
    )


def sample(index: int, values: dict[str, Value]) -> SampleResult:
    if any(v is None for v in values.values()):  # command expectation failed
        return SampleResult(
            index, "FAIL", 1.0, 1, "", "", Check("fail", "exit code 1, expected 0"),
            metrics={name: MetricValue("not_evaluated") for name in values}, error="exit code 1, expected 0",
        )  # fmt: skip
    metrics = {
        name: MetricValue("error", error=f"sample {index}: gave null") if v == "error" else MetricValue("pass", v)
        for name, v in values.items()
    }
    failed = [m.error for m in metrics.values() if m.status == "error"]
    status: Status = "ERR" if failed else "PASS"
    return SampleResult(
        index, status, 1.0, 0, "{}", "", Check("pass"), metrics=metrics, error="; ".join(failed) or None
    )  # type: ignore[arg-type]


def result(row: RowSpec, per_sample: Sequence[Value] | Sequence[dict[str, Value]]) -> RowResult:
    """A row result whose samples gave these values of ``ms`` (or of several named metrics)."""
    samples = tuple(sample(i, v if isinstance(v, dict) else {"ms": v}) for i, v in enumerate(per_sample))
    status = worst(*(s.status for s in samples))
    if row.skip:
        status = "SKIP"
    err = next((f"sample {s.index}: {s.error}" for s in samples if s.status == "ERR"), None)
    return RowResult(
        id=row.id, file=row.file, name=row.name, line=row.line, status=status, repeat=row.repeat,
        command=row.argv, properties={}, samples=samples, error=err,
        outcomes=Outcomes(command=combine_outcomes([s.command.status for s in samples]), assertions="not_evaluated"),
    )  # fmt: skip


def finalize_pair(base: Sequence[Value], current: Sequence[Value], **metric: object) -> RowResult:
    """Finalize a baseline row 'base' and a row 'cur' compared with it; return 'cur'."""
    base_spec = spec("base", ms_metric(**metric), repeat=len(base))  # type: ignore[arg-type]
    cur_spec = spec("cur", ms_metric(baseline="base", **metric), repeat=len(current))  # type: ignore[arg-type]
    finished = finalize_rows([base_spec, cur_spec], [result(base_spec, base), result(cur_spec, current)])
    return finished[1]


# --- regression against a baseline row -----------------------------------------------------------


def test_worsening_of_exactly_the_allowed_percent_passes() -> None:
    # (125 - 100) / 100 * 100 = 25, allowed 25: not worse than allowed
    cur = finalize_pair([100, 100, 100], [125, 125, 125])
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.baseline == "base"
    assert metric.comparison.baseline_value == pytest.approx(100.0)
    assert metric.comparison.regression_percent == pytest.approx(25.0)
    assert metric.comparison.status == "pass"
    assert metric.status == "pass"
    assert cur.status == "PASS"


def test_worsening_beyond_the_allowed_percent_fails_the_row() -> None:
    # mean 126 vs 100: +26% > 25%
    cur = finalize_pair([100, 100, 100], [120, 126, 132])
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.status == "fail"
    assert metric.comparison.regression_percent == pytest.approx(26.0)
    assert metric.status == "fail"
    assert cur.status == "FAIL"
    assert cur.outcomes.metrics == "fail"
    assert cur.error == "metric ms: +26.0% vs 'base' exceeds the allowed 25%"


def test_worsening_beyond_the_allowed_points_fails_the_row() -> None:
    # mean 106 vs 100: 6 points worse > 5 allowed (and +6% is within no percent limit)
    cur = finalize_pair([100, 100, 100], [106, 106, 106], regression=None, points=5.0)
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.regression_points == pytest.approx(6.0)
    assert metric.status == "fail"
    assert cur.error == "metric ms: +6 ms vs 'base' exceeds the allowed 5 ms"


def test_points_compare_with_a_zero_baseline_row() -> None:
    # 0 -> 2: 2 points worse, allowed 5; a percent would be undefined
    cur = finalize_pair([0, 0, 0], [2, 2, 2], regression=None, points=5.0)
    assert cur.metrics["ms"].status == "pass"
    assert cur.metrics["ms"].comparison is not None and cur.metrics["ms"].comparison.regression_percent is None


def test_float_noise_at_the_limit_does_not_fail() -> None:
    # 1.2 -> 1.5 is +25% exactly, but +25.000000000000007% in binary floating point
    cur = finalize_pair([1.2, 1.2, 1.2], [1.5, 1.5, 1.5])
    assert cur.metrics["ms"].status == "pass"
    assert cur.status == "PASS"
    assert finalize_pair([1.2, 1.2, 1.2], [1.5001, 1.5001, 1.5001]).status == "FAIL"


@pytest.mark.parametrize(
    ("direction", "base", "current", "percent"),
    [
        ("lower", 100.0, 10.0, -90.0),  # (10 - 100) / 100 * 100
        ("higher", 100.0, 1000.0, -900.0),  # (100 - 1000) / 100 * 100
    ],
)
def test_improvements_never_fail(direction: Direction, base: float, current: float, percent: float) -> None:
    cur = finalize_pair([base] * 3, [current] * 3, direction=direction, regression=0.0)
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.regression_percent == pytest.approx(percent)
    assert metric.status == "pass"
    assert cur.status == "PASS"


def test_higher_is_better_worsening_fails() -> None:
    # (100 - 70) / 100 * 100 = +30% > 25%
    cur = finalize_pair([100] * 3, [70] * 3, direction="higher")
    assert cur.metrics["ms"].comparison is not None
    assert cur.metrics["ms"].comparison.regression_percent == pytest.approx(30.0)
    assert cur.status == "FAIL"


@pytest.mark.parametrize(
    ("base", "current", "status"),
    [
        (-1e308, 1e308, "FAIL"),  # 2e308 ms worse: beyond a double, and beyond every allowed percent
        (1e308, -1e308, "PASS"),  # as far better
        (5e-324, 1.0, "FAIL"),  # (1 - 5e-324) / 5e-324 * 100: a change beyond a double from a baseline near 0
    ],
)
def test_a_change_beyond_a_double_decides_the_row_and_is_not_recorded(base: float, current: float, status: str) -> None:
    cur = finalize_pair([base], [current])
    comparison = cur.metrics["ms"].comparison
    assert comparison is not None and cur.status == status
    assert comparison.regression_percent is None  # a run document holds finite numbers only
    if status == "FAIL":
        assert cur.error == "metric ms: +inf% vs 'base' exceeds the allowed 25%"
    assert decode(encode(cur), RowResult).metrics["ms"] == cur.metrics["ms"]  # it loads back as written


def test_without_regression_percent_the_comparison_is_informational() -> None:
    cur = finalize_pair([100] * 3, [500] * 3, regression=None)
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.regression_percent == pytest.approx(400.0)
    assert metric.comparison.status == "pass"
    assert cur.status == "PASS"


def test_direction_none_compares_without_a_percent() -> None:
    cur = finalize_pair([100] * 3, [500] * 3, direction="none", regression=None)
    comparison = cur.metrics["ms"].comparison
    assert comparison is not None
    assert comparison.status == "pass"
    assert comparison.baseline_value == pytest.approx(100.0)
    assert comparison.regression_percent is None


def test_zero_baseline_is_an_error() -> None:
    cur = finalize_pair([0, 0, 0], [5, 5, 5])
    metric = cur.metrics["ms"]
    assert metric.comparison is not None
    assert metric.comparison.status == "error"
    assert metric.status == "error"
    assert cur.status == "ERR"
    assert cur.outcomes.metrics == "error"
    assert cur.error is not None and "baseline value is 0" in cur.error


def test_self_baseline_is_skipped() -> None:
    # Frontmatter gives every row the same metric list, so the baseline row names itself.
    row = spec("base", ms_metric(baseline="base", regression=0.0))
    (done,) = finalize_rows([row], [result(row, [100, 200, 300])])
    assert done.metrics["ms"].comparison is None
    assert done.metrics["ms"].status == "pass"
    assert done.status == "PASS"


def test_gating_comparison_with_a_baseline_row_missing_from_the_run_fails_closed() -> None:
    row = spec("cur", ms_metric(baseline="gone"))  # regressionPercent 25: the comparison gates
    (done,) = finalize_rows([row], [result(row, [1, 2, 3])])
    comparison = done.metrics["ms"].comparison
    assert comparison is not None
    assert comparison.status == "error"
    assert comparison.error == "baseline row 'gone' is not in this run"
    assert done.status == "ERR"


def test_informational_comparison_with_a_missing_baseline_row_is_not_evaluated() -> None:
    row = spec("cur", ms_metric(baseline="gone", regression=None))
    (done,) = finalize_rows([row], [result(row, [1, 2, 3])])
    comparison = done.metrics["ms"].comparison
    assert comparison is not None and comparison.status == "not_evaluated"
    assert done.status == "PASS"


def test_skipped_baseline_row_is_named_as_skipped() -> None:
    base = spec("base", ms_metric(), skip="not on this OS")
    cur = spec("cur", ms_metric(baseline="base"))
    _, done = finalize_rows([base, cur], [result(base, []), result(cur, [1, 2, 3])])
    comparison = done.metrics["ms"].comparison
    assert comparison is not None
    assert comparison.status == "error"  # it gates (regressionPercent 25), so it fails closed
    assert comparison.error == "baseline row 'base' was skipped"
    assert done.status == "ERR"


def test_a_row_none_of_whose_samples_ran_is_finalized_as_skipped() -> None:
    row = spec("dry", ms_metric())
    unrun = tuple(
        SampleResult(i, "SKIP", 0.0, None, "", "", Check("not_evaluated", "dry run"), error="dry run",
                     metrics={"ms": MetricValue("not_evaluated")})
        for i in range(3)
    )  # fmt: skip
    raw = replace(result(row, []), samples=unrun, status="PASS")  # as run_row combines SKIP samples

    (done,) = finalize_rows([row], [raw])

    assert (done.status, done.error) == ("SKIP", "dry run")
    assert done.metrics == {} and done.stochastic is None  # nothing to aggregate, no pass@k of samples not run
    assert summarize([done]).skipped == 1


def test_baseline_without_complete_values_is_not_compared() -> None:
    cur = finalize_pair([100, None, 100], [1000, 1000, 1000])
    comparison = cur.metrics["ms"].comparison
    assert comparison is not None
    assert comparison.status == "not_evaluated"
    assert comparison.error == "baseline row 'base' has no complete value"
    assert comparison.regression_percent is None
    assert cur.metrics["ms"].status == "not_evaluated", "a gating comparison not made is never 'pass'"


# --- gates, absolute thresholds and incomplete metrics ---------------------------------------------------


def test_informational_metric_never_changes_the_row_status() -> None:
    # breaks both its max and its regression limit, but gate: false
    cur = finalize_pair([100] * 3, [900] * 3, maximum=200.0, gate=False)
    metric = cur.metrics["ms"]
    assert metric.status == "fail"
    assert metric.gate is False
    assert cur.status == "PASS"
    assert cur.error is None


def test_informational_metric_does_not_hide_a_gating_failure() -> None:
    cost = ms_metric(name="usd", maximum=0.01, gate=False, regression=None)
    ms = ms_metric(maximum=100.0, regression=None)
    row = spec("r", ms, cost)
    (done,) = finalize_rows([row], [result(row, [{"ms": 500, "usd": 0.001}] * 3)])
    assert done.metrics["usd"].status == "pass"
    assert done.metrics["ms"].status == "fail"
    assert done.status == "FAIL"
    assert done.error == "metric ms: 500 ms is above max 100"


@pytest.mark.parametrize(
    ("aggregate", "status"),
    [
        ("median", "pass"),  # median of 10, 10, 400 is 10 <= 50
        ("mean", "fail"),  # mean is 140 > 50
        ("max", "fail"),
        ("min", "pass"),
    ],
)
def test_absolute_threshold_applies_to_the_selected_aggregate(aggregate: Aggregate, status: str) -> None:
    row = spec("r", ms_metric(aggregate=aggregate, maximum=50.0, regression=None))
    (done,) = finalize_rows([row], [result(row, [10, 10, 400])])
    assert done.metrics["ms"].status == status
    assert done.status == ("PASS" if status == "pass" else "FAIL")


def test_minimum_threshold() -> None:
    row = spec("r", ms_metric(direction="higher", minimum=5.0, regression=None))
    (done,) = finalize_rows([row], [result(row, [1, 2, 3])])
    assert done.metrics["ms"].error == "2 ms is below min 5"
    assert done.status == "FAIL"


def test_metric_not_evaluated_unless_every_sample_gave_a_value() -> None:
    # Sample 1's command failed, so its metric was not evaluated; the threshold would fail 5 > 1.
    row = spec("r", ms_metric(maximum=1.0, regression=None))
    (done,) = finalize_rows([row], [result(row, [5, None, 7])])
    metric = done.metrics["ms"]
    assert metric.status == "not_evaluated"
    assert metric.values == pytest.approx((5.0, 7.0))  # still reported
    assert metric.value == pytest.approx(6.0)  # mean of the valid values, for diagnostics
    assert metric.error == "2 of 3 samples gave a value"
    assert done.status == "FAIL"  # from the failed sample, not from the metric
    assert done.error is None


def test_incomplete_current_row_is_not_compared() -> None:
    cur = finalize_pair([100] * 3, [1000, None, 1000])
    assert cur.metrics["ms"].status == "not_evaluated"
    assert cur.metrics["ms"].comparison is not None
    assert cur.metrics["ms"].comparison.error == "this row has no complete value"


def test_extraction_error_makes_the_metric_an_error() -> None:
    row = spec("r", ms_metric(regression=None))
    (done,) = finalize_rows([row], [result(row, [5, "error"])])
    assert done.metrics["ms"].status == "error"
    assert done.metrics["ms"].error == "sample 1: gave null"  # the first failing sample's own message
    assert done.metrics["ms"].values == pytest.approx((5.0,))
    assert done.status == "ERR"


def test_values_keep_sample_order_and_unit() -> None:
    row = spec("r", ms_metric(regression=None, aggregate="median"), repeat=4)
    (done,) = finalize_rows([row], [result(row, [4, 1, 3, 2])])
    metric = done.metrics["ms"]
    assert metric.values == pytest.approx((4.0, 1.0, 3.0, 2.0))
    assert metric.value == pytest.approx(2.5)  # (2 + 3) / 2
    assert metric.unit == "ms"
    assert metric.aggregate == "median"


# --- callbacks, order, skips, summary --------------------------------------------------------------


def test_rows_are_finalized_in_spec_order_with_their_comparisons() -> None:
    base = spec("base", ms_metric())
    cur = spec("cur", ms_metric(baseline="base"))
    finished = finalize_rows([base, cur], [result(cur, [200] * 3), result(base, [100] * 3)])
    assert [r.name for r in finished] == ["base", "cur"]
    assert finished[1].metrics["ms"].comparison is not None
    assert finished[1].status == "FAIL"
    assert finished[1].stochastic is not None


def test_rows_come_back_in_spec_order_and_only_those_that_ran() -> None:
    a, b, c = spec("a"), spec("b"), spec("c")
    finished = finalize_rows([a, b, c], [result(c, [1]), result(a, [1])])
    assert [r.name for r in finished] == ["a", "c"]


def test_rows_without_metrics_are_unchanged_apart_from_statistics() -> None:
    row = spec("plain")
    raw = result(row, [1, 1, 1])
    (done,) = finalize_rows([row], [raw])
    assert done.metrics == {}
    assert done.outcomes.metrics is None
    assert done.status == raw.status
    assert done.stochastic is not None
    assert (done.stochastic.n, done.stochastic.passed) == (3, 3)


def test_skipped_row_gets_no_metrics_or_statistics() -> None:
    row = spec("s", ms_metric(maximum=0.0), skip="not here")
    (done,) = finalize_rows([row], [result(row, [])])
    assert done.status == "SKIP"
    assert done.metrics == {}
    assert done.stochastic is None


def test_summary_counts() -> None:
    ok, bad, err, skipped = spec("ok"), spec("bad"), spec("err"), spec("skip", skip="x")
    rows = finalize_rows(
        [ok, bad, err, skipped],
        [result(ok, [1, 1]), result(bad, [1, None]), result(err, [{"ms": "error"}]), result(skipped, [])],
    )
    summary = summarize(rows)
    assert (summary.rows, summary.passed, summary.failed, summary.errored, summary.skipped) == (4, 1, 1, 1, 1)
    assert summary.samples == 5
    assert summary.counted == 3  # every row but the skipped one
    assert Summary.of(rows) == replace(summary, stochastic=None, groups=None)


def test_summary_has_no_status_of_its_own() -> None:
    # The run's status weighs A/B ship gates and arm rows (runs.ab.run_status) and interruptions;
    # a second definition from the counts alone would disagree with it.
    assert not hasattr(Summary, "status")


def test_metric_table_has_one_record_per_sample_and_metric() -> None:
    row = spec("r", ms_metric(), ms_metric(name="usd"))
    table = metric_table([result(row, [{"ms": 1, "usd": 2}, {"ms": 3, "usd": 4}])])
    assert len(table) == 4
    assert sorted(table["metric"]) == ["ms", "ms", "usd", "usd"]


# --- real rows -------------------------------------------------------------------------------------


def test_real_rows_compared_with_a_baseline_row(tmp_path: Path) -> None:
    text = f"""---
exec: {sys.executable}
args: ["-c", "import json, os; print(json.dumps({{'ms': {{{{ .ms }}}} + int(os.environ['ASSAY_SAMPLE'])}}))"]
repeat: 3
metrics:
  - name: duration
    extract: json.ms
    unit: ms
    aggregate: median
    direction: lower
    baseline: API high
    threshold:
      regressionPercent: 25
---

| Name | ms |
|---|---|
| API high | 100 |
| CLI slow | 140 |
| CLI near | 124 |
"""
    (tmp_path / "matrix.md").write_text(text)
    specs = parse_file(tmp_path / "matrix.md").rows
    settings = RunSettings(run_id="r", tmp_root=str(tmp_path))
    with Containment() as containment:
        results = [run_row(s, settings, containment) for s in specs]
    finished = finalize_rows(specs, results)
    assert [r.name for r in finished] == ["API high", "CLI slow", "CLI near"]
    by_name = {r.name: r for r in finished}
    # medians: API high 101 (100, 101, 102); CLI slow 141; CLI near 125
    assert by_name["API high"].metrics["duration"].value == pytest.approx(101.0)
    assert by_name["API high"].metrics["duration"].comparison is None  # self-baseline skipped
    assert by_name["API high"].status == "PASS"
    slow = by_name["CLI slow"].metrics["duration"]
    assert slow.comparison is not None
    assert slow.comparison.regression_percent == pytest.approx(40 / 101 * 100)  # (141 - 101) / 101
    assert by_name["CLI slow"].status == "FAIL"
    near = by_name["CLI near"].metrics["duration"]
    assert near.comparison is not None
    assert near.comparison.regression_percent == pytest.approx(24 / 101 * 100)  # 23.8% <= 25%
    assert by_name["CLI near"].status == "PASS"


def test_an_adaptive_row_that_stopped_early_gates_its_metric_on_the_samples_it_took() -> None:
    # 10 of at most 20 samples, each 50 ms against a median max of 30: the metric is judged on those 10 and
    # fails the row. (It used to read "not evaluated: 10 of 20 samples gave a value", and the row passed.)
    slow = replace(spec("slow", ms_metric(aggregate="median", maximum=30.0), repeat=20), sampling=Sampling(max=20))
    (finished,) = finalize_rows([slow], [result(slow, [50.0] * 10)])
    assert finished.metrics["ms"].status == "fail" and finished.status == "FAIL"
    fixed = replace(slow, sampling=None)  # a fixed row cut short still needs its every sample
    (cut,) = finalize_rows([fixed], [result(fixed, [50.0] * 10)])
    assert (cut.metrics["ms"].status, cut.metrics["ms"].error) == ("not_evaluated", "10 of 20 samples gave a value")
