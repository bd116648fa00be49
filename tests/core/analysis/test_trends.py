"""Trends on seeded histories: a flip, a flaky streak, a metric step, cost, and "since the previous run".

Each history is written out by hand, run by run (oldest first), so the expected answer is plain to see
beside it; the runs are built as run documents would load, without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import pytest

from fixtures_core.analysis.finalize import Summary
from fixtures_core.analysis.trends import (
    MIN_SIDE,
    failure_ages,
    find_step,
    run_costs,
    since_previous,
    statuses_of,
    trends,
)
from fixtures_core.records.rundoc import FixtureResult, RunResult
from fixtures_core.reports.trends import age_text, headline, move_text, since_lines
from fixtures_core.results import Check, MetricSummary, Outcomes, RowResult, SampleResult, Stochastic
from fixtures_core.verdicts.precedence import worst

FILE = "nightly.md"


def row(name: str, passed: int, n: int = 3, metrics: Mapping[str, float] | None = None) -> RowResult:
    """A row whose first ``passed`` of ``n`` samples passed (status FAIL unless all did); each metric one value."""
    samples = tuple(
        SampleResult(i, "PASS" if i < passed else "FAIL", 1.0, 0, "", "", Check("pass" if i < passed else "fail"))
        for i in range(n)
    )
    kind = "stable-pass" if passed == n else "stable-fail" if passed == 0 else "flaky"
    summaries = {
        name: MetricSummary("usd" if "cost" in name else "ms", "mean", "lower", "cost" not in name, (v,) * n, "pass", v)
        for name, v in (metrics or {}).items()
    }
    return RowResult(
        id=f"{FILE}::{name}",
        file=FILE,
        name=name,
        line=1,
        status="PASS" if passed == n else "FAIL",
        repeat=n,
        command=("agent",),
        properties={},
        samples=samples,
        outcomes=Outcomes("pass", "pass" if passed == n else "fail"),
        metrics=summaries,
        stochastic=Stochastic(n, passed, n, passed / n, kind),  # type: ignore[arg-type]
    )


def run(night: int, rows: Sequence[RowResult], label: str = "nightly") -> RunResult:
    return RunResult(
        run_id=f"202612{night + 1:02d}T020000.000000Z-abc1234-main",
        started_at=f"2026-12-{night + 1:02d}T02:00:00Z",
        finished_at=f"2026-12-{night + 1:02d}T02:10:00Z",
        status=worst(*(r.status for r in rows)),
        fixtures=(FixtureResult(FILE, "sha", tuple(rows)),),
        summary=Summary.of(rows),
        label=label,
        environment={"git": {"commit": "abc1234def567890", "branch": "main"}},
    )


def history(nights: int = 14) -> list[RunResult]:
    """steady passes every night; breaks passes until the last night; wobbly fails one sample of three on
    nights 3, 6, 9 and 11 (0-based); slower takes 1000 ms until night 9, then 1500 ms, and costs twice as much."""
    runs = []
    for night in range(nights):
        runs.append(
            run(
                night,
                [
                    row("steady", 3, metrics={"latency_ms": 100.0 + night % 3}),
                    row("breaks", 3 if night < nights - 1 else 0, metrics={"latency_ms": 200.0}),
                    row("wobbly", 2 if night in (3, 6, 9, 11) else 3, metrics={"latency_ms": 300.0}),
                    row("slower", 3, metrics={"latency_ms": 1000.0 if night < 9 else 1500.0,
                                              "cost_usd": 0.01 if night < 9 else 0.02}),
                ],
            )
        )  # fmt: skip
    return runs


def test_a_flip_since_the_previous_run_is_found_and_named_first() -> None:
    found = trends(history())

    assert [r.name for r in found.flipped] == ["breaks"]
    first = found.rows[0]
    assert (first.name, first.flip, first.latest) == ("breaks", ("PASS", "FAIL"), "FAIL")
    assert first.statuses == ("PASS",) * 13 + ("FAIL",)
    assert first.flips == 1
    assert all(r.flip is None for r in found.rows[1:])


def test_a_flaky_streak_counts_the_runs_it_was_flaky_in() -> None:
    found = trends(history())
    wobbly = next(r for r in found.rows if r.name == "wobbly")

    assert (wobbly.flaky_runs, wobbly.ran) == (4, 14)  # "flaky in 4 of the last 14 runs"
    assert [r.name for r in found.flaky] == ["wobbly"]
    assert wobbly.flips == 8  # PASS -> FAIL -> PASS around each of its 4 flaky nights
    # The last 7 runs (nights 7..13): flaky on nights 9 and 11.
    window = trends(history()[-7:])
    assert next(r for r in window.rows if r.name == "wobbly").flaky_runs == 2


def test_a_metric_step_is_found_where_the_level_changed() -> None:
    found = trends(history())
    slower = next(r for r in found.rows if r.name == "slower")
    latency = next(m for m in slower.metrics if m.name == "latency_ms")

    assert latency.step is not None
    # 9 runs at 1000 ms, then 5 at 1500: the split that fits two flat levels best is before night 9.
    assert latency.step.index == 9
    assert (latency.step.before, latency.step.after) == (1000.0, 1500.0)
    assert latency.step.change == pytest.approx(0.5)
    assert latency.worse is True  # lower is better, and it went up
    # steady wanders 100, 101, 102: within 10% of its level, no step; nor for flat series.
    assert all(m.step is None for r in found.rows if r.name != "slower" for m in r.metrics)


@pytest.mark.parametrize(
    ("values", "index"),
    [
        ([10, 10, 10, 10, 20, 20, 20], 4),  # a clean step
        ([10, 11, 9, 10, 30, 29, 31, 30], 4),  # noise of 1 around each level, a step of 20
        ([10, 10, None, 10, 20, None, 20], 4),  # runs without a value keep their place
        ([20, 20, 20, 10, 10], 3),  # down as well as up
    ],
)
def test_steps_on_seeded_series(values: list[float | None], index: int) -> None:
    step = find_step(values)
    assert step is not None and step.index == index


@pytest.mark.parametrize(
    "values",
    [
        [100, 101, 100, 102, 101, 103],  # under 10% of the level
        [10, 30, 10, 30, 10, 30, 10, 30],  # alternating: the two parts' medians are no more apart than the noise
        [10, 10, 10, 50],  # a single outlier at the end: the later part needs MIN_SIDE runs
        [10, 20, 30],  # too short for two parts of MIN_SIDE runs
    ],
)
def test_no_step_where_the_rule_sees_none(values: list[float]) -> None:
    assert MIN_SIDE == 2
    assert find_step(values) is None


def test_cost_per_run_and_in_total() -> None:
    runs = history()
    found = trends(runs)

    assert [c.metric for c in run_costs(runs[0])] == ["cost_usd"]
    per_run = [p.cost.total if p.cost else None for p in found.runs]
    assert per_run == pytest.approx([0.03] * 9 + [0.06] * 5)  # 3 samples x 0.01, then x 0.02
    (total,) = found.total_cost()
    assert (total.metric, total.unit, total.samples) == ("cost_usd", "usd", 42)
    assert total.total == pytest.approx(9 * 0.03 + 5 * 0.06)


def test_since_the_previous_run_names_new_failures_fixed_rows_and_the_cost_change() -> None:
    before = run(0, [row("a", 3), row("b", 0), row("c", 0), row("d", 3, metrics={"cost_usd": 1.0})])
    after = run(1, [row("a", 0), row("b", 3), row("c", 0), row("d", 3, metrics={"cost_usd": 1.12}), row("e", 0)])

    since = since_previous(before, after)

    assert since.new_failures == ("a", "e")  # a passed before; e is new
    assert since.fixed == ("b",)
    assert since.still_failing == ("c",)
    assert since.previous.run_id == before.run_id and since.previous.commit == "abc1234def567890"
    assert since.cost_change == pytest.approx(0.12)  # 3 x 1.0 -> 3 x 1.12


def broke_four_nights_ago(nights: int = 14) -> list[RunResult]:
    """steady passes; breaks passes until night 10 and fails from then on (nights 10..13: 4 runs); wobbly is
    flaky on nights 3, 6, 9 and 11; gone runs on nights 0..9 only."""
    runs = []
    for night in range(nights):
        rows = [
            row("steady", 3),
            row("breaks", 3 if night < 10 else 0),
            row("wobbly", 2 if night in (3, 6, 9, 11) else 3),
        ]
        runs.append(run(night, rows + ([row("gone", 3)] if night < 10 else [])))
    return runs


def test_a_failure_is_dated_from_the_first_run_of_its_unbroken_streak() -> None:
    runs = broke_four_nights_ago()
    found = trends(runs)

    breaks = found.rows[0]  # failing now comes first, though it flipped nights ago
    assert breaks.name == "breaks" and breaks.flip is None
    assert breaks.age is not None
    assert (breaks.age.runs, breaks.age.number, breaks.age.since.run_id) == (4, 11, runs[10].run_id)
    assert not breaks.age.new and not breaks.age.at_least
    assert [r.name for r in found.failing] == ["breaks"]
    assert breaks.change is not None and (breaks.change.index, breaks.change.before) == (10, "PASS")


def test_a_streak_ends_at_a_run_the_row_passed_or_did_not_run_in() -> None:
    absent = run(1, [row("steady", 3)])
    before = run(0, [row("x", 0)])
    now = run(2, [row("x", 0), row("steady", 0)])

    ages = {age.name: age for age in failure_ages(now, [statuses_of(absent), statuses_of(before)])}

    assert ages["x"].new and ages["steady"].new  # x did not run in the run before: its old failure is another one
    passed_then = run(1, [row("x", 3)])
    assert failure_ages(now, [statuses_of(passed_then), statuses_of(before)])[0].new


def test_an_age_that_reaches_the_oldest_run_read_may_be_older() -> None:
    runs = broke_four_nights_ago()[-3:]  # the last 3 nights, all failing for breaks
    breaks = trends(runs, complete=False).rows[0]
    assert breaks.age is not None and breaks.age.at_least and breaks.age.runs == 3
    assert age_text(breaks.age) == (
        f"failing since run 1 ({runs[0].run_id}, 2026-12-12, commit abc1234def56) or before, 3 runs or more"
    )
    complete = trends(runs).rows[0].age
    assert complete is not None and not complete.at_least


def test_the_trends_headline_leads_with_the_verdict_the_oldest_open_break_and_the_window_changes() -> None:
    runs = broke_four_nights_ago()
    lines = headline(trends(runs))

    assert lines[0] == (
        f"newest run (14 of 14): FAIL, 1 of 3 rows failing: {runs[-1].run_id} "
        "(label 'nightly', started 2026-12-14T02:00:00Z, commit abc1234def56)"
    )
    assert lines[1] == (
        f"failing now, the oldest break first: 'breaks' failing since run 11 ({runs[10].run_id}, 2026-12-11, "
        "commit abc1234def56), 4 runs"
    )
    assert (
        lines[2]
        == "2 rows changed in the last 14 runs: 'wobbly' FAIL -> PASS at run 13, 'breaks' PASS -> FAIL at run 11"
    )
    assert "no row flipped since the previous run" in lines


def test_since_the_previous_run_names_every_failing_row_with_its_age() -> None:
    runs = broke_four_nights_ago()
    now = run(14, [row("steady", 0), row("breaks", 0), row("wobbly", 3)])

    since = since_previous(runs[-1], now, [statuses_of(earlier) for earlier in reversed(runs[:-1])])

    assert since.new_failures == ("steady",) and since.still_failing == ("breaks",)
    told = since_lines(since)
    assert "new failures: 'steady', all new tonight" in told
    assert (
        f"still failing: 'breaks' failing since run {runs[10].run_id} (2026-12-11, commit abc1234def56), 5 runs" in told
    )
    ages = {age.name: age_text(age) for age in since.ages}
    assert ages["steady"] == "new tonight"


def matrix_night(night: int, slow: set[str], factor: float = 1.35) -> RunResult:
    """4 providers x 5 models; the ``slow`` providers' latency times ``factor``; openai m1 5% slower."""
    rows = []
    for provider in ("anthropic", "openai", "google", "local"):
        for model in range(5):
            ms = 100.0 + 10 * model
            ms *= factor if provider in slow else 1.05 if (provider, model) == ("openai", 1) and night else 1.0
            made = row(f"{provider} m{model}", 3, metrics={"latency_ms": ms, "cost_usd": 0.01})
            rows.append(replace(made, properties={"provider": provider, "model": f"m{model}"}))
    return run(night, rows)


def test_metric_moves_since_the_previous_run_are_grouped_by_what_the_rows_share() -> None:
    since = since_previous(matrix_night(0, set()), matrix_night(1, {"anthropic"}))

    (move,) = since.moves  # openai m1's 5% is under the step rule's 10%; cost did not move
    assert (move.metric, move.up, move.worse, move.shared, move.of) == (
        "latency_ms", True, True, ("provider", "anthropic"), 5
    )  # fmt: skip
    assert move_text(move) == "latency_ms +35% on 5 rows: provider=anthropic (worse)"
    assert since_lines(since)[:2] == [
        "since the previous run: 0 new failures, 0 fixed, 1 metric moved, cost +0% (0.6 -> 0.6 usd)",
        "metric moved: latency_ms +35% on 5 rows: provider=anthropic (worse)",
    ]


def test_moves_on_rows_that_share_nothing_are_named() -> None:
    before = run(0, [row("a", 3, metrics={"latency_ms": 100.0}), row("b", 3, metrics={"latency_ms": 200.0})])
    after = run(1, [row("a", 3, metrics={"latency_ms": 50.0}), row("b", 3, metrics={"latency_ms": 80.0})])
    (move,) = since_previous(before, after).moves
    assert move_text(move) == "latency_ms -60% to -50% on 2 rows: 'a', 'b' (better)"
