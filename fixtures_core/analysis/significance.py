"""Is the current run different from the baseline? Two small, exact tests.

``mann_whitney_u`` compares two samples of measurements (durations, scores);
``fisher_exact`` compares two pass/fail counts. Both return a ``Significance``
whose ``p_value`` is two-sided. When a p-value cannot be computed (a side has
no samples) it is ``None`` and ``warning`` says why; the report shows it.

Exact where the arithmetic allows: the Mann-Whitney null distribution is
counted with integers for small samples without ties, and Fisher's test sums
hypergeometric counts as integers; only the final division is a float.
Standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

__all__ = ["EXACT_MAX_SAMPLES", "Significance", "TestName", "fisher_exact", "mann_whitney_u"]

TestName = Literal["mann-whitney", "fisher"]

# Mann-Whitney uses the exact distribution when there are no ties and each
# sample has at most this many values; otherwise the normal approximation.
EXACT_MAX_SAMPLES = 50

# Tables whose probability is within this relative distance of the observed
# one count as "as extreme" (R's fisher.test uses relErr = 1 + 10^-7; scipy
# uses the same). Kept as a Fraction so the comparison stays exact.
_FISHER_TOLERANCE = Fraction(1, 10**7)

_EMPTY = "needs at least one sample on each side"


@dataclass(frozen=True)
class Significance:
    """A two-sided test of "baseline and current come from the same distribution".

    test:     which test produced it: "mann-whitney" or "fisher".
    p_value:  the two-sided p-value in [0, 1]; None when it cannot be computed.
    warning:  why ``p_value`` is None (or what limits it); None when all is well.
    """

    test: TestName
    p_value: float | None
    warning: str | None = None


def mann_whitney_u(x: Sequence[float], y: Sequence[float]) -> Significance:
    """Two-sided Mann-Whitney U test (Wilcoxon rank-sum) of samples ``x`` and ``y``.

    Exact when neither sample has more than ``EXACT_MAX_SAMPLES`` values and no
    value is tied; otherwise the normal approximation with tie correction and
    continuity correction. Raises ValueError on a NaN, which has no rank.
    """
    for name, sample in (("x", x), ("y", y)):
        for i, value in enumerate(sample):
            if math.isnan(value):
                raise ValueError(f"mann_whitney_u: {name}[{i}] is NaN; a NaN has no rank, drop it first")
    n1, n2 = len(x), len(y)
    if n1 == 0 or n2 == 0:
        return Significance("mann-whitney", None, f"{_EMPTY} (got {n1} and {n2})")

    rank_sum_x, tie_sizes = _rank_sum(x, y)
    # U counts the pairs (xi, yj) with xi > yj, ties counting one half:
    # U1 = R1 - n1(n1+1)/2, with R1 the sum of the (mid)ranks of x.
    u1 = rank_sum_x - Fraction(n1 * (n1 + 1), 2)
    u = max(u1, n1 * n2 - u1)  # the larger of U1 and U2; the test is symmetric

    if len(tie_sizes) == 1:
        # Every value is the same: U is n1*n2/2 under every ordering, p = 1.
        return Significance("mann-whitney", 1.0)
    has_ties = any(t > 1 for t in tie_sizes)
    if not has_ties and n1 <= EXACT_MAX_SAMPLES and n2 <= EXACT_MAX_SAMPLES:
        return Significance("mann-whitney", _exact_p(int(u), n1, n2))
    return Significance("mann-whitney", _normal_p(u, n1, n2, tie_sizes))


def fisher_exact(a: int, b: int, c: int, d: int) -> Significance:
    """Two-sided Fisher's exact test on the 2x2 table [[a, b], [c, d]].

    Rows are the two sides (e.g. baseline passed/failed, current passed/failed).
    The p-value is the probability, with all margins fixed, of the tables no
    more probable than the observed one (relative tolerance 1e-7, as R and
    scipy do). Raises ValueError on a negative count.
    """
    for name, count in (("a", a), ("b", b), ("c", c), ("d", d)):
        if count < 0:
            raise ValueError(f"fisher_exact: {name}={count} is negative; cells are counts")
    row1, row2 = a + b, c + d
    if row1 == 0 or row2 == 0:
        return Significance("fisher", None, f"{_EMPTY} (got {row1} and {row2})")

    # With margins fixed the table is determined by its top-left cell k, and
    # P(k) = C(col1, k) C(n - col1, row1 - k) / C(n, row1) (hypergeometric).
    n = row1 + row2
    col1 = a + c
    low, high = max(0, row1 + col1 - n), min(row1, col1)
    weights = _hypergeometric_weights(row1, col1, n, low, high)
    observed = weights[a - low]
    limit = observed * (1 + _FISHER_TOLERANCE)
    extreme = sum(w for w in weights if w <= limit)
    p = Fraction(extreme, sum(weights))  # sum(weights) == C(n, row1) (Vandermonde)
    return Significance("fisher", float(min(p, Fraction(1))))


def _hypergeometric_weights(row1: int, col1: int, n: int, low: int, high: int) -> list[int]:
    """w[k - low] = C(col1, k) C(n - col1, row1 - k) for k = low..high, as integers.

    Each from the last by the ratio of consecutive terms, so that large tables
    cost one multiplication per cell value instead of two binomials:
    w(k+1) = w(k) (col1 - k)(row1 - k) / ((k + 1)(n - col1 - row1 + k + 1)), an exact division.
    """
    weight = math.comb(col1, low) * math.comb(n - col1, row1 - low)
    weights = [weight]
    for k in range(low, high):
        weight = weight * (col1 - k) * (row1 - k) // ((k + 1) * (n - col1 - row1 + k + 1))
        weights.append(weight)
    return weights


def _rank_sum(x: Sequence[float], y: Sequence[float]) -> tuple[Fraction, list[int]]:
    """The sum of x's ranks in the pooled sample (ties get the mean rank) and the tie-group sizes."""
    pooled = sorted([(value, True) for value in x] + [(value, False) for value in y], key=lambda p: p[0])
    rank_sum = Fraction(0)
    tie_sizes: list[int] = []
    start = 0
    while start < len(pooled):
        end = start
        while end + 1 < len(pooled) and pooled[end + 1][0] == pooled[start][0]:
            end += 1
        size = end - start + 1
        mid_rank = Fraction(start + 1 + end + 1, 2)  # ranks start+1 .. end+1, averaged
        rank_sum += mid_rank * sum(1 for _, from_x in pooled[start : end + 1] if from_x)
        tie_sizes.append(size)
        start = end + 1
    return rank_sum, tie_sizes


def _exact_p(u: int, n1: int, n2: int) -> float:
    """Exact two-sided p = 2 P(U >= u) for u >= n1*n2/2, with no ties.

    Under the null hypothesis every one of the C(n1+n2, n1) orderings is
    equally likely, and the number of them with U = k is the coefficient of
    q^k in the Gaussian binomial coefficient [n1+n2 choose n1]_q, i.e. in
    prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i) (Mann & Whitney 1947 give the
    equivalent recurrence f(k; n1, n2) = f(k - n2; n1 - 1, n2) + f(k; n1, n2 - 1);
    the product form is Andrews, The Theory of Partitions, 1976, Thm 3.1).
    """
    counts = _u_frequencies(n1, n2)
    at_least = sum(counts[u:])
    p = Fraction(2 * at_least, math.comb(n1 + n2, n1))
    return float(min(p, Fraction(1)))


def _u_frequencies(n1: int, n2: int) -> list[int]:
    """counts[k] = number of orderings of n1 x's and n2 y's with U = k, k = 0..n1*n2."""
    size = n1 * n2 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        # After step i, poly is [n2+i choose i]_q, of degree i*n2 <= n1*n2. Each
        # step reads only lower degrees, so working modulo q^size is exact.
        # Multiply by (1 - q^(n2+i)), descending so that k - shift is still old.
        shift = n2 + i
        for k in range(size - 1, shift - 1, -1):
            poly[k] -= poly[k - shift]
        # Divide by (1 - q^i), ascending: r[k] = p[k] + r[k - i] (the division is exact).
        for k in range(i, size):
            poly[k] += poly[k - i]
    return poly


def _normal_p(u: Fraction, n1: int, n2: int, tie_sizes: list[int]) -> float:
    """Two-sided p from the normal approximation, for u >= n1*n2/2.

    mean = n1 n2 / 2; variance = n1 n2 / 12 * ((n + 1) - sum(t^3 - t) / (n (n - 1)))
    over tie groups of size t (Lehmann, Nonparametrics, 1975, eq. 1.41), and a
    continuity correction of 1/2 towards the mean; as scipy's
    mannwhitneyu(method="asymptotic", use_continuity=True).
    """
    n = n1 + n2
    tie_term = Fraction(sum(t**3 - t for t in tie_sizes), n * (n - 1))
    variance = Fraction(n1 * n2, 12) * ((n + 1) - tie_term)
    mean = Fraction(n1 * n2, 2)
    z = float(u - mean - Fraction(1, 2)) / math.sqrt(variance)
    p = math.erfc(z / math.sqrt(2))  # = 2 * (1 - Phi(z))
    return min(max(p, 0.0), 1.0)
