"""How an A/B case ended, decided here and nowhere else: each arm's result, the winner, the case's
status and the word of its Verdict column, and a suite's verdict.

Rules (seed 04, RUBRIC.md):

* A disqualified arm loses its case whatever its score ("overrides score"):
  the winner is the best arm that was not disqualified, a tie when none is
  left. Otherwise the arm most judged samples were won by wins; a tie when
  the votes are even.
* Each arm ends its case ``won``, ``lost``, ``tie`` or ``disqualified``
  (``CaseResult``); an arm row's own verdict takes it in (``verdicts.row.with_case``).
* A case's status is its arms' worst; a failed judgment makes it ERR.
* Its Verdict column: ``ERR`` / ``SKIP`` as its status says; ``READY`` for a
  dry run's case whose workspaces were prepared; for a known limit,
  ``EXPECTED (known-limit)`` or ``WARNING (known-limit)`` when its margin is
  outside its range; ``DISQUALIFIED`` when the first arm of ``compare`` was;
  the first arm's status when it did not pass its own checks; else ``PASS``
  (it won), ``TIE`` or ``LOSS``.
* A suite is ERR when a case or a gate erred, FAIL when a hard gate failed,
  else PASS.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from fixtures_core.judgment import TIE, Judgment
from fixtures_core.results import CaseResult, Outcome, Status
from fixtures_core.suite import GateSeverity
from fixtures_core.verdicts.precedence import worst

EXPECTED = "EXPECTED (known-limit)"
OUTSIDE_KNOWN_LIMIT = "WARNING (known-limit)"
READY = "READY"  # a dry run's case: workspaces prepared, setup and verification ran
DISQUALIFIED = "DISQUALIFIED"
LOSS = "LOSS"
TIE_WORD = "TIE"


def winner(judgments: Sequence[Judgment], disqualified: Mapping[str, bool]) -> str:
    """The arm most samples were won by; else a tie. A disqualified arm loses the case whatever the
    judge said: when only one arm was not disqualified, it wins. ``disqualified``: per arm."""
    standing = [arm for arm, out in disqualified.items() if not out]
    if len(standing) == 1 and len(disqualified) > 1:
        return standing[0]
    votes: Counter[str] = Counter()
    for judgment in judgments:
        if judgment.error is not None or judgment.winner is None:
            continue
        allowed = {
            arm for arm, score in judgment.scores.items() if not (score.disqualifier or disqualified.get(arm, False))
        }
        chosen = judgment.winner
        if chosen != TIE and chosen not in allowed:
            best = sorted(((judgment.scores[a].total, a) for a in allowed), reverse=True)
            chosen = best[0][1] if best and (len(best) == 1 or best[0][0] > best[1][0]) else TIE
        if chosen != TIE:
            votes[chosen] += 1
    ranked = votes.most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return TIE
    return ranked[0][0]


def arm_result(arm: str, disqualified: bool, case_winner: str | None) -> CaseResult | None:
    """How ``arm`` ended its case; None when the case has no winner (a dry run, no judge, an error)."""
    if disqualified:
        return "disqualified"
    if case_winner is None:
        return None
    if case_winner == TIE:
        return "tie"
    return "won" if case_winner == arm else "lost"


def case_status(arm_statuses: Sequence[Status], judgment_failed: bool) -> Status:
    """SKIP when every arm was skipped; ERR when a judgment failed; else the arms' worst."""
    if judgment_failed:
        return "ERR"
    if arm_statuses and all(status == "SKIP" for status in arm_statuses):
        return "SKIP"
    return worst(*arm_statuses)


def case_verdict(
    status: Status,
    first: tuple[Status, bool] | None,
    case_winner: str | None,
    pair: tuple[str, str] | None,
    known_limit_outside: bool | None,
    prepared: bool,
) -> str:
    """The Verdict column of one case (module docstring). ``first``: the status and disqualification of
    the first arm of ``compare``; ``known_limit_outside``: None without a known limit, else whether the
    margin is outside its range; ``prepared``: a dry run prepared every arm."""
    if prepared and status != "ERR":
        return READY
    if status in ("SKIP", "ERR"):
        return status
    if known_limit_outside is not None:
        return OUTSIDE_KNOWN_LIMIT if known_limit_outside else EXPECTED
    if first is None:
        return status
    first_status, first_disqualified = first
    if first_disqualified:
        return DISQUALIFIED
    if first_status != "PASS" or case_winner is None or pair is None:
        return first_status
    return "PASS" if case_winner == pair[0] else TIE_WORD if case_winner == TIE else LOSS


def suite_verdict(case_statuses: Iterable[Status], gates: Iterable[tuple[GateSeverity, Outcome]]) -> Status:
    """ERR when a case or a gate erred; FAIL when a hard gate failed; else PASS."""
    found = list(gates)
    if any(status == "ERR" for status in case_statuses) or any(outcome == "error" for _s, outcome in found):
        return "ERR"
    return "FAIL" if any(severity == "hard" and outcome == "fail" for severity, outcome in found) else "PASS"
