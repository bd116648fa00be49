"""A metric's threshold: what a suite's score and a row's metric may not cross or lose.

Below ``spec`` and ``suite`` (both declare thresholds), so neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Threshold:
    """Limits on a metric's aggregate: absolute bounds and allowed worsening, in percent or in points
    (the metric's own unit: "no fixture loses more than 5 points")."""

    min: float | None = None
    max: float | None = None
    regression_percent: float | None = None
    regression_points: float | None = None

    def is_empty(self) -> bool:
        return self.min is None and self.max is None and not self.limits_regression

    @property
    def limits_regression(self) -> bool:
        """True when a worsening against a baseline can fail (percent or points)."""
        return self.regression_percent is not None or self.regression_points is not None
