"""What a run spends against its budgets (``budget: cost_usd <= 5``), summed as samples finish.

A fixture file's budget covers its own rows; ``--budget`` covers the whole
run. Once a budget's sum reaches its cap, no new sample of the rows it covers
starts: samples in flight finish (they are paid for already), so a run can
overshoot the cap by what the samples in flight spend.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fixtures_core.results import SampleResult
from fixtures_core.spec import Budget, RowSpec


@dataclass(frozen=True)
class _Scope:
    """A budget and what it covers: one fixture file's rows, or (``file`` None) the whole run."""

    budget: Budget
    file: str | None


class Spending:
    """The sums of a run's budgets; thread-safe."""

    def __init__(self, run_budget: Budget | None = None) -> None:
        self._run_budget = run_budget
        self._spent: dict[_Scope, float] = {}
        self._lock = threading.Lock()

    def _scopes(self, row: RowSpec) -> list[_Scope]:
        scopes = [_Scope(self._run_budget, None)] if self._run_budget is not None else []
        if row.budget is not None:
            scopes.append(_Scope(row.budget, row.fixture_id or row.file))
        return scopes

    def charge(self, row: RowSpec, sample: SampleResult) -> None:
        """Add what ``sample`` spent to every budget covering ``row`` (a sample without a value adds nothing)."""
        for scope in self._scopes(row):
            metric = sample.metrics.get(scope.budget.metric)
            if metric is not None and metric.value is not None:
                with self._lock:
                    self._spent[scope] = self._spent.get(scope, 0.0) + metric.value

    def exhausted(self, row: RowSpec) -> str | None:
        """Why no new sample of ``row`` may start (``cost_usd 5.2 spent of 5 (x.md:4)``), or None."""
        with self._lock:
            for scope in self._scopes(row):
                spent = self._spent.get(scope, 0.0)
                if spent >= scope.budget.cap:
                    return _spent_text(scope.budget, spent)
        return None

    def reached(self) -> list[str]:
        """Every budget that was reached, with what was spent."""
        with self._lock:
            return [_spent_text(s.budget, spent) for s, spent in self._spent.items() if spent >= s.budget.cap]


def _spent_text(budget: Budget, spent: float) -> str:
    return f"{budget.metric} {spent:g} spent of {budget.cap:g} ({budget.where})"
