"""Adaptive sampling's sequential tests: boundaries derived by hand, the gates of a row, and the
error bound under optional stopping checked on seeded simulations (no timing, no randomness unseeded)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.sequential import FLAKY_FLOOR, decide, progress, sprt
from fixtures_core.spec import Expectation, MetricSpec, RowSpec, Sampling, Threshold
from fixtures_core.verdicts.row import ran


def first_decided(outcomes: list[bool], low: float, high: float, alpha: float) -> tuple[int, str] | None:
    for n in range(1, len(outcomes) + 1):
        found = sprt(sum(outcomes[:n]), n, low, high, alpha)
        if found is not None:
            return n, found
    return None


def test_all_passes_against_a_zone_of_0_7_to_0_9_decide_high_after_10() -> None:
    # The evidence for "high" is the mean of (0.9/0.7)^n and (1/0.7)^n (no failure yet):
    #   n = 9:  (9.60 + 24.78) / 2 = 17.19 < 20 = 1/alpha
    #   n = 10: (12.35 + 35.40) / 2 = 23.87 >= 20
    assert first_decided([True] * 20, 0.7, 0.9, 0.05) == (10, "high")


def test_one_failure_costs_the_extreme_alternative() -> None:
    # After a failure (1/0.7)^n is gone: only (0.9/0.7)^passes * (0.1/0.3) is left, halved by the mixture:
    #   0.5 * 1.2857^p / 3 >= 20  <=>  p >= ln(120) / ln(1.2857) = 19.05, so 20 passes and the failure: n = 21.
    assert first_decided([False] + [True] * 30, 0.7, 0.9, 0.05) == (21, "high")


def test_failures_against_the_zone_decide_low() -> None:
    # Evidence for "low": the mean of (0.3/0.1)^f (0.7/0.9)^p and (1/0.1)^f (a pass rules p = 0 out):
    #   all failures: n = 2: (9 + 100) / 2 = 54.5 >= 20; n = 1: (3 + 10) / 2 = 6.5 < 20
    assert first_decided([False] * 5, 0.7, 0.9, 0.05) == (2, "low")
    #   pass, then failures: 3^f * 0.778 / 2 >= 20  <=>  3^f >= 51.4  <=>  f >= 3.59: four failures, n = 5
    assert first_decided([True] + [False] * 5, 0.7, 0.9, 0.05) == (5, "low")


def test_pass_rate_1_fails_at_the_first_failure_and_passes_only_after_29() -> None:
    # high = 1: a failure rules p >= 1 out at once (exact, no error). Passing needs (1/0.9)^n >= 20:
    #   n >= ln(20) / ln(1/0.9) = 28.43, so 29 samples: more than a max of 20 (the row runs to max).
    assert first_decided([True, True, False], 0.9, 1.0, 0.05) == (3, "low")
    assert first_decided([True] * 40, 0.9, 1.0, 0.05) == (29, "high")


def test_never_passing_is_told_from_flaky_after_11() -> None:
    # (1 / (1 - 0.25))^n >= 20  <=>  n >= ln(20) / ln(4/3) = 10.41: 11 failures in a row.
    assert FLAKY_FLOOR == 0.25
    assert first_decided([False] * 20, 0.0, FLAKY_FLOOR, 0.05) == (11, "low")


@pytest.mark.parametrize(("low", "high"), [(0.7, 0.9), (0.4, 0.6), (0.9, 1.0)])
def test_deciding_the_wrong_side_stays_under_alpha_however_long_one_looks(low: float, high: float) -> None:
    # Ville's inequality: at p = low, the chance of ever deciding "high" is at most alpha (0.1 here),
    # even looking after every one of 400 samples. 2000 seeded streams: the bound with room for noise.
    rng = random.Random(20261202)
    wrong = 0
    for _ in range(2000):
        passed = n = 0
        for n in range(1, 401):
            passed += rng.random() < low
            found = sprt(passed, n, low, high, 0.1)
            if found is not None:
                wrong += found == "high"
                break
    assert wrong / 2000 <= 0.1


def sample(index: int, passed: bool, **metrics: float) -> SampleResult:
    return SampleResult(
        index=index, status="PASS" if passed else "FAIL", duration_ms=1.0, exit_code=0, stdout="", stderr="",
        command=Check("pass"), metrics={name: MetricValue("pass", value=v) for name, v in metrics.items()},
    )  # fmt: skip


def row(pass_rate: float = 0.8, metrics: tuple[MetricSpec, ...] = (), sampling: Sampling | None = None) -> RowSpec:
    return RowSpec(
        file="f.md", line=3, name="r", argv=(), expect=Expectation(), properties={}, repeat=20,
        pass_rate=pass_rate, metrics=metrics, sampling=sampling or Sampling(max=20),
    )  # fmt: skip


def test_a_row_is_not_decided_before_min() -> None:
    spec = row(pass_rate=1.0)
    assert not decide(spec, [sample(0, False), sample(1, False)]).decided  # min 3
    decision = decide(spec, [sample(0, True), sample(1, False), sample(2, True)])
    assert decision.decided
    assert decision.why == (
        "decided after 3: 2/3 passed: a sample failed, and pass_rate 1 needs every sample to pass; "
        "flaky (passed and failed)"
    )


def test_a_row_that_always_passes_says_why_it_stopped() -> None:
    spec = row()
    assert not decide(spec, [sample(i, True) for i in range(9)]).decided
    decision = decide(spec, [sample(i, True) for i in range(10)])
    assert decision.decided and decision.why == "decided after 10: 10/10 passed, P(pass rate <= 0.7) < 0.05"


def test_a_median_gate_decides_on_the_share_of_values_within_it() -> None:
    latency = MetricSpec("s", "json.s", "s", "f.md", 2, aggregate="median", threshold=Threshold(max=30.0))
    spec = row(metrics=(latency,))
    fast = [sample(i, True, s=5.0) for i in range(10)]
    assert decide(spec, fast).why.endswith("s median within max 30")
    # Zone 0.4 .. 0.6 of values <= 30: the evidence for "within" is the mean of 1.5^n and 2.5^n: n = 4:
    # (5.06 + 39.06) / 2 = 22.06 >= 20, but the pass gate needs 10, so the row decides at 10, both gates done.
    assert not decide(spec, fast[:9]).decided
    slow = [sample(i, True, s=50.0) for i in range(10)]
    assert "s median beyond max 30" in decide(spec, slow).why


def test_a_row_that_can_no_longer_reach_its_pass_rate_stops_exactly_there() -> None:
    # pass_rate 0.8 of max 20 needs 16 passes. F, 10 P, then failures: after the 5th failure (n = 15)
    # at most 10 + 5 = 15 can pass. The sequential test alone is not there yet: its evidence for "low"
    # is (3^5 * 0.778^10) / 2 = (243 * 0.0811) / 2 = 9.85 < 20. One failure fewer (n = 14) still
    # leaves 10 + 6 = 16 reachable.
    outcomes = [False] + [True] * 10 + [False] * 4
    assert not decide(row(), [sample(i, ok) for i, ok in enumerate(outcomes[:14])]).decided
    decision = decide(row(), [sample(i, ok) for i, ok in enumerate(outcomes)])
    assert decision.why.startswith("decided after 15: 10/15 passed: at most 15/20 can pass, below pass_rate 0.8")


def test_a_row_that_has_met_its_pass_rate_whatever_the_rest_do_stops() -> None:
    # A failure, then passes: the sequential test needs 20 passes after it (see above); 16 passes
    # meet 0.8 of 20 even if the last 3 fail (n = 17), and 15 (n = 16) do not.
    outcomes = [False] + [True] * 16
    assert not decide(row(), [sample(i, ok) for i, ok in enumerate(outcomes[:16])]).decided
    decision = decide(row(), [sample(i, ok) for i, ok in enumerate(outcomes)])
    assert decision.why.startswith("decided after 17: 16/17 passed: pass_rate 0.8 of 20 is met whatever the rest do")


def test_a_median_with_most_of_its_values_on_one_side_stays_there() -> None:
    # Values within, within, beyond, ...: after 16, 11 of at most 20 are within 30 s, so the median is.
    # The share test (zone 0.4 .. 0.6) is not sure: (1.5^11 * (2/3)^5) / 2 = 1.5^6 / 2 = 5.7 < 20.
    latency = MetricSpec("s", "json.s", "s", "f.md", 2, aggregate="median", threshold=Threshold(max=30.0))
    values = [50.0 if i % 3 == 2 else 5.0 for i in range(20)]
    taken = [sample(i, True, s=v) for i, v in enumerate(values)]
    assert not decide(row(metrics=(latency,)), taken[:15]).decided  # 10 within: the median may still cross
    decision = decide(row(metrics=(latency,)), taken[:16])
    assert decision.decided and decision.why.endswith("s median within max 30")
    beyond = [sample(i, True, s=55.0 - v) for i, v in enumerate(values)]  # the mirror image: 11 beyond
    assert decide(row(metrics=(latency,)), beyond[:16]).why.endswith("s median beyond max 30")


def test_a_mean_and_a_regression_gate_run_to_max() -> None:
    mean = MetricSpec("s", "json.s", "s", "f.md", 2, threshold=Threshold(max=30.0))
    decision = decide(row(metrics=(mean,)), [sample(i, True, s=5.0) for i in range(20)])
    assert not decision.decided and "s: a mean is decided at max" in decision.why
    regression = MetricSpec("s", "json.s", "s", "f.md", 2, "median", "lower", "base", Threshold(regression_percent=5))
    assert "a regression gate is decided at max" in decide(row(metrics=(regression,)), [sample(0, True)] * 20).why


def test_a_fixed_row_is_never_decided() -> None:
    spec = RowSpec(file="f.md", line=1, name="r", argv=(), expect=Expectation(), properties={}, repeat=5)
    assert not decide(spec, [sample(i, True) for i in range(5)]).decided


@pytest.mark.parametrize(
    ("outcomes", "pass_rate", "status"),
    [
        ("PPPPF", 1.0, "FAIL"),  # the seeds' rule: any failure
        ("PPPPF", 0.8, "PASS"),  # 4/5 = 0.8 meets 0.8
        ("PPPFF", 0.8, "FAIL"),  # 3/5 = 0.6
        ("PPPPP", 1.0, "PASS"),
    ],
)
def test_a_row_passes_when_its_pass_rate_is_met(outcomes: str, pass_rate: float, status: str) -> None:
    samples = [sample(i, c == "P") for i, c in enumerate(outcomes)]
    assert ran(samples, None, pass_rate).status == status
    assert ran(samples, "stopped", pass_rate).status == "ERR"
    assert math.isclose(sum(s.passed for s in samples) / len(samples), outcomes.count("P") / 5)


def test_overwhelming_evidence_never_overflows() -> None:
    # 5000 passes against low = 0.001: log ratio 5000 * ln(0.101 / 0.001) = 23,075, far beyond a double's exp.
    assert sprt(5000, 5000, 0.001, 0.101, 0.05) == "high"
    assert sprt(0, 5000, 0.899, 0.999, 0.05) == "low"


def test_skipped_samples_of_a_dry_run_decide_nothing() -> None:
    skipped = [replace(sample(i, False), status="SKIP") for i in range(20)]
    assert not decide(row(pass_rate=1.0), skipped).decided


def test_curtailment_looks_ahead_to_the_most_samples_a_row_may_take() -> None:
    # The failure-then-passes row above is curtailed after 17 against a max of 20 (16 >= 0.8 x 20); a row
    # that may go on to 60 (a budgeted one) is not: 16 of at most 60 is far from 0.8 x 60 = 48 either way.
    taken = [sample(i, ok) for i, ok in enumerate([False] + [True] * 16)]
    assert decide(row(), taken).curtailed and decide(row(), taken, 20).curtailed
    assert not decide(row(), taken, 60).decided
    # Decided by its sequential test, a row is not curtailed, whatever it looks ahead to.
    passing = [sample(i, True) for i in range(10)]
    assert [decide(row(), passing, most).curtailed for most in (20, 60)] == [False, False]
    # A median is curtailed once more than half of the most values are on one side (see above): 11 of 20.
    latency = MetricSpec("s", "json.s", "s", "f.md", 2, aggregate="median", threshold=Threshold(max=30.0))
    values = [sample(i, True, s=50.0 if i % 3 == 2 else 5.0) for i in range(16)]
    assert decide(row(metrics=(latency,)), values).curtailed


def test_progress_is_the_evidence_of_the_side_ahead_on_a_log_scale() -> None:
    budgeted = Sampling(max=20, budget=True)  # may take up to 60: curtailment looks ahead to 60
    # Fails samples 4, 9 and 14: 16/19 against the zone 0.7 .. 0.9. Evidence for "high": the mean of
    # (0.9/0.7)^16 (0.1/0.3)^3 = 2.065 and the extreme alternative, ruled out by a failure: 1.033. For "low":
    # (0.3/0.1)^3 (0.7/0.9)^16 / 2 = 0.242. The side ahead: ln(1.033) / ln(20) = 0.0107, barely any evidence.
    edge = [sample(i, i % 5 != 4) for i in range(19)]
    assert math.isclose(progress(row(sampling=budgeted), edge) or 0.0, 0.0107, abs_tol=1e-4)
    assert progress(row(), edge) is None  # without the budget it is curtailed (16 >= 0.8 x 20): decided
    # pass_rate 1 (zone 0.9 .. 1), 20 passes: (1/0.9)^20 = 8.23, so ln(8.23) / ln(20) = 0.703: further on.
    strict = row(pass_rate=1.0, sampling=budgeted)
    assert math.isclose(progress(strict, [sample(i, True) for i in range(20)]) or 0.0, 0.7034, abs_tol=1e-4)
    # A mean gate has no test: no progress to compare, so a budgeted row with one gets no extra samples.
    mean = MetricSpec("s", "json.s", "s", "f.md", 2, threshold=Threshold(max=30.0))
    assert progress(row(metrics=(mean,), sampling=budgeted), [sample(i, True, s=5.0) for i in range(20)]) is None
    assert progress(row(sampling=budgeted), edge[:2]) is None  # before min nothing is read
