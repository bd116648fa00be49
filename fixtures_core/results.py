"""What a run found: samples, rows with their metric summaries, and outcomes.

``passed`` is defined once, here, and used by every report and by the gate:
a sample or row passed exactly when its status is PASS.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fixtures_core.spec import Aggregate, Direction, Threshold
from fixtures_core.suite import Attempt

Status = Literal["PASS", "FAIL", "ERR", "SKIP"]
Outcome = Literal["pass", "fail", "error", "not_evaluated"]
RowClass = Literal["stable-pass", "flaky", "stable-fail"]
# How an A/B arm ended its case: it won, lost, tied, or was disqualified (it loses whatever its score).
CaseResult = Literal["won", "lost", "tie", "disqualified"]
# Why a sample, row or run stopped before it finished on its own (None: it did not stop early):
#   timeout    the row's time budget ran out (its ``timeout``), also for a sample its row cancelled for it
#   cancelled  an interrupt cancelled it, or its row had stopped (after an error) and cancelled it in flight
#   budget     a cost budget (``budget: cost_usd <= 5``) was reached, so no new sample started
#   crashed    the engine could not run or record it (an orchestration failure, a bug)
Stop = Literal["timeout", "cancelled", "budget", "crashed", "configuration"]


@dataclass(frozen=True)
class Check:
    """The outcome of one expectation on one sample."""

    status: Outcome
    error: str | None = None
    expression: str | None = None


@dataclass(frozen=True)
class MetricValue:
    """One metric extracted from one sample."""

    status: Outcome
    value: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class SampleResult:
    """One execution of a row's command and what its checks found.

    ``excerpted``: ``stdout``/``stderr`` hold less than was captured (the run
    document keeps a failing sample's first characters and no output of a
    passing one); the raw output is in the row's evidence file.
    ``stopped``: why the sample was stopped before its command finished.
    """

    index: int
    status: Status
    duration_ms: float
    exit_code: int | None
    stdout: str
    stderr: str
    command: Check
    assertions: Check | None = None
    metrics: Mapping[str, MetricValue] = field(default_factory=dict)
    truncated: bool = False
    error: str | None = None
    indeterminate: bool = False
    attempt: Attempt | None = None  # an A/B arm's workspace evidence
    excerpted: bool = False
    stopped: Stop | None = None

    @property
    def passed(self) -> bool:
        return self.status == "PASS"


@dataclass(frozen=True)
class MetricComparison:
    """A row metric's aggregate against the same metric of its baseline row."""

    baseline: str
    status: Outcome
    baseline_value: float | None = None
    regression_percent: float | None = None
    regression_points: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class MetricSummary:
    """A metric's values over a row's samples, its aggregate and its verdict."""

    unit: str
    aggregate: Aggregate
    direction: Direction
    gate: bool
    values: tuple[float, ...]
    status: Outcome
    value: float | None = None
    error: str | None = None
    threshold: Threshold = field(default_factory=Threshold)
    comparison: MetricComparison | None = None


@dataclass(frozen=True)
class Outcomes:
    """A row's verdict split by kind: command, assertions, metrics."""

    command: Outcome
    assertions: Outcome
    metrics: Outcome | None = None


@dataclass(frozen=True)
class Stochastic:
    """Repeat statistics of one row: pass rate with its interval, pass@k and pass^k."""

    n: int
    passed: int
    k: int
    pass_rate: float | None
    row_class: RowClass | None
    pass_at_k: float | None = None
    pass_hat_k: float | None = None
    pass_rate_interval: tuple[float, float] | None = None
    withheld: str | None = None


# How an adaptive row's sampling ended: every gate decided by its sequential test; curtailed (no outcome
# of the samples left could change the answer); undecided at its cap (the most it may take: its max, or
# a budgeted row's max and max_extra); a budgeted row undecided when the sample budget had no sample
# left for it; undecided for another reason (an error, a cost budget, a gate no test decides).
SamplingStop = Literal["decided", "curtailed", "cap", "budget", "undecided"]


@dataclass(frozen=True)
class Sampled:
    """How an adaptive row's sampling ended: ``stop``; ``extra``, the samples the run's sample budget
    gave it past its own stop point; ``cap``, the most a budgeted row may take (None: not budgeted)."""

    stop: SamplingStop
    extra: int = 0
    cap: int | None = None


@dataclass(frozen=True)
class BudgetFigures:
    """What a run's sample budget spent: ``spent`` of ``budget`` samples (``fixed``: what fixed k
    spends on the same rows, their max); its rows by how their sampling ended (``Sampled.stop``), and
    how many took extra samples (``extra_rows``, ``extra`` in all)."""

    budget: int
    spent: int
    fixed: int
    decided: int = 0
    curtailed: int = 0
    at_cap: int = 0
    ran_out: int = 0  # undecided when the budget had no sample left for them
    undecided: int = 0  # undecided for another reason (an error, a cost budget, a gate no test decides)
    extra_rows: int = 0
    extra: int = 0

    @classmethod
    def of(cls, budget: int, rows: Sequence[RowResult]) -> BudgetFigures:
        """The figures of the budgeted ``rows`` (those whose ``sampled`` has a cap) under ``budget``."""
        budgeted = [(row, row.sampled) for row in rows if row.sampled is not None and row.sampled.cap is not None]
        stops = [sampled.stop for _row, sampled in budgeted]
        return cls(
            budget=budget,
            spent=sum(len(row.samples) for row, _sampled in budgeted),
            fixed=sum(row.repeat for row, _sampled in budgeted),
            decided=stops.count("decided"),
            curtailed=stops.count("curtailed"),
            at_cap=stops.count("cap"),
            ran_out=stops.count("budget"),
            undecided=stops.count("undecided"),
            extra_rows=sum(1 for _row, sampled in budgeted if sampled.extra),
            extra=sum(sampled.extra for _row, sampled in budgeted),
        )


@dataclass(frozen=True)
class RowResult:
    """One logical row, however many samples it ran.

    ``evidence``: the file, relative to the run's folder, that holds every
    sample's raw output as it was captured (a re-judged run's rows name the
    file of the run they were read from: ``../RUN/evidence/ROW.jsonl``).
    ``stopped``: why the row stopped before all its samples ran (its
    ``error`` says it in words). ``wall_ms``: the row's wall time in this
    process (None when no sample started here, e.g. a configuration error).
    """

    id: str
    file: str
    name: str
    line: int
    status: Status
    repeat: int
    command: tuple[str, ...]
    properties: Mapping[str, object]
    samples: tuple[SampleResult, ...]
    outcomes: Outcomes
    error: str | None = None
    metrics: Mapping[str, MetricSummary] = field(default_factory=dict)
    stochastic: Stochastic | None = None
    evidence: str | None = None
    stopped: Stop | None = None
    wall_ms: float | None = None  # from the row's first sample start to its end (samples may overlap)
    sampling: str | None = None  # an adaptive row's why it stopped: "decided after 4: ..." or "undecided at max ..."
    sampled: Sampled | None = None  # an adaptive row: how its sampling ended, and its extra samples
    case_result: CaseResult | None = None  # an A/B arm: how it ended its case (None: no winner was decided)

    @property
    def passed(self) -> bool:
        return self.status == "PASS"
