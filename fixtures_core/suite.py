"""What an A/B suite declares, and what one attempt in a fresh workspace leaves behind.

A suite is an ordinary fixture file whose frontmatter adds arms, a workspace,
verification, forbidden patterns, a judge and ship gates (seed 04). Parsing
expands every table row into one logical row per arm; each such row carries
an ``ArmRow`` naming its suite, its case (the table row) and its arm.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fixtures_core.spec import PropertyValue, Threshold

Severity = Literal["disqualifier", "critical", "warning"]
GateSeverity = Literal["hard", "soft"]
SEVERITIES: tuple[Severity, ...] = ("disqualifier", "critical", "warning")
GATE_SEVERITIES: tuple[GateSeverity, ...] = ("hard", "soft")
DEFAULT_JUDGE_TIMEOUT_S = 600.0
SCORE_METRIC = "score"  # the judge's total, kept per sample as a metric of each arm row


_SHIPPED_FIGURE = re.compile(r"\bbaseline_(?:margin|score)\b")


def matches_case(globs: tuple[str, ...], case: str) -> bool:
    """True when ``globs`` is empty (every case) or one of them matches the case name."""
    return not globs or any(fnmatch.fnmatchcase(case, g) for g in globs)


@dataclass(frozen=True)
class ArmSpec:
    """One arm: what it overrides of the frontmatter (``exec``, ``args``, ``env``, properties)."""

    name: str
    line: int
    exec: str | None = None
    args: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    properties: Mapping[str, PropertyValue] = field(default_factory=dict)


@dataclass(frozen=True)
class VerifySpec:
    """A verification command run in the workspace after the arm (``bash -c``, templated).

    It passes when it exits with ``exit_code``, its output holds every
    ``contains`` text and none of the ``not_contains`` texts. ``rows`` limits
    it to cases whose name matches one of these globs.
    """

    run: str
    line: int
    exit_code: int = 0
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class ForbiddenPattern:
    """A regular expression that must not match the lines an arm added (seed: expected.json)."""

    pattern: str
    line: int
    severity: Severity = "disqualifier"
    description: str = ""
    files: tuple[str, ...] = ()  # globs over changed paths; empty: every file
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeSpec:
    """A judge command speaking assay's JSON protocol on stdin/stdout."""

    command: tuple[str, ...]  # argv templates
    line: int
    rubric: str | None = None  # absolute path of the rubric file
    axes: tuple[str, ...] = ()
    blind: bool = True
    swap: bool = False
    seed: int | None = None
    timeout_s: float = DEFAULT_JUDGE_TIMEOUT_S
    provenance: str | None = None  # a command whose output names the judge's model
    threshold: Threshold = field(default_factory=Threshold)  # of each arm row's score metric


@dataclass(frozen=True)
class GateSpec:
    """A named CEL expression over ``rows`` and ``suite``; hard gates fail the verdict, soft ones warn."""

    name: str
    cel: str
    severity: GateSeverity
    line: int


@dataclass(frozen=True)
class SuiteSpec:
    """The suite keys of one fixture file's frontmatter."""

    file: str
    line: int
    arms: tuple[ArmSpec, ...] = ()
    compare: tuple[str, str] | None = None
    workspace: str | None = None  # template; relative paths are below the fixture file's folder
    setup: str | None = None
    verify: tuple[VerifySpec, ...] = ()
    forbidden: tuple[ForbiddenPattern, ...] = ()
    forbidden_files: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    judge: JudgeSpec | None = None
    gates: tuple[GateSpec, ...] = ()
    cases: tuple[str, ...] = ()  # every case (table row) of the file, whether a run selects it or not

    @property
    def compares_with_shipped(self) -> bool:
        """A gate reads the saved run's figures (``baseline_margin``, ``baseline_score``)."""
        return any(_SHIPPED_FIGURE.search(gate.cel) for gate in self.gates)

    @property
    def pair(self) -> tuple[str, str] | None:
        """The two arms whose margin is reported: ``compare``, else the first two arms."""
        if self.compare is not None:
            return self.compare
        return (self.arms[0].name, self.arms[1].name) if len(self.arms) >= 2 else None


@dataclass(frozen=True)
class ArmRow:
    """Where a logical row sits in its suite: the case (table row) and the arm it runs."""

    suite: SuiteSpec
    case: str
    arm: str | None  # None in a suite without arms (a workspace benchmark)
    case_line: int
    known_limit: tuple[float, float] | None = None
    shared: Mapping[str, PropertyValue] = field(default_factory=dict)  # what every arm of the case shares

    def sibling(self, arm: str) -> str:
        """The row name of another arm of the same case."""
        return arm_row_name(self.case, arm)


def arm_row_name(case: str, arm: str | None) -> str:
    """The logical row name of an arm of a case: ``CASE/ARM``."""
    return case if arm is None else f"{case}/{arm}"


# --- what one attempt leaves behind ------------------------------------------------


@dataclass(frozen=True)
class VerifyResult:
    """One verification command's outcome in one attempt's workspace."""

    command: str
    exit_code: int | None
    passed: bool
    output: str
    error: str | None = None


@dataclass(frozen=True)
class Finding:
    """A forbidden pattern or file found in an attempt's changes."""

    severity: Severity
    rule: str
    file: str | None = None
    line: int | None = None
    text: str | None = None

    def describe(self) -> str:
        where = f" at {self.file}:{self.line}" if self.line is not None else f" in {self.file}" if self.file else ""
        return f"{self.severity}: {self.rule}{where}"


@dataclass(frozen=True)
class Attempt:
    """What one sample of an arm row did to its fresh workspace; the files are under ``evidence``.

    evidence:     the attempt's folder, relative to the folder of the run that ran it
                  (diff.patch, changed-files.txt, verify.json, stdout.txt, stderr.txt,
                  timing.json, command.json, setup.txt).
    verify_score: the fraction of verification commands that passed (None without any).
    disqualified: a ``disqualifier`` pattern or a forbidden file was found.
    """

    evidence: str
    changed_files: tuple[str, ...] = ()
    verify: tuple[VerifyResult, ...] = ()
    verify_score: float | None = None
    findings: tuple[Finding, ...] = ()
    disqualified: bool = False
    dry_run: bool = False
