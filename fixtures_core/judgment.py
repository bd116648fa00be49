"""What a judge says: scores per arm, the winner, and the judgment of one case's sample.

Both judge protocols (assay's JSON document and devlyn's judge.sh prompt)
produce these; ``judge`` runs the judge, ``analysis.shipgate`` reads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

TIE = "tie"


@dataclass(frozen=True)
class ArmScore:
    """One arm's scores in a judgment (the mean of both orders with swap)."""

    total: float
    axes: Mapping[str, float] = field(default_factory=dict)
    disqualifier: bool = False
    findings: tuple[str, ...] = ()
    disqualifier_reason: str | None = None
    axes_invalid: int = 0  # axis scores outside their range, clamped (devlyn's protocol)


@dataclass(frozen=True)
class Judgment:
    """The judge's verdict on one sample of one case, mapped back from labels to arms.

    labels:         label -> arm as the judge saw them (the first order).
    winner:         an arm, or "tie"; None when the judgment failed.
    swapped_winner: with swap, the winner of the reversed order.
    evidence:       the folder of the judge's input and output files, relative to the run folder.
    output:         the start of the judge's output when it could not be used.
    """

    case: str
    sample: int
    labels: Mapping[str, str]
    scores: Mapping[str, ArmScore] = field(default_factory=dict)
    winner: str | None = None
    swapped_winner: str | None = None
    disagreement: bool = False
    provenance: str | None = None
    evidence: str = ""
    error: str | None = None
    output: str | None = None
    rationale: str | None = None  # the judge's why, as it wrote it (with swap: the first order's)


@dataclass(frozen=True)
class JudgeOutput:
    """One judge call's answer, mapped from labels to arms."""

    scores: dict[str, ArmScore]  # by arm
    winner: str  # an arm, or "tie"
    provenance: str | None = None
    rationale: str | None = None


class JudgeOutputError(ValueError):
    """The judge's output is not JSON of the protocol's shape."""
