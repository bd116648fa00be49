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

from fixtures_core.properties import PropertyValue
from fixtures_core.threshold import Threshold

Severity = Literal["disqualifier", "critical", "warning"]
GateSeverity = Literal["hard", "soft"]
SEVERITIES: tuple[Severity, ...] = ("disqualifier", "critical", "warning")
GATE_SEVERITIES: tuple[GateSeverity, ...] = ("hard", "soft")
# What a forbidden pattern is matched against: the lines the arm added (assay's rule), or the whole diff
# of the files it names, context and removed lines included (devlyn's harness scans ``diff.patch``).
PatternScope = Literal["added", "diff"]
# Attempt outcomes that disqualify an arm besides its findings (devlyn's harness: any of them).
#   verify_failed  a verification command failed (verify score below 1)
#   arm_failed     the arm's command exited non-zero
#   timed_out      the arm ran past its own time limit
#   self_verdict   the arm's own verdict file does not say it passed (``SelfVerdict``)
DisqualifyRule = Literal["verify_failed", "arm_failed", "timed_out", "self_verdict"]
DISQUALIFY_RULES: tuple[DisqualifyRule, ...] = ("verify_failed", "arm_failed", "timed_out", "self_verdict")
# How a judge is spoken to: assay's JSON document, or devlyn's judge.sh prompt and reply.
JudgeProtocol = Literal["assay", "devlyn"]
# Where a finding comes from: a forbidden pattern, a forbidden or missing file, added dependencies,
# an oracle command, a disqualifying outcome of the attempt (``DisqualifyRule``).
FindingKind = Literal["pattern", "forbidden_file", "required_file", "dependencies", "oracle", "rule"]
DEFAULT_JUDGE_TIMEOUT_S = 600.0
SCORE_METRIC = "score"  # the judge's total, kept per sample as a metric of each arm row


SHIPPED_FIGURE = re.compile(r"\bbaseline_(?:margin|score|findings|catch_rate)\b")


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
    prompt: str | None = None  # the case document it is given as its prompt (devlyn: ``spec`` or ``task``)
    model: str | None = None  # the model it runs, as the suite file says it
    provenance: str | None = None  # a command whose output names its model (``claude --version``)


@dataclass(frozen=True)
class VerifySpec:
    """A verification command run in the workspace after the arm (``bash -c``, templated).

    It passes when it exits with ``exit_code``, its output (stdout and stderr)
    holds every ``contains`` text and none of the ``not_contains`` texts, and
    its stdout alone holds every ``stdout_contains`` text and none of the
    ``stdout_not_contains`` texts. ``rows`` limits it to cases whose name
    matches one of these globs.
    """

    run: str
    line: int
    exit_code: int = 0
    contains: tuple[str, ...] = ()
    not_contains: tuple[str, ...] = ()
    rows: tuple[str, ...] = ()
    stdout_contains: tuple[str, ...] = ()  # matched against stdout alone (seed 04's ``stdout_contains``)
    stdout_not_contains: tuple[str, ...] = ()
    timeout_s: float | None = None  # its own limit (devlyn's ``timeout_sec``); None: the row's budget
    shell: str = "bash"  # ``bash -c`` (assay) or ``sh -c`` (devlyn's harness runs it with shell=True)
    templated: bool = True  # ``{{ .name }}`` is rendered (assay); devlyn's commands run as written


@dataclass(frozen=True)
class ForbiddenPattern:
    """A regular expression that must not match the lines an arm added (seed: expected.json)."""

    pattern: str
    line: int
    severity: Severity = "disqualifier"
    description: str = ""
    files: tuple[str, ...] = ()  # globs over changed paths; empty: every file
    rows: tuple[str, ...] = ()
    scope: PatternScope = "added"


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
    protocol: JudgeProtocol = "assay"


@dataclass(frozen=True)
class OracleSpec:
    """A command run in the workspace after the arm that prints findings as JSON
    (``{"findings": [{"severity": ...}], "error": ...}``, devlyn's deterministic oracles).

    ``argv`` items are templates that also see ``{{ .workspace }}``, ``{{ .scaffold }}`` (the
    starting commit) and ``{{ .expected }}``. A finding whose severity is one of
    ``disqualifying`` disqualifies the arm; an oracle that fails or prints no such JSON does too.
    """

    name: str
    argv: tuple[str, ...]
    disqualifying: tuple[str, ...] = ("disqualifier", "hard", "flag")


@dataclass(frozen=True)
class SelfVerdict:
    """A verdict the arm writes about itself in its workspace (devlyn's ``pipeline.state.json``).

    The newest of ``files`` that exists (globs, relative to the workspace, tried in order) is read as
    JSON; every dotted path of ``fields`` must hold one of ``accepted``. It applies to every arm but
    those named in ``exempt``; a missing file or field is a failed verdict.
    """

    files: tuple[str, ...]
    fields: tuple[str, ...]
    accepted: tuple[str, ...]
    exempt: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseChecks:
    """What every attempt of one case is checked against after its arm (seed 04's ``expected.json``).

    verify_env:      extra environment of the verification commands and oracles (not the arm's).
    documents:       the case's named files (``spec``, ``task``, ``expected``): arms take their
                     prompt from one, and devlyn's judge reads them.
    """

    verify: tuple[VerifySpec, ...] = ()
    forbidden: tuple[ForbiddenPattern, ...] = ()
    forbidden_files: tuple[str, ...] = ()
    required_files: tuple[str, ...] = ()
    max_deps_added: int | None = None
    oracles: tuple[OracleSpec, ...] = ()
    verify_env: Mapping[str, str] = field(default_factory=dict)
    documents: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RequiredFile:
    """A path that must exist in the workspace after the arm (a disqualifier when missing)."""

    path: str
    line: int
    rows: tuple[str, ...] = ()


@dataclass(frozen=True)
class GateSpec:
    """A named CEL expression over ``rows`` and ``suite``; hard gates fail the verdict, soft ones warn."""

    name: str
    cel: str
    severity: GateSeverity
    line: int


@dataclass(frozen=True)
class CaseFacts:
    """What a gate may read of a case before it runs (its shared properties, whether it is a known limit):
    a subset's gates tell a case they are about from one they are not, whether it ran or not."""

    name: str
    properties: Mapping[str, PropertyValue] = field(default_factory=dict)
    known_limit: bool = False


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
    case_facts: tuple[CaseFacts, ...] = ()  # the same cases, what gates read of them before they run
    required_files: tuple[RequiredFile, ...] = ()
    max_deps_added: int | None = None
    disqualify: tuple[DisqualifyRule, ...] | None = None  # None: not said (devlyn's suites: every rule)
    self_verdict: SelfVerdict | None = None
    accept_missing: bool = False  # a suite in bootstrap (devlyn's --accept-missing): no coverage floor
    workspace_env: tuple[str, ...] = ()  # more names of the workspace's path in the arm's environment
    source: str = "markdown"  # "markdown", or "devlyn" for a suite read from devlyn's fixture folders

    @property
    def compares_with_shipped(self) -> bool:
        """A gate reads the saved run's figures (``baseline_margin``, ``baseline_score``)."""
        return any(SHIPPED_FIGURE.search(gate.cel) for gate in self.gates)

    @property
    def pair(self) -> tuple[str, str] | None:
        """The two arms whose margin is reported: ``compare``, else the first two arms."""
        if self.compare is not None:
            return self.compare
        return (self.arms[0].name, self.arms[1].name) if len(self.arms) >= 2 else None


@dataclass(frozen=True)
class ArmRow:
    """Where a logical row sits in its suite: the case (table row) and the arm it runs.

    checks:         what the case's attempts are checked against (the suite's checks that apply to it).
    prompt:         the name of the case document the arm is given as its prompt (``input.md``).
    arm_timeout_s:  the arm's own limit in one attempt (devlyn's ``timeout_seconds``): past it the arm
                    is stopped and the attempt goes on to its diff and verification; None: the row's budget.
    """

    suite: SuiteSpec
    case: str
    arm: str | None  # None in a suite without arms (a workspace benchmark)
    case_line: int
    known_limit: tuple[float, float] | None = None
    shared: Mapping[str, PropertyValue] = field(default_factory=dict)  # what every arm of the case shares
    checks: CaseChecks = field(default_factory=CaseChecks)
    prompt: str | None = None
    arm_timeout_s: float | None = None
    retired: bool = False  # a devlyn fixture under ``fixtures/retired/``: runs only when named by its id

    def sibling(self, arm: str) -> str:
        """The row name of another arm of the same case."""
        return arm_row_name(self.case, arm)


def arm_row_name(case: str, arm: str | None) -> str:
    """The logical row name of an arm of a case: ``CASE/ARM``."""
    return case if arm is None else f"{case}/{arm}"


def case_checks(suite: SuiteSpec, case: str) -> CaseChecks:
    """The suite's checks that apply to ``case`` (those without ``rows``, or whose globs match it)."""
    return CaseChecks(
        verify=tuple(v for v in suite.verify if matches_case(v.rows, case)),
        forbidden=tuple(p for p in suite.forbidden if matches_case(p.rows, case)),
        forbidden_files=suite.forbidden_files,
        required_files=tuple(f.path for f in suite.required_files if matches_case(f.rows, case)),
        max_deps_added=suite.max_deps_added,
    )


# --- what one attempt leaves behind ------------------------------------------------


@dataclass(frozen=True)
class VerifyResult:
    """One verification command's outcome in one attempt's workspace.

    reason: why it failed, as devlyn's verify.json says it: ``exit``, ``missing_contains``,
            ``unexpected_text``, ``timeout`` or ``error``; None when it passed.
    """

    command: str
    exit_code: int | None
    passed: bool
    output: str
    error: str | None = None
    expected_exit: int = 0
    reason: str | None = None


@dataclass(frozen=True)
class Finding:
    """A forbidden pattern or file found in an attempt's changes."""

    severity: Severity
    rule: str
    file: str | None = None
    line: int | None = None
    text: str | None = None
    kind: FindingKind = "pattern"
    source: str | None = None  # the pattern, path or oracle the finding comes from

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
    disqualified: a finding of severity ``disqualifier`` (a pattern, a forbidden or missing file,
                  too many new dependencies, an oracle, a disqualifying outcome) was found.
    deps_added:   new dependencies in package.json (None when the case sets no ``max_deps_added``).
    arm_timed_out: the arm ran past its own limit and was stopped (the attempt went on).
    prompt:       the attempt's ``input.md`` (relative to ``evidence``) when the arm was given a prompt.
    """

    evidence: str
    changed_files: tuple[str, ...] = ()
    verify: tuple[VerifyResult, ...] = ()
    verify_score: float | None = None
    findings: tuple[Finding, ...] = ()
    disqualified: bool = False
    dry_run: bool = False
    deps_added: int | None = None
    arm_timed_out: bool = False
    prompt: str | None = None
