"""How statuses and outcomes combine: ERR > FAIL > PASS, and error > fail > pass.

A SKIP weighs like a PASS: a row that did not run takes nothing from a verdict
(it is counted and named on its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fixtures_core.results import Outcome, Status

_RANK: Mapping[str, int] = {"PASS": 0, "SKIP": 0, "FAIL": 1, "ERR": 2}
_OUTCOMES: tuple[Outcome, ...] = ("error", "fail", "pass")


def worst(*statuses: Status) -> Status:
    """The status that wins under ERR > FAIL > PASS (PASS when there is none)."""
    return max(statuses, key=lambda s: _RANK[s], default="PASS")


def combine_outcomes(outcomes: Iterable[Outcome]) -> Outcome:
    """One outcome for many: error > fail > pass; not_evaluated when none was evaluated."""
    found = set(outcomes)
    return next((wanted for wanted in _OUTCOMES if wanted in found), "not_evaluated")
