"""Tests for fixtures_core.analysis.significance against reference values.

Reference p-values were computed with scipy 1.17.1 (numpy 2.x) in a throwaway
venv, never a project dependency:
    scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="exact" | "asymptotic")
    scipy.stats.fisher_exact([[a, b], [c, d]])  (two-sided by default)
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import pytest

from fixtures_core.analysis.significance import EXACT_MAX_SAMPLES, fisher_exact, mann_whitney_u

# --- Mann-Whitney U, exact (no ties, small samples) --------------------------


def test_mwu_exact_complete_separation() -> None:
    # U = 0: x is below y in 1 of C(8, 4) = 70 orderings, two-sided p = 2/70.
    # scipy 1.17.1 mannwhitneyu(..., method="exact") = 0.02857142857142857
    result = mann_whitney_u([1.1, 2.3, 3.5, 4.0], [5.2, 6.1, 7.7, 8.4])
    assert (result.test, result.warning) == ("mann-whitney", None)
    assert result.p_value == pytest.approx(2 / 70, rel=1e-12)
    assert result.p_value == pytest.approx(0.02857142857142857, rel=1e-12)


def test_mwu_exact_interleaved() -> None:
    # n1=6, n2=8, U1=8: 64 of C(14, 6) = 3003 orderings have U <= 8, p = 128/3003.
    # scipy 1.17.1 mannwhitneyu(..., method="exact") = 0.042624042624042624
    x = [0.8, 1.9, 2.4, 3.7, 5.1, 6.6]
    y = [2.0, 4.2, 4.9, 7.3, 8.8, 9.5, 10.1, 11.4]
    assert mann_whitney_u(x, y).p_value == pytest.approx(float(Fraction(128, 3003)), rel=1e-12)
    assert mann_whitney_u(x, y).p_value == pytest.approx(0.042624042624042624, rel=1e-12)


def test_mwu_exact_near_the_middle() -> None:
    # n1=5, n2=9, U1=17 (mean 22.5): p = 519/1001.
    # scipy 1.17.1 mannwhitneyu(..., method="exact") = 0.5184815184815185
    result = mann_whitney_u([1, 4, 6, 9, 12], [2, 3, 5, 7, 8, 10, 11, 13, 14])
    assert result.p_value == pytest.approx(0.5184815184815185, rel=1e-12)


def test_mwu_exact_at_the_mean_is_one() -> None:
    # n1=5, n2=7, U1=17 vs mean 17.5: 2 P(U >= 18) > 1, clipped to 1.
    # scipy 1.17.1 mannwhitneyu(..., method="exact") = 1.0
    result = mann_whitney_u([1, 4, 6, 9, 12], [2, 3, 5, 7, 8, 10, 11])
    assert result.p_value == pytest.approx(1.0)


def test_mwu_exact_twenty_against_twenty_five() -> None:
    # 45 distinct values, so still exact; U1 = 125 of 500.
    # scipy 1.17.1 mannwhitneyu(..., method="exact") = 0.0037409693976484942
    x = [100.012, 102.987, 97.259, 91.094, 95.453, 90.084, 100.601, 113.402, 95.078, 93.795,
         104.898, 103.569, 101.054, 90.695, 99.707, 106.953, 86.558, 95.424, 80.988, 87.105]  # fmt: skip
    y = [89.583, 105.649, 95.326, 110.713, 109.568, 106.131, 82.832, 102.613, 107.515, 109.133,
         92.699, 103.222, 98.215, 99.912, 118.609, 99.925, 107.675, 116.844, 102.164, 106.883,
         109.105, 108.638, 95.749, 108.761, 121.588]  # fmt: skip
    assert mann_whitney_u(x, y).p_value == pytest.approx(0.0037409693976484942, rel=1e-10)


def test_mwu_is_symmetric_in_its_arguments() -> None:
    x = [0.8, 1.9, 2.4, 3.7, 5.1, 6.6]
    y = [2.0, 4.2, 4.9, 7.3, 8.8, 9.5, 10.1, 11.4]
    assert mann_whitney_u(y, x).p_value == pytest.approx(mann_whitney_u(x, y).p_value, rel=1e-12)


def test_mwu_one_against_one() -> None:
    # Two orderings, each with probability 1/2: p = 2 * 1/2 = 1.
    assert mann_whitney_u([1.0], [2.0]).p_value == pytest.approx(1.0)


# --- Mann-Whitney U, normal approximation ------------------------------------


def test_mwu_ties_use_normal_approximation() -> None:
    # Ties (2, 3, 4 repeated) rule out the exact method; tie- and continuity-corrected.
    # scipy 1.17.1 mannwhitneyu(..., method="asymptotic") = 0.012999854364387305
    result = mann_whitney_u([1, 2, 2, 3, 3, 3, 4], [3, 4, 4, 5, 5, 6])
    assert result.p_value == pytest.approx(0.012999854364387305, rel=1e-9)
    assert result.warning is None


def test_mwu_ties_across_samples() -> None:
    # scipy 1.17.1 mannwhitneyu(..., method="asymptotic") = 0.10882171243710113
    x = [10, 10, 12, 15, 15, 15, 20, 22]
    y = [12, 14, 15, 18, 20, 20, 25, 30, 31]
    assert mann_whitney_u(x, y).p_value == pytest.approx(0.10882171243710113, rel=1e-9)


def test_mwu_large_samples_use_normal_approximation() -> None:
    # 60 against 60 without ties: beyond EXACT_MAX_SAMPLES, so asymptotic.
    # scipy 1.17.1 mannwhitneyu(..., method="asymptotic") = 2.7321937853544005e-07
    x = [float(v) for v in range(1, 121, 2)]
    y = [v + 0.5 for v in range(40, 160, 2)]
    assert len(x) == len(y) == 60 > EXACT_MAX_SAMPLES
    assert mann_whitney_u(x, y).p_value == pytest.approx(2.7321937853544005e-07, rel=1e-9)


# --- Mann-Whitney U, degenerate inputs ---------------------------------------


def test_mwu_identical_values_give_one() -> None:
    # Every ordering has U = n1*n2/2; scipy 1.17.1 (asymptotic) also gives 1.0.
    result = mann_whitney_u([3.0, 3.0, 3.0], [3.0, 3.0])
    assert result.p_value == pytest.approx(1.0)
    assert result.warning is None


@pytest.mark.parametrize(("x", "y"), [([], [1.0, 2.0]), ([1.0], []), ([], [])])
def test_mwu_empty_sample_has_no_p_value(x: list[float], y: list[float]) -> None:
    result = mann_whitney_u(x, y)
    assert result.test == "mann-whitney"
    assert result.p_value is None
    assert result.warning is not None
    assert "needs at least one sample on each side" in result.warning
    assert f"got {len(x)} and {len(y)}" in result.warning


def test_mwu_nan_fails_loudly() -> None:
    with pytest.raises(ValueError, match=r"y\[1\] is NaN"):
        mann_whitney_u([1.0, 2.0], [3.0, math.nan])


# --- Fisher's exact test -----------------------------------------------------


def test_fisher_lady_tasting_tea() -> None:
    # Fisher (1935): [[3, 1], [1, 3]]; P(k) = C(4,k) C(4,4-k) / 70 = 1, 16, 36, 16, 1 over 70.
    # Tables no more probable than 16/70: k = 0, 1, 3, 4, so p = 34/70.
    # scipy 1.17.1 fisher_exact([[3, 1], [1, 3]]) = 0.48571428571428565
    result = fisher_exact(3, 1, 1, 3)
    assert (result.test, result.warning) == ("fisher", None)
    assert result.p_value == pytest.approx(34 / 70, rel=1e-12)
    assert result.p_value == pytest.approx(0.4857, abs=5e-5)


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ((8, 2, 1, 5), 0.034965034965034975),  # scipy 1.17.1 fisher_exact
        ((90, 10, 70, 30), 0.0006504107076034208),  # scipy 1.17.1 fisher_exact
        ((10, 0, 0, 10), 1.082508822446903e-05),  # scipy 1.17.1; = 2 / C(20, 10)
        ((1, 9, 11, 3), 0.0027594561852200836),  # scipy 1.17.1 fisher_exact
        ((0, 5, 2, 3), 0.4444444444444444),  # scipy 1.17.1 fisher_exact
        ((7, 3, 7, 3), 1.0),  # scipy 1.17.1: identical rows
    ],
)
def test_fisher_matches_scipy(table: tuple[int, int, int, int], expected: float) -> None:
    assert fisher_exact(*table).p_value == pytest.approx(expected, rel=1e-9)


def test_fisher_all_passed_on_both_sides_gives_one() -> None:
    # A zero column leaves a single possible table. scipy 1.17.1 fisher_exact([[5, 0], [5, 0]]) = 1.0
    result = fisher_exact(5, 0, 5, 0)
    assert result.p_value == pytest.approx(1.0)
    assert result.warning is None


def test_fisher_empty_side_has_no_p_value() -> None:
    result = fisher_exact(0, 0, 3, 2)
    assert result.test == "fisher"
    assert result.p_value is None
    assert result.warning == "needs at least one sample on each side (got 0 and 5)"


def test_fisher_negative_count_fails_loudly() -> None:
    with pytest.raises(ValueError, match="c=-1 is negative"):
        fisher_exact(3, 1, -1, 3)


def test_significance_is_frozen() -> None:
    result = fisher_exact(3, 1, 1, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.p_value = 0.0  # type: ignore[misc]
