"""Metric arithmetic: aggregates, absolute thresholds, regression percent."""

from __future__ import annotations

import random

import pytest

from fixtures_core.analysis.metrics import (
    aggregate,
    beyond,
    regression_failure,
    regression_percent,
    regression_points,
    threshold_failure,
)
from fixtures_core.spec import Threshold

# --- aggregates ---------------------------------------------------------------


def test_mean_is_the_arithmetic_mean() -> None:
    # (1 + 2 + 3 + 10) / 4 = 4
    assert aggregate([1.0, 2.0, 3.0, 10.0], "mean") == pytest.approx(4.0)


def test_mean_sums_exactly() -> None:
    # naive left-to-right summation gives 0.0 here; fsum gives the exact 2.0 / 4
    assert aggregate([1e16, 1.0, 1.0, -1e16], "mean") == pytest.approx(0.5)


def test_median_of_an_odd_count_is_the_middle_value() -> None:
    assert aggregate([9.0, 1.0, 5.0], "median") == pytest.approx(5.0)


def test_median_of_an_even_count_is_the_mean_of_the_two_middle_values() -> None:
    # sorted 1, 3, 4, 100: (3 + 4) / 2 = 3.5
    assert aggregate([100.0, 3.0, 1.0, 4.0], "median") == pytest.approx(3.5)


def test_min_and_max() -> None:
    values = [7.0, -2.5, 3.0, 11.25]
    assert aggregate(values, "min") == pytest.approx(-2.5)
    assert aggregate(values, "max") == pytest.approx(11.25)


def test_p95_is_nearest_rank_not_interpolated() -> None:
    # n=20: rank ceil(0.95 * 20) = 19 -> sorted[18] = 19.
    # Linear interpolation (numpy's default) would give 19 + 0.05 * (20 - 19) = 19.05.
    values = [float(v) for v in range(1, 21)]
    random.Random(7).shuffle(values)
    assert aggregate(values, "p95") == pytest.approx(19.0, abs=1e-12)


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (1, 1.0),  # ceil(0.95) = 1 -> the only value
        (10, 10.0),  # ceil(9.5) = 10
        (21, 20.0),  # ceil(19.95) = 20
        (100, 95.0),  # ceil(95.0) = 95
        (101, 96.0),  # ceil(95.95) = 96
    ],
)
def test_p95_rank_for_several_sizes(n: int, expected: float) -> None:
    values = [float(v) for v in range(n, 0, -1)]  # 1..n, reversed
    assert aggregate(values, "p95") == pytest.approx(expected)


def test_p95_is_always_an_observed_value() -> None:
    values = [0.5, 2.25, 8.0, 9.5, 100.0]
    assert aggregate(values, "p95") in values


def test_aggregates_accept_ints() -> None:
    assert aggregate([3, 1, 2], "max") == pytest.approx(3.0)
    assert isinstance(aggregate([3, 1, 2], "max"), float)


@pytest.mark.parametrize("kind", ["mean", "median", "min", "max", "p95"])
def test_no_values_is_an_error_naming_the_aggregate(kind: str) -> None:
    with pytest.raises(ValueError, match=f"cannot take the {kind} of no values"):
        aggregate([], kind)  # type: ignore[arg-type]


def test_unknown_aggregate_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown aggregate 'mode'"):
        aggregate([1.0], "mode")  # type: ignore[arg-type]


# --- absolute thresholds ---------------------------------------------------------


def test_within_bounds_is_no_failure() -> None:
    assert threshold_failure(50.0, Threshold(min=10.0, max=100.0), "ms") is None


def test_bounds_are_inclusive() -> None:
    assert threshold_failure(10.0, Threshold(min=10.0, max=100.0), "ms") is None
    assert threshold_failure(100.0, Threshold(min=10.0, max=100.0), "ms") is None


def test_above_max_names_value_unit_and_limit() -> None:
    assert threshold_failure(120001.0, Threshold(max=120000.0), "ms") == "120001 ms is above max 120000"


def test_below_min_names_value_unit_and_limit() -> None:
    assert threshold_failure(0.5, Threshold(min=1.0), "tokens") == "0.5 tokens is below min 1"


def test_empty_threshold_never_fails() -> None:
    assert threshold_failure(1e300, Threshold(), "usd") is None


def test_max_of_zero_rejects_any_positive_value() -> None:
    assert threshold_failure(1e-300, Threshold(max=0.0), "errors") is not None


def test_float_noise_does_not_break_a_bound() -> None:
    # The mean of three samples of 0.1 is 0.10000000000000002 in binary floating point.
    mean = aggregate([0.1, 0.1, 0.1], "mean")
    assert threshold_failure(mean, Threshold(max=0.1), "s") is None
    mean = aggregate([0.7, 0.7, 0.7], "mean")  # 0.6999999999999998
    assert threshold_failure(mean, Threshold(min=0.7), "s") is None


def test_beyond_is_strictly_greater_outside_noise() -> None:
    assert beyond(25.000000000000007, 25.0) is False
    assert beyond(25.0, 25.0) is False
    assert beyond(25.001, 25.0) is True
    assert beyond(24.0, 25.0) is False


# --- regression percent ------------------------------------------------------------


def test_lower_is_better_worsening_is_positive() -> None:
    # (125 - 100) / 100 * 100 = +25
    assert regression_percent(125.0, 100.0, "lower") == pytest.approx(25.0)


def test_lower_is_better_improvement_is_negative() -> None:
    # (80 - 100) / 100 * 100 = -20
    assert regression_percent(80.0, 100.0, "lower") == pytest.approx(-20.0)


def test_higher_is_better_worsening_is_positive() -> None:
    # (100 - 80) / 100 * 100 = +20
    assert regression_percent(80.0, 100.0, "higher") == pytest.approx(20.0)


def test_higher_is_better_improvement_is_negative() -> None:
    # (100 - 125) / 100 * 100 = -25
    assert regression_percent(125.0, 100.0, "higher") == pytest.approx(-25.0)


def test_negative_baseline_divides_by_its_absolute_value() -> None:
    # lower: (-5 - -10) / |-10| * 100 = +50 (got worse: -5 is higher than -10)
    assert regression_percent(-5.0, -10.0, "lower") == pytest.approx(50.0)
    # higher: (-10 - -5) / |-10| * 100 = -50 (got better)
    assert regression_percent(-5.0, -10.0, "higher") == pytest.approx(-50.0)


@pytest.mark.parametrize("direction", ["lower", "higher"])
def test_zero_baseline_is_an_error(direction: str) -> None:
    with pytest.raises(ZeroDivisionError, match="baseline value is 0.*absolute threshold"):
        regression_percent(5.0, 0.0, direction)  # type: ignore[arg-type]


def test_a_regression_needs_a_direction() -> None:
    with pytest.raises(ValueError, match="needs a direction"):
        regression_percent(5.0, 4.0, "none")


@pytest.mark.parametrize("kind", ["mean", "median"])
def test_an_aggregate_past_a_double_is_an_error_not_an_overflow(kind: str) -> None:
    # 1.7e308 + 1.7e308 overflows a double: fsum raises OverflowError, the median gives inf.
    with pytest.raises(ValueError, match=f"the {kind} of these values overflows a double"):
        aggregate([1.7e308, 1.7e308], kind)  # type: ignore[arg-type]


def test_the_largest_values_still_aggregate_when_they_fit() -> None:
    assert aggregate([1.7e308, 1.6e308], "max") == 1.7e308


def test_regression_points_are_signed_by_direction() -> None:
    # lower: 106 - 101 = 5 worse; higher: 101 - 106 = -5 (better)
    assert regression_points(106.0, 101.0, "lower") == pytest.approx(5.0)
    assert regression_points(106.0, 101.0, "higher") == pytest.approx(-5.0)
    assert regression_points(3.0, 0.0, "lower") == pytest.approx(3.0)  # a zero baseline is fine in points


def test_regression_failure_names_percent_or_points() -> None:
    both = Threshold(regression_percent=10, regression_points=5)
    assert regression_failure(12.0, 1.0, both, "ms") == "+12.0% exceeds the allowed 10%"
    assert regression_failure(2.0, 6.0, both, "ms") == "+6 ms exceeds the allowed 5 ms"
    assert regression_failure(10.0, 5.0, both, "ms") is None  # exactly the allowed: not beyond
    assert regression_failure(None, 6.0, Threshold(regression_percent=1), "ms") is None  # no percent to compare
