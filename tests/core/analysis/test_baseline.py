"""Comparing a run with a saved baseline: the gate, its tolerance, and failing closed.

Runs are produced the way ``assay run --engine local`` produces them: a
fixture file is planned, run on the local thread pool (tiny ``bash -c``
commands, a few milliseconds each) and completed, so every field the gate
reads (statuses, metric summaries, per-sample values, stochastic figures,
digests) is the one a real run writes. Edge cases a fixture cannot produce
are made with ``dataclasses.replace`` on such a run.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from fixtures_core.analysis.baseline import (
    Comparison,
    MetricDelta,
    RateDelta,
    RowChange,
    check_tolerance,
    compare,
)
from fixtures_core.errors import BaselineError, UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.rundoc import RunResult, decode, encode, load_run
from fixtures_core.records.store import Store, new_run_id
from fixtures_core.reports.comparison import text_lines
from fixtures_core.results import Outcome, RowResult, Status
from fixtures_core.runs.close import complete
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder

# Each sample prints {"ms": MS + sample index, "cost": COST} and exits with CODE.
SCRIPT = 'echo "{\\"ms\\": $(( {{ .ms }} + ASSAY_SAMPLE )), \\"cost\\": {{ .cost }}}"; exit {{ .code }}'

DURATION: dict[str, object] = {
    "name": "duration",
    "extract": "json.ms",
    "unit": "ms",
    "direction": "lower",
    "threshold": {"regressionPercent": 25},
}
# Cost with a direction and a regressionPercent, but gate: false: it must still never gate.
COST: dict[str, object] = {
    "name": "cost",
    "extract": "json.cost",
    "unit": "usd",
    "direction": "lower",
    "threshold": {"regressionPercent": 10},
    "gate": False,
}
METRICS = (DURATION, COST)

Row = tuple[str, int, int, float]  # name, exit code, ms, cost
ALPHA: Row = ("alpha", 0, 100, 0.1)
BETA: Row = ("beta", 0, 200, 0.2)


def fixture_text(rows: Sequence[Row], metrics: Sequence[Mapping[str, object]], repeat: int, args: str) -> str:
    frontmatter = {"exec": "bash", "args": ["-c", args], "repeat": repeat, "metrics": list(metrics)}
    table = ["| Name | code | ms | cost |", "|---|---|---|---|"]
    table += [f"| {name} | {code} | {ms} | {cost} |" for name, code, ms, cost in rows]
    return "---\n" + yaml.safe_dump(frontmatter, sort_keys=False) + "---\n\n# Suite\n\n" + "\n".join(table) + "\n"


def run_suite(
    tmp_path: Path,
    rows: Sequence[Row],
    metrics: Sequence[Mapping[str, object]] = METRICS,
    repeat: int = 3,
    k: int | None = None,
    args: str = SCRIPT,
    comment: str = "",
) -> RunResult:
    """Write ``suite.md`` (always the same path, so rows match across runs) and run it locally."""
    path = tmp_path / "suite.md"
    path.write_text(fixture_text(rows, metrics, repeat, args) + comment, encoding="utf-8")
    options = RunOptions(paths=(str(path),), out=str(tmp_path / ".assay"), k=k, engine="local")
    matrix = plan(options).matrix
    run_id = new_run_id()
    recorder = Recorder(store_for(options), run_id, matrix)
    finished = []
    with Containment() as containment:  # rows one after another: tests/core never imports flows
        for spec in matrix.rows:
            row = run_row(spec, RunSettings(run_id=run_id), containment, on_sample=recorder.on_sample)
            recorder.on_row(row)
            finished.append(row)
    return complete(recorder, options, finished)


def map_rows(run: RunResult, change: Callable[[RowResult], RowResult]) -> RunResult:
    """The run with every row passed through ``change``."""
    fixtures = tuple(replace(f, rows=tuple(change(row) for row in f.rows)) for f in run.fixtures)
    return replace(run, fixtures=fixtures)


def with_status(run: RunResult, name: str, status: Status) -> RunResult:
    return map_rows(run, lambda row: replace(row, status=status) if row.name == name else row)


def rate(comparison: Comparison, name: str) -> RateDelta:
    return next(r for r in comparison.rates if r.name == name)


def metric(comparison: Comparison, row: str, name: str) -> MetricDelta:
    return next(m for m in comparison.metrics if m.row == row and m.name == name)


@pytest.fixture
def suite(tmp_path: Path) -> RunResult:
    """alpha and beta, both passing, 3 samples each."""
    return run_suite(tmp_path, [ALPHA, BETA])


# --- no change, improvements ----------------------------------------------------


def test_unchanged_run_against_itself_does_not_regress(suite: RunResult) -> None:
    comparison = compare(suite, suite, baseline_path="shipped")

    assert comparison.regressed is False
    assert comparison.baseline == "shipped"
    assert comparison.changes == () and comparison.added == () and comparison.removed == ()
    assert comparison.warnings == ()
    assert [r.name for r in comparison.rates] == ["pass rate", "sample pass rate", "pass@k", "pass^k"]
    for line in comparison.rates:
        assert line.gating and not line.regressed
        assert line.delta is not None and math.isclose(line.delta, 0.0, abs_tol=1e-12)
    assert {(m.row, m.name) for m in comparison.metrics} == {
        ("alpha", "duration"),
        ("alpha", "cost"),
        ("beta", "duration"),
        ("beta", "cost"),
    }
    assert not any(m.regressed for m in comparison.metrics)
    assert text_lines(comparison)[-1] == "No regression against baseline"


def test_improvements_never_gate(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2)])
    current = run_suite(tmp_path, [("alpha", 0, 50, 0.05), BETA])  # beta fixed, alpha twice as fast

    comparison = compare(baseline, current)

    assert comparison.regressed is False
    assert comparison.changes == (RowChange("beta", current.rows[1].file, "FAIL", "PASS", False),)
    assert rate(comparison, "pass rate").delta == pytest.approx(0.5)  # 1/2 -> 2/2
    assert not any(r.regressed for r in comparison.rates)
    duration = metric(comparison, "alpha", "duration")
    # mean 101 -> 51: (51 - 101) / 101 * 100 = -49.5%
    assert duration.gating and not duration.regressed
    assert duration.delta_percent == pytest.approx(-5000 / 101)


# --- a passing row that breaks ----------------------------------------------------


def test_pass_to_fail_gates_whatever_the_tolerance(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2)])

    comparison = compare(baseline, current, tolerance=0.99)

    assert comparison.regressed is True
    [change] = comparison.changes
    assert (change.row, change.before, change.after, change.gating) == ("beta", "PASS", "FAIL", True)
    assert "p_value" not in encode(change)  # no significance test (seeds 01 and 04)
    # The pass rate fell 1.0 -> 0.5, within 0.99: the rate itself does not gate.
    pass_rate = rate(comparison, "pass rate")
    assert pass_rate.gating and not pass_rate.regressed
    assert pass_rate.note == "drop within tolerance 0.990"
    lines = text_lines(comparison)
    assert lines[0] == "Baseline comparison (tolerance 0.990)"
    assert lines[1] == f"baseline: run {baseline.run_id}, started {baseline.started_at}" + (
        f", commit {comparison.baseline_facts.commit[:12]}" if comparison.baseline_facts.commit else ""
    )
    assert "! beta  PASS -> FAIL" in lines  # the p-value stays in run.json, not in the report
    assert not any("p=" in line for line in lines)
    assert lines[-1] == "Regression against baseline"


@pytest.mark.parametrize(
    ("before", "after", "gating"),
    [
        ("PASS", "FAIL", True),
        ("PASS", "ERR", True),
        ("PASS", "SKIP", False),
        ("FAIL", "ERR", False),
        ("ERR", "FAIL", False),
        ("FAIL", "PASS", False),
    ],
)
def test_only_a_passing_row_that_fails_or_errors_gates(
    suite: RunResult, before: Status, after: Status, gating: bool
) -> None:
    comparison = compare(with_status(suite, "beta", before), with_status(suite, "beta", after), tolerance=1.0)

    [change] = comparison.changes
    assert (change.before, change.after, change.gating) == (before, after, gating)
    assert comparison.regressed is gating


def test_regressions_sort_first(tmp_path: Path) -> None:
    gamma: Row = ("gamma", 0, 100, 0.1)
    baseline = run_suite(tmp_path, [("alpha", 1, 100, 0.1), BETA, gamma])
    # alpha is fixed (listed first, informational); beta breaks; gamma gets 4x slower.
    current = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2), ("gamma", 0, 400, 0.1)])

    comparison = compare(baseline, current, tolerance=1.0)

    assert [(c.row, c.gating) for c in comparison.changes] == [("beta", True), ("alpha", False)]
    first = comparison.metrics[0]
    assert (first.row, first.name, first.regressed) == ("gamma", "duration", True)
    assert not any(m.regressed for m in comparison.metrics[1:])
    # A failed sample gives no metric value: alpha's baseline and beta's current are noted, not compared.
    assert metric(comparison, "beta", "duration").note == "no value in current: 0 of 3 samples gave a value"


# --- metrics ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "worse_percent", "gates"),
    [
        (150, 5000 / 101, True),  # mean 101 -> 151: +49.5% > 25%
        (110, 1000 / 101, False),  # mean 101 -> 111: +9.9% <= 25%
    ],
)
def test_metric_gates_beyond_its_regression_percent(tmp_path: Path, ms: int, worse_percent: float, gates: bool) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [("alpha", 0, ms, 0.1), BETA])

    comparison = compare(baseline, current)

    duration = metric(comparison, "alpha", "duration")
    assert duration.gating is True
    assert duration.regressed is gates
    assert comparison.regressed is gates
    assert duration.delta_percent == pytest.approx(worse_percent)
    assert duration.baseline == pytest.approx(101) and duration.current == pytest.approx(ms + 1)
    assert "p_value" not in encode(duration)  # no significance test (seeds 01 and 04)
    assert comparison.changes == ()  # the row itself still passes: only the comparison gates
    if gates:
        assert duration.note == "49.5% worse, allowed 25%"
        assert any(line.startswith("! alpha: duration (ms)") for line in text_lines(comparison))


@pytest.mark.parametrize(("ms", "gates"), [(106, True), (105, False)])
def test_metric_gates_beyond_its_regression_points(tmp_path: Path, ms: int, gates: bool) -> None:
    points: dict[str, object] = {**DURATION, "threshold": {"regressionPoints": 5}}
    baseline = run_suite(tmp_path, [ALPHA], metrics=[points])
    current = run_suite(tmp_path, [("alpha", 0, ms, 0.1)], metrics=[points])

    line = metric(compare(baseline, current), "alpha", "duration")

    # mean 101 -> ms + 1: 6 ms worse gates against 5 allowed, 5 ms worse does not
    assert (line.gating, line.regressed) == (True, gates)
    if gates:
        assert line.note == "6 ms worse, allowed 5 ms"


def test_zero_baseline_is_compared_in_points(tmp_path: Path) -> None:
    errors: dict[str, object] = {"name": "errors", "extract": "json.cost", "unit": "count", "direction": "lower",
              "threshold": {"regressionPoints": 2}}  # fmt: skip
    baseline = run_suite(tmp_path, [("alpha", 0, 100, 0)], metrics=[errors])
    current = run_suite(tmp_path, [("alpha", 0, 100, 3)], metrics=[errors])

    comparison = compare(baseline, current)

    line = metric(comparison, "alpha", "errors")
    assert (line.gating, line.regressed, line.delta_percent) == (True, True, None)  # 0 -> 3: 3 > 2 points
    assert comparison.regressed is True


@pytest.mark.parametrize(
    ("before", "after", "regressed"),
    [(-1e308, 1e308, True), (1e308, -1e308, False), (5e-324, 1.0, True)],  # changes beyond a double
)
def test_a_change_beyond_a_double_gates_and_is_not_recorded(
    suite: RunResult, before: float, after: float, regressed: bool
) -> None:
    def valued(value: float) -> Callable[[RowResult], RowResult]:
        def change(row: RowResult) -> RowResult:
            ms = replace(row.metrics["duration"], value=value, values=(value,))
            return replace(row, metrics={**row.metrics, "duration": ms})

        return change

    comparison = compare(map_rows(suite, valued(before)), map_rows(suite, valued(after)))

    line = metric(comparison, "alpha", "duration")
    assert (line.gating, line.regressed, line.delta_percent) == (True, regressed, None)
    assert comparison.regressed is regressed
    assert decode(encode(comparison), Comparison) == comparison  # a run document holds finite numbers only


def test_a_renamed_metric_gate_fails_closed(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    renamed = {**DURATION, "name": "wall"}
    current = run_suite(tmp_path, [ALPHA, BETA], metrics=[renamed, COST])

    with pytest.raises(BaselineError, match="metric gate 'duration' of the baseline matches no metric of this run"):
        compare(baseline, current, baseline_path="shipped")


def test_a_removed_metric_gate_is_skipped_while_another_still_gates(tmp_path: Path) -> None:
    # seed 03: a metric on one side only is reported and skipped; fail closed only when none is shared
    tokens = {"name": "tokens", "extract": "json.cost * 1000.0", "unit": "tokens", "direction": "lower",
              "threshold": {"regressionPercent": 10}}  # fmt: skip
    baseline = run_suite(tmp_path, [ALPHA, BETA], metrics=[DURATION, tokens])
    current = run_suite(tmp_path, [("alpha", 0, 300, 0.1), BETA], metrics=[DURATION])  # tokens removed; alpha slower

    comparison = compare(baseline, current, baseline_path="shipped")

    assert metric(comparison, "alpha", "tokens").note == "only in baseline"
    assert comparison.warnings[0] == "metric gate 'tokens' of the baseline is not in this run: not checked " \
        "(still gating: 'duration')"  # fmt: skip
    assert metric(comparison, "alpha", "duration").regressed and comparison.regressed  # the other gate still holds


def test_a_renamed_informational_metric_is_only_listed(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [ALPHA, BETA], metrics=[DURATION, {**COST, "name": "price"}])

    comparison = compare(baseline, current)

    assert metric(comparison, "alpha", "cost").note == "only in baseline"
    assert comparison.regressed is False


def test_a_row_failing_in_both_runs_is_reported_and_the_verdict_is_no_regression(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2)])
    current = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2)])
    assert current.status == "FAIL"

    comparison = compare(baseline, current)

    assert comparison.regressed is False
    assert comparison.still_failing == (f"{current.rows[1].file}::beta",)
    assert "· still failing, as in the baseline (not a regression): beta" in text_lines(comparison)
    verdict = replace(current, comparison=comparison).verdict
    # two answers: the run's own is FAIL; the gate's, "did it regress?", is no, and it decides the exit code
    assert (verdict.status, verdict.regressed, verdict.exit_code) == ("FAIL", False, 0)
    assert (current.verdict.status, current.verdict.exit_code) == ("FAIL", 1)  # without a baseline the row decides


def test_cost_metric_that_doubles_never_gates(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [("alpha", 0, 100, 0.2), BETA])

    comparison = compare(baseline, current)

    cost = metric(comparison, "alpha", "cost")
    assert (cost.gating, cost.regressed) == (False, False)
    assert cost.delta_percent == pytest.approx(100.0)
    assert comparison.regressed is False
    assert any(line.startswith("· alpha: cost (usd)") for line in text_lines(comparison))


def test_metric_without_direction_is_informational(tmp_path: Path) -> None:
    tokens: dict[str, object] = {"name": "tokens", "extract": "json.ms", "unit": "tokens"}
    baseline = run_suite(tmp_path, [ALPHA], metrics=[tokens])
    current = run_suite(tmp_path, [("alpha", 0, 1000, 0.1)], metrics=[tokens])

    line = metric(compare(baseline, current), "alpha", "tokens")

    assert (line.gating, line.regressed) == (False, False)
    assert line.delta_percent == pytest.approx(90000 / 101)  # 101 -> 1001


def test_metric_on_one_side_only_is_listed_not_gated(tmp_path: Path) -> None:
    only_duration = run_suite(tmp_path, [ALPHA], metrics=[DURATION])
    both = run_suite(tmp_path, [ALPHA], metrics=[DURATION, COST])

    added = metric(compare(only_duration, both), "alpha", "cost")
    dropped = metric(compare(both, only_duration), "alpha", "cost")

    assert (added.note, added.unit, added.baseline, added.delta_percent) == ("only in current", "usd", None, None)
    assert added.current == pytest.approx(0.1)
    assert (dropped.note, dropped.current, dropped.delta_percent) == ("only in baseline", None, None)
    assert dropped.baseline == pytest.approx(0.1)
    for line in (added, dropped):
        assert (line.gating, line.regressed) == (False, False)
    assert compare(only_duration, both).regressed is False and compare(both, only_duration).regressed is False


def test_zero_baseline_value_is_noted_not_compared(tmp_path: Path) -> None:
    errors: dict[str, object] = {"name": "errors", "extract": "json.cost", "unit": "count", "direction": "lower",
              "threshold": {"regressionPercent": 10}}  # fmt: skip
    baseline = run_suite(tmp_path, [("alpha", 0, 100, 0)], metrics=[errors])
    current = run_suite(tmp_path, [("alpha", 0, 100, 5)], metrics=[errors])

    comparison = compare(baseline, current)

    line = metric(comparison, "alpha", "errors")
    assert (line.gating, line.regressed, line.delta_percent) == (False, False, None)
    assert line.note is not None and line.note.startswith("baseline value is 0")
    assert comparison.regressed is False


def test_incomplete_baseline_aggregate_is_noted_not_compared(tmp_path: Path) -> None:
    # Sample 1 fails in the baseline, so its duration aggregate covers 2 of 3 samples only.
    flaky = 'echo "{\\"ms\\": {{ .ms }}, \\"cost\\": {{ .cost }}}"; test "$ASSAY_SAMPLE" != 1'
    baseline = run_suite(tmp_path, [ALPHA], args=flaky)
    current = run_suite(tmp_path, [("alpha", 0, 200, 0.1)])
    assert baseline.rows[0].metrics["duration"].status == "not_evaluated"

    comparison = compare(baseline, current)

    line = metric(comparison, "alpha", "duration")
    assert (line.gating, line.regressed, line.delta_percent) == (False, False, None)
    assert line.baseline == pytest.approx(100.0) and line.current == pytest.approx(201.0)
    assert line.note == "baseline value incomplete: 2 of 3 samples gave a value"
    assert comparison.regressed is False
    assert any(text.startswith("· alpha: duration (ms)") for text in text_lines(comparison))


@pytest.mark.parametrize("side", ["baseline", "current"])
@pytest.mark.parametrize(
    ("status", "error", "note"),
    [
        ("not_evaluated", "2 of 3 samples gave a value", "value incomplete: 2 of 3 samples gave a value"),
        ("error", "sample 1: json.ms failed: no such key: ms", "error: sample 1: json.ms failed: no such key: ms"),
    ],
)
def test_metric_not_complete_on_either_side_never_gates(
    tmp_path: Path, side: str, status: Outcome, error: str, note: str
) -> None:
    baseline = run_suite(tmp_path, [ALPHA])
    current = run_suite(tmp_path, [("alpha", 0, 300, 0.1)])

    def incomplete(row: RowResult) -> RowResult:
        summary = replace(row.metrics["duration"], status=status, error=error)
        return replace(row, metrics={**row.metrics, "duration": summary})

    if side == "baseline":
        baseline = map_rows(baseline, incomplete)
    else:
        current = map_rows(current, incomplete)
    comparison = compare(baseline, current)

    line = metric(comparison, "alpha", "duration")
    assert (line.gating, line.regressed, line.delta_percent) == (False, False, None)
    assert line.note == f"{side} {note}"
    assert comparison.regressed is False


# --- added and removed rows -------------------------------------------------------


def test_added_failing_row_gates_through_the_pass_rate(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA])
    current = run_suite(tmp_path, [ALPHA, ("gamma", 1, 100, 0.1)])
    file = current.rows[0].file

    comparison = compare(baseline, current)

    assert comparison.added == (f"{file}::gamma",)
    assert comparison.changes == (RowChange("gamma", file, None, "FAIL", False),)
    pass_rate = rate(comparison, "pass rate")
    # Baseline 1/1 against current 1/2: a drop of 0.5.
    assert (pass_rate.baseline, pass_rate.current, pass_rate.regressed) == (1.0, 0.5, True)
    assert comparison.regressed is True
    assert "· gamma  (absent) -> FAIL" in text_lines(comparison)
    # A tolerance of 0.5 absorbs exactly that drop (it must be exceeded).
    assert compare(baseline, current, tolerance=0.5).regressed is False


def test_removed_row_is_listed_and_neither_helps_nor_hurts(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, ("beta", 1, 200, 0.2)])
    current = run_suite(tmp_path, [ALPHA])
    file = current.rows[0].file

    comparison = compare(baseline, current)

    assert comparison.removed == (f"{file}::beta",)
    assert comparison.changes == (RowChange("beta", file, "FAIL", None, False),)
    # Baseline rates are over the rows in common: alpha alone, 1/1 on both sides.
    pass_rate = rate(comparison, "pass rate")
    assert (pass_rate.baseline, pass_rate.current) == (1.0, 1.0)
    assert pass_rate.note == "baseline over the 1 row both runs ran"
    assert comparison.regressed is False


def test_newly_skipped_failing_row_does_not_raise_the_pass_rate(suite: RunResult) -> None:
    baseline = with_status(suite, "beta", "FAIL")
    current = with_status(suite, "beta", "SKIP")

    comparison = compare(baseline, current)

    pass_rate = rate(comparison, "pass rate")
    # Baseline over alpha only (beta did not run now): 1/1 against 1/1, not 1/2 against 1/1.
    assert (pass_rate.baseline, pass_rate.current) == (1.0, 1.0)
    assert pass_rate.note == "baseline over the 1 row both runs ran"
    assert [(c.before, c.after, c.gating) for c in comparison.changes] == [("FAIL", "SKIP", False)]
    assert {m.row for m in comparison.metrics} == {"alpha"}  # no metric lines for a row that did not run


# --- suite figures ----------------------------------------------------------------


def test_withheld_pass_at_k_is_shown_never_compared_as_zero(suite: RunResult) -> None:
    def withhold(row: RowResult) -> RowResult:
        assert row.stochastic is not None
        stochastic = replace(row.stochastic, pass_at_k=None, pass_hat_k=None, withheld="sample 1 errored")
        return replace(row, stochastic=stochastic) if row.name == "beta" else row

    comparison = compare(suite, map_rows(suite, withhold))

    for name in ("pass@k", "pass^k"):
        line = rate(comparison, name)
        assert (line.current, line.delta, line.gating, line.regressed) == (None, None, False, False)
        assert line.note == "withheld in current: row 'beta' (sample 1 errored)"
    assert comparison.regressed is False


def test_pass_at_k_with_another_k_is_not_compared(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [ALPHA, BETA], k=2)

    line = rate(compare(baseline, current), "pass@k")

    assert (line.gating, line.regressed, line.delta) == (False, False, None)
    assert line.note == "k differs (baseline each row's n, current 2); not compared"


# --- failing closed ---------------------------------------------------------------


def test_baseline_without_rows_fails_closed(suite: RunResult) -> None:
    empty = replace(suite, fixtures=())

    with pytest.raises(BaselineError, match="baseline has no rows") as caught:
        compare(empty, suite, baseline_path="old.json")
    assert caught.value.path == "old.json"


def test_no_row_in_common_fails_closed(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA, BETA])
    current = run_suite(tmp_path, [("delta", 0, 100, 0.1)])

    with pytest.raises(BaselineError, match="no row in common") as caught:
        compare(baseline, current)
    assert "baseline: 2 rows" in caught.value.reason and "current: 1 row" in caught.value.reason


def test_empty_current_run_fails_closed(suite: RunResult) -> None:
    with pytest.raises(BaselineError, match="current: 0 rows"):
        compare(suite, replace(suite, fixtures=()))


def test_rows_in_common_that_never_ran_on_both_sides_fail_closed(suite: RunResult) -> None:
    skipped = with_status(with_status(suite, "alpha", "SKIP"), "beta", "SKIP")

    with pytest.raises(BaselineError, match="none of the 2 rows in common ran in both runs"):
        compare(suite, skipped)


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan])
def test_tolerance_outside_zero_to_one_is_a_usage_error(suite: RunResult, value: float) -> None:
    with pytest.raises(UsageError, match=str(value)):
        check_tolerance(value)
    with pytest.raises(UsageError, match="--regression-tolerance"):
        compare(suite, suite, tolerance=value)


@pytest.mark.parametrize("value", [0, 0.0, 0.05, 1.0])
def test_tolerance_within_zero_to_one_is_accepted(value: float) -> None:
    assert check_tolerance(value) == value


# --- warnings, saved runs ---------------------------------------------------


def test_changed_fixture_and_command_are_warnings(tmp_path: Path) -> None:
    baseline = run_suite(tmp_path, [ALPHA])
    edited = run_suite(tmp_path, [ALPHA], comment="\nA note added later.\n")
    recommanded = run_suite(tmp_path, [ALPHA], args=SCRIPT + " # same outcome")

    [digest] = compare(baseline, edited).warnings
    assert digest.startswith(f"fixture {baseline.fixtures[0].file} changed since the baseline (sha256 ")
    assert baseline.fixtures[0].sha256[:12] in digest
    command = compare(baseline, recommanded).warnings
    assert any("row 'alpha'" in w and "runs another command" in w for w in command)
    assert compare(baseline, edited).regressed is False
    assert "warning: " + digest in text_lines(compare(baseline, edited))


def test_saved_run_compares_equal_to_itself(tmp_path: Path, suite: RunResult) -> None:
    path = Store(tmp_path / "saved").write_run(suite)
    loaded = load_run(path)

    assert compare(loaded, suite, baseline_path="b") == compare(suite, suite, baseline_path="b")
    assert compare(suite, loaded, baseline_path="b") == compare(suite, suite, baseline_path="b")
