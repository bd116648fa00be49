"""Pure metric arithmetic: aggregates, absolute thresholds, regression in percent and in points.

Aggregates follow DESIGN: the median of an even count is the mean of the two
middle values; p95 is nearest-rank, ``sorted[ceil(0.95 * n) - 1]``, so it is
always an observed value (as Gavel).

Limits are compared with a relative tolerance of ``1e-9``: a mean of three
samples of 0.1 is 0.10000000000000002 in binary floating point, and must not
break ``max: 0.1``; nor may 1.2 -> 1.5 (``+25.000000000000007%``) break
``regressionPercent: 25``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from fixtures_core.spec import Aggregate, Direction, Threshold


def aggregate(values: Sequence[float], kind: Aggregate) -> float:
    """The selected aggregate of a non-empty list of values; ValueError when it overflows a double."""
    if not values:
        raise ValueError(f"cannot take the {kind} of no values")
    if kind in ("mean", "median"):
        try:
            value = math.fsum(values) / len(values) if kind == "mean" else float(statistics.median(values))
        except OverflowError:
            value = math.inf
        if not math.isfinite(value):
            raise ValueError(f"the {kind} of these values overflows a double")
        return value
    if kind == "min":
        return float(min(values))
    if kind == "max":
        return float(max(values))
    if kind == "p95":
        return float(sorted(values)[math.ceil(0.95 * len(values)) - 1])
    raise ValueError(f"unknown aggregate {kind!r}")


_REL_TOL = 1e-9


def beyond(value: float, limit: float) -> bool:
    """``value > limit`` beyond floating-point noise."""
    return value > limit and not math.isclose(value, limit, rel_tol=_REL_TOL)


def threshold_failure(value: float, threshold: Threshold, unit: str) -> str | None:
    """Why an aggregate breaks its absolute bounds, or None when it is within them."""
    if threshold.min is not None and beyond(threshold.min, value):
        return f"{value:g} {unit} is below min {threshold.min:g}"
    if threshold.max is not None and beyond(value, threshold.max):
        return f"{value:g} {unit} is above max {threshold.max:g}"
    return None


def regression_percent(current: float, baseline: float, direction: Direction) -> float:
    """Signed worsening in percent (negative is an improvement); a zero baseline is an error."""
    if baseline == 0:
        raise ZeroDivisionError(
            "the baseline value is 0: a relative comparison is undefined (use an absolute threshold)"
        )
    if direction == "lower":
        return (current - baseline) / abs(baseline) * 100.0
    if direction == "higher":
        return (baseline - current) / abs(baseline) * 100.0
    raise ValueError("a regression needs a direction (lower or higher)")


def regression_points(current: float, baseline: float, direction: Direction) -> float:
    """Signed worsening in the metric's own unit (negative is an improvement)."""
    if direction == "lower":
        return current - baseline
    if direction == "higher":
        return baseline - current
    raise ValueError("a regression needs a direction (lower or higher)")


def recorded(change: float | None) -> float | None:
    """A change as the run document keeps it: one beyond a double's range (values near its limits, a
    baseline near zero) is left out, as a run document holds finite numbers only; the verdict was
    taken with it, beyond every finite limit."""
    return change if change is not None and math.isfinite(change) else None


def regression_failure(percent: float | None, points: float, threshold: Threshold, unit: str) -> str | None:
    """Why a worsening exceeds ``regressionPercent`` or ``regressionPoints``, or None."""
    allowed_percent, allowed_points = threshold.regression_percent, threshold.regression_points
    if allowed_percent is not None and percent is not None and beyond(percent, allowed_percent):
        return f"{percent:+.1f}% exceeds the allowed {allowed_percent:g}%"
    if allowed_points is not None and beyond(points, allowed_points):
        return f"{points:+.4g} {unit} exceeds the allowed {allowed_points:g} {unit}"
    return None
