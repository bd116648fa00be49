"""What a fixture file declares: rows, their commands, expectations and metrics.

These are the parsed, validated inputs of a run. Results live in ``results``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fixtures_core.properties import PropertyValue as PropertyValue  # re-exported: rows hold them
from fixtures_core.suite import ArmRow
from fixtures_core.threshold import Threshold as Threshold  # re-exported: metrics declare them

Aggregate = Literal["mean", "median", "min", "max", "p95"]
Direction = Literal["lower", "higher", "none"]

AGGREGATES: tuple[Aggregate, ...] = ("mean", "median", "min", "max", "p95")
DIRECTIONS: tuple[Direction, ...] = ("lower", "higher", "none")
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class MetricSpec:
    """One numeric metric extracted from every sample with a CEL expression."""

    name: str
    extract: str
    unit: str
    file: str
    line: int
    aggregate: Aggregate = "mean"
    direction: Direction = "none"
    baseline: str | None = None
    threshold: Threshold = field(default_factory=Threshold)
    gate: bool = True

    def baseline_for(self, row_name: str) -> str | None:
        """The row this metric of ``row_name`` compares with; None when it has no
        baseline or names the row itself (inherited from the frontmatter: it is the baseline)."""
        return None if self.baseline == row_name else self.baseline


@dataclass(frozen=True)
class Redaction:
    """What a fixture file asks assay to mask (frontmatter ``redact:``).

    ``patterns`` are the file's own regexes, masked in addition to the built-in
    set of API-key shapes (``fixtures_core.redaction``); ``redact: false``
    turns masking off for the file.
    """

    patterns: tuple[str, ...] = ()
    enabled: bool = True


@dataclass(frozen=True)
class Rate:
    """At most ``count`` sample starts per ``per_s`` seconds (``10/minute``), as a token bucket."""

    count: int
    per_s: float

    def __str__(self) -> str:
        unit = {1.0: "second", 60.0: "minute", 3600.0: "hour"}.get(self.per_s)
        return f"{self.count}/{unit}" if unit else f"{self.count}/{self.per_s:g}s"


@dataclass(frozen=True)
class Limit:
    """Per value of a row property (``provider``): at most ``concurrency`` samples in flight,
    and at most ``rate`` sample starts (``limits: {provider: 2}``, ``--limit provider=10/minute``)."""

    property: str
    concurrency: int | None = None
    rate: Rate | None = None


@dataclass(frozen=True)
class Budget:
    """A cap on a metric summed over the samples of a run (``budget: cost_usd <= 5``): once the
    sum reaches ``cap`` no new sample starts. ``where`` is where it was set (``file:line``, ``--budget``)."""

    metric: str
    cap: float
    where: str

    def __str__(self) -> str:
        return f"{self.metric} <= {self.cap:g}"


@dataclass(frozen=True)
class Sampling:
    """Adaptive sampling of a row (``sampling: adaptive``): after each finished sample past ``min``,
    a sequential test per gate decides whether more samples could still change the row's verdict,
    at ``confidence``; sampling stops once every gate is decided, or at ``max``. ``margin`` is the
    indifference zone of each test: a pass rate within ``margin`` of its threshold is not told apart
    from the threshold, so such a row runs to ``max`` (``sequential``)."""

    adaptive: bool = True  # False: ``sampling: fixed`` (a run's ``--adaptive`` leaves the row alone)
    min: int = 3
    max: int | None = None  # None: the row's repeat (20 when that is 1); parsing sets ``repeat`` to it
    confidence: float = 0.95
    margin: float = 0.1
    # ``budget: fixed`` (or ``--sample-budget``): the row shares the run's sample budget, and may take
    # samples that decided rows left, past its max, up to ``max_extra`` more (None: twice its max).
    budget: bool = False
    max_extra: int | None = None


@dataclass(frozen=True)
class Daemon:
    """A service a file's rows talk to (Gavel's frontmatter ``daemon:``): assay starts ``command``
    on a free TCP port (``{{ .port }}``, ``$PORT``) before the file's first row, waits up to
    ``ready_s`` until the port accepts connections, and stops it when the rows are done.
    ``where`` is where it was set (``file:line``), which also names it."""

    command: str
    where: str
    ready_s: float = 30.0


@dataclass(frozen=True)
class Expectation:
    """What every sample must show: exit code, exact streams, a CEL assertion."""

    exit_code: int = 0
    stdout: str | None = None
    stderr: str | None = None
    cel: str | None = None
    cel_line: int = 0
    stdout_file: str | None = None  # a golden file (``@path``): ``stdout`` holds its text, compared exactly
    stderr_file: str | None = None


@dataclass(frozen=True)
class RowSpec:
    """One logical fixture row: a table row or a ``### command:`` block.

    ``argv`` items are templates (``{{ .name }}``) rendered per sample.
    """

    file: str
    line: int
    name: str
    argv: tuple[str, ...]
    expect: Expectation
    properties: Mapping[str, PropertyValue]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    repeat: int = 1
    metrics: tuple[MetricSpec, ...] = ()
    skip: str | None = None  # a reason: the row is skipped without running anything
    skip_command: str | None = None  # a shell command run before the row: exit 0 skips it (Gavel's ``skip:``)
    indeterminate: str | None = None
    source_dir: str = ""  # the fixture file's folder, absolute: ``{{ .sourceDir }}``
    fixture_id: str = ""  # the file's stable name in run documents (``parser.fixture_identity``)
    ab: ArmRow | None = None  # the row's case and arm in an A/B suite
    redaction: Redaction = field(default_factory=Redaction)
    # The row's samples run one after another, in order: True or None (not said, seed 01's default, for
    # commands that share state between samples); False only when the fixture opts in (``serial: false``).
    serial: bool | None = None
    concurrency: int | None = None  # the file's frontmatter: samples in flight at once (a run takes the smallest)
    limits: tuple[Limit, ...] = ()  # the file's frontmatter: caps per property value
    budget: Budget | None = None  # the file's frontmatter: a summed metric its samples may spend
    daemon: Daemon | None = None  # the file's frontmatter: a service started for its rows
    # The share of samples that must pass (1: every one, the seeds' rule); below it the row is FAIL.
    pass_rate: float = 1.0
    sampling: Sampling | None = None  # adaptive sampling (``repeat`` is then its ``max``); None: fixed k
    # A configuration error of this row alone (``path:line: field: message``): the row is ERR without
    # running anything, and every other row of its file still runs (Gavel runs them too).
    error: str | None = None

    @property
    def adaptive(self) -> bool:
        """The row samples adaptively: it stops once its gates are decided (``sequential``)."""
        return self.sampling is not None and self.sampling.adaptive

    @property
    def budgeted(self) -> bool:
        """The row shares the run's sample budget (``execution.sample_budget``): it may take samples
        that decided rows left, past its ``repeat`` (its max), up to ``most_samples``."""
        return self.sampling is not None and self.sampling.adaptive and self.sampling.budget

    @property
    def most_samples(self) -> int:
        """The most samples the row may take: its ``repeat``, and a budgeted row's ``max_extra`` more."""
        if not self.budgeted:
            return self.repeat
        assert self.sampling is not None
        extra = self.sampling.max_extra
        return self.repeat + (2 * self.repeat if extra is None else extra)

    @property
    def longest_s(self) -> float:
        """The longest the row may run: its ``timeout``, and each extra sample's share of it
        (``timeout / repeat``) that a budgeted row may add."""
        return self.timeout_s * self.most_samples / self.repeat

    @property
    def samples_in_order(self) -> bool:
        """The row's samples run strictly one after another unless the fixture or run opted out."""
        return self.serial is not False

    @property
    def id(self) -> str:
        """Stable identity of a row across runs: file and name."""
        return f"{self.fixture_id or self.file}::{self.name}"

    def compared_baselines(self) -> set[str]:
        """Names of the other rows this row compares with: its metrics' baseline rows (a row
        naming itself is the baseline) and the other arms of its A/B case (the judge needs them)."""
        names = {name for m in self.metrics if (name := m.baseline_for(self.name)) is not None}
        if self.ab is not None and self.ab.arm is not None:
            names |= {self.ab.sibling(arm.name) for arm in self.ab.suite.arms} - {self.name}
        return names


@dataclass(frozen=True)
class FixtureWarning:
    """Something in a fixture file that assay reads but does not run or check (``assay validate`` shows it)."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class FixtureFile:
    """A parsed fixture file and the digest of its bytes.

    ``path`` is as the user gave it (for messages); ``identity`` is how run
    documents name the file, the same from any working directory. ``errors``: what
    broke the file as a whole (its frontmatter, its bytes): every row of it is ERR
    with the first of them, and the other files run.
    """

    path: str
    sha256: str
    rows: tuple[RowSpec, ...]
    identity: str = ""
    warnings: tuple[FixtureWarning, ...] = ()
    frontmatter_end: int = 0  # the line of the frontmatter's closing fence (0: none); errors up to it break the file
    errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Matrix:
    """Every row of every fixture file of one run."""

    files: tuple[FixtureFile, ...]

    @property
    def rows(self) -> tuple[RowSpec, ...]:
        return tuple(row for f in self.files for row in f.rows)
