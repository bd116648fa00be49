"""What changed across a suite's runs: status strips, flips, flaky streaks, metric steps, cost.

Pure functions over saved runs (``records.history`` reads them from disk),
oldest first. Rows are matched across runs as the baseline gate matches them:
by fixture file and row name.

Rules (README, "Trends: what changed since last night"):

* **A flip** is a row whose status in the newest run differs from its
  status in the run before it (a row new in the newest run is no flip).
* **Flaky in a run**: some but not all of the row's samples passed in it
  (``Stochastic.row_class == "flaky"``), whatever its status. A row is
  reported "flaky in F of the last N runs", N the runs it ran in.
* **A metric's step** (the change-point rule): the series is the row's
  aggregate of the metric in each run it has one. Every split into an
  earlier part and a later part of at least ``MIN_SIDE`` runs each is tried;
  the one whose two parts sit closest to their own medians (the least sum of
  absolute deviations) is the candidate. It is a step when the two medians
  differ by more than ``STEP_FRACTION`` of the earlier median and by more
  than ``STEP_NOISE`` times the noise (the larger of the two parts' mean
  absolute deviations from their medians: a series that alternates between
  two values is noise, not a step). One step per series at most: the best
  split.
* **Cost**: a run's cost is the sum of every sample's value of each metric
  whose name contains ``cost`` (``cost_usd``), per metric.
* **Since the previous run**: new failures are rows FAIL or ERR now that
  were not in the previous run (they passed, were skipped, or did not
  exist); fixed rows failed then and pass now.
* **The age of a failure**: a row FAIL or ERR in the newest run has failed
  since the first run of its unbroken streak of FAIL or ERR runs of the
  suite (a run it did not fail in, or did not run in, ends the streak). A
  streak of one run is new tonight. When every run read is in the streak,
  it may be older (``Age.at_least``).
* **A change in the window**: a row's last status change between two runs
  it ran in, among the runs read (``RowTrend.change``).
* **A metric's move since the previous run**: a row's aggregate of a metric
  moved when it differs from the previous run's by more than
  ``STEP_FRACTION`` of the earlier value and by more than ``STEP_NOISE``
  times the noise (the larger of the two runs' mean absolute deviations of
  the row's samples from their median): the step rule, on two runs; or when
  the metric passed its threshold then and fails it now. Moves are grouped
  by metric and direction, and named by a row property every moved row of
  the group shares (the one that fits the fewest rows of the run:
  ``provider=anthropic``), when there is one.
* **An A/B suite since the previous run** is told in its own terms: its ship
  decision then and now, and the cases whose winner changed or whose margin
  moved by ``CASE_MARGIN_MOVE`` points or more, with both values. The rows
  of an A/B suite's arms are left out of new failures, fixed and still
  failing (an arm row passing its own checks says nothing of its case).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fixtures_core.analysis.shipgate import SuiteOutcome
from fixtures_core.changes import Changes
from fixtures_core.results import MetricSummary, RowResult, Status

if TYPE_CHECKING:  # rundoc's RunResult is what trends read; records come after analysis
    from fixtures_core.records.rundoc import RunResult


CASE_MARGIN_MOVE = 1.0  # points of a case's margin that count as a change
MAX_AGE_RUNS = 100  # earlier runs read back to find where a failure began
MIN_SIDE = 2  # runs on each side of a step
STEP_FRACTION = 0.10  # the medians must differ by more than this share of the earlier one
STEP_NOISE = 3.0  # ... and by more than this many times the larger mean absolute deviation from a median
_FAILING: tuple[Status, ...] = ("FAIL", "ERR")

RowKey = tuple[str, str]  # (fixture file, row name)


@dataclass(frozen=True)
class Cost:
    """One cost metric summed over a run's samples: ``total`` in ``unit`` over ``samples`` values."""

    metric: str
    unit: str
    total: float
    samples: int


@dataclass(frozen=True)
class RunPoint:
    """One run as a trend shows it: its id, label, start, commit, verdict and cost."""

    run_id: str
    label: str | None
    started_at: str
    commit: str | None
    verdict: str
    costs: tuple[Cost, ...] = ()

    @property
    def cost(self) -> Cost | None:
        """The run's first cost metric (by name), or None without one."""
        return self.costs[0] if self.costs else None


@dataclass(frozen=True)
class RunStatuses:
    """A run as a failure's age reads it: the run, and each row's status by fixture file and name."""

    point: RunPoint
    statuses: Mapping[RowKey, Status]


@dataclass(frozen=True)
class Step:
    """Where a metric's series changed level: the first run of the later part, and the medians.

    index:   position of the first run after the step in the series' runs (oldest first).
    before:  median of the earlier part; after: median of the later part.
    change:  ``(after - before) / |before|`` (None when ``before`` is 0).
    noise:   the larger of the two parts' mean absolute deviations from their medians.
    """

    index: int
    before: float
    after: float
    change: float | None
    noise: float


@dataclass(frozen=True)
class Age:
    """How long a row failing in the newest run has failed (module docstring).

    since:    the first run of its unbroken streak of failing runs.
    runs:     how many runs the streak holds, the newest included (1: new tonight).
    number:   the ``since`` run's place among the runs shown (1: the oldest), when they are numbered.
    at_least: every run read is in the streak: it may have begun earlier.
    """

    file: str
    name: str
    since: RunPoint
    runs: int
    number: int | None = None
    at_least: bool = False

    @property
    def new(self) -> bool:
        return self.runs == 1 and not self.at_least


@dataclass(frozen=True)
class Change:
    """A row's last status change in the window: from ``before`` to ``after`` at run ``index`` (0-based)."""

    index: int
    before: Status
    after: Status


@dataclass(frozen=True)
class MetricTrend:
    """One metric of one row across the runs: its aggregate per run (None where it has none)."""

    name: str
    unit: str
    direction: str
    values: tuple[float | None, ...]
    step: Step | None = None

    @property
    def worse(self) -> bool | None:
        """The step went the wrong way for the metric's direction (None: no step, or no direction)."""
        if self.step is None or self.direction not in ("lower", "higher"):
            return None
        up = self.step.after > self.step.before
        return up if self.direction == "lower" else not up


@dataclass(frozen=True)
class RowTrend:
    """One row across the runs.

    statuses: the row's status in each run (None: it did not run there).
    flaky:    per run, whether some but not all of its samples passed.
    flip:     (before, after) when its status changed between the last two runs it could be compared in.
    flips:    how many times its status changed between consecutive runs it ran in.
    """

    file: str
    name: str
    statuses: tuple[Status | None, ...]
    flaky: tuple[bool, ...]
    flip: tuple[Status, Status] | None
    flips: int
    metrics: tuple[MetricTrend, ...] = ()
    age: Age | None = None
    change: Change | None = None

    @property
    def ran(self) -> int:
        return sum(status is not None for status in self.statuses)

    @property
    def flaky_runs(self) -> int:
        return sum(self.flaky)

    @property
    def latest(self) -> Status | None:
        return self.statuses[-1] if self.statuses else None

    @property
    def steps(self) -> tuple[MetricTrend, ...]:
        return tuple(m for m in self.metrics if m.step is not None)


@dataclass(frozen=True)
class Trends:
    """A suite's last runs (oldest first) and its rows: flipped rows first, then flaky, then by name."""

    runs: tuple[RunPoint, ...]
    rows: tuple[RowTrend, ...]
    changes: Changes | None = None  # the commits between the last two runs (``records.git_changes``), when known

    @property
    def failing(self) -> tuple[RowTrend, ...]:
        """Rows failing in the newest run, the oldest break first."""
        found = [row for row in self.rows if row.age is not None]
        return tuple(sorted(found, key=lambda row: -row.age.runs if row.age else 0))

    @property
    def changed(self) -> tuple[RowTrend, ...]:
        """Rows whose status changed in the window, the latest change first."""
        found = [row for row in self.rows if row.change is not None]
        return tuple(sorted(found, key=lambda row: -row.change.index if row.change else 0))

    @property
    def flipped(self) -> tuple[RowTrend, ...]:
        return tuple(row for row in self.rows if row.flip is not None)

    @property
    def flaky(self) -> tuple[RowTrend, ...]:
        """Rows flaky in two runs or more of the window."""
        return tuple(row for row in self.rows if row.flaky_runs >= 2)

    @property
    def stepped(self) -> tuple[RowTrend, ...]:
        return tuple(row for row in self.rows if row.steps)

    def total_cost(self) -> tuple[Cost, ...]:
        """Each cost metric summed over every run of the window."""
        totals: dict[tuple[str, str], tuple[float, int]] = {}
        for run in self.runs:
            for cost in run.costs:
                total, samples = totals.get((cost.metric, cost.unit), (0.0, 0))
                totals[(cost.metric, cost.unit)] = (total + cost.total, samples + cost.samples)
        return tuple(Cost(metric, unit, total, samples) for (metric, unit), (total, samples) in totals.items())


@dataclass(frozen=True)
class MetricMove:
    """A metric that moved since the previous run on some rows, the same way (module docstring).

    rows:    the moved rows' names; changes: each one's ``(now - then) / |then|`` (None where then was 0).
    worse:   the move went the wrong way for the metric's direction (None: it has none).
    shared:  ``(property, value)`` every moved row has, when some does; ``of``: the run's rows with it.
    """

    metric: str
    unit: str
    up: bool
    worse: bool | None
    rows: tuple[str, ...]
    changes: tuple[float | None, ...]
    shared: tuple[str, str] | None = None
    of: int = 0


@dataclass(frozen=True)
class CaseChange:
    """A case of an A/B suite whose winner or margin changed since the previous run."""

    name: str
    margin_then: float | None
    margin_now: float | None
    winner_then: str | None
    winner_now: str | None


@dataclass(frozen=True)
class SuiteChange:
    """An A/B suite in the previous run (``then``) and now: its ship decision, and the cases that changed."""

    file: str
    then: SuiteOutcome
    now: SuiteOutcome
    cases: tuple[CaseChange, ...]


@dataclass(frozen=True)
class Since:
    """The current run against the previous run of its suite.

    new_failures: rows FAIL or ERR now that were not before (passed, skipped or absent).
    fixed:        rows that failed before and pass now.
    still_failing: rows that failed before and fail now.
    cost_before, cost_after: the first cost metric's totals (None when a side has none).
    ages:         the age of every row failing now (``failure_ages``), in the run's order.
    moves:        the metrics that moved since then (``metric_moves``), the most rows first.
    """

    previous: RunPoint
    new_failures: tuple[str, ...]
    fixed: tuple[str, ...]
    still_failing: tuple[str, ...]
    cost_before: Cost | None = None
    cost_after: Cost | None = None
    ages: tuple[Age, ...] = ()
    moves: tuple[MetricMove, ...] = ()
    suites: tuple[SuiteChange, ...] = ()
    changes: Changes | None = None  # the commits between the two runs (``records.git_changes``), when known
    rows_counted: bool = True  # the run has rows outside A/B suites: the row counts say something

    def age_of(self, row: RowResult) -> Age | None:
        """The age of a row of the current run (None: it does not fail now)."""
        return next((age for age in self.ages if (age.file, age.name) == (row.file, row.name)), None)

    @property
    def cost_change(self) -> float | None:
        """``(after - before) / |before|`` of the first cost metric present on both sides (None otherwise)."""
        before, after = self.cost_before, self.cost_after
        if before is None or after is None or before.metric != after.metric or before.total == 0:
            return None
        return (after.total - before.total) / abs(before.total)


# --- runs ------------------------------------------------------------------------------


def run_costs(run: RunResult) -> tuple[Cost, ...]:
    """Every cost metric of the run (a name containing ``cost``), summed over its samples, by name."""
    totals: dict[str, tuple[str, float, int]] = {}
    for row in run.rows:
        for name, summary in row.metrics.items():
            if "cost" not in name.lower():
                continue
            unit, total, samples = totals.get(name, (summary.unit, 0.0, 0))
            totals[name] = (unit, total + math.fsum(summary.values), samples + len(summary.values))
    return tuple(Cost(name, unit, total, samples) for name, (unit, total, samples) in sorted(totals.items()))


def statuses_of(run: RunResult) -> RunStatuses:
    """A run read whole, as a failure's age reads it."""
    return RunStatuses(run_point(run), {_key(row): row.status for row in run.rows})


def run_point(run: RunResult) -> RunPoint:
    """The run as trends show it."""
    git = run.environment.get("git")
    commit = git.get("commit") if isinstance(git, Mapping) else None
    return RunPoint(
        run_id=run.run_id,
        label=run.label,
        started_at=run.started_at,
        commit=str(commit) if commit else None,
        verdict=run.verdict.shown,
        costs=run_costs(run),
    )


def _key(row: RowResult) -> RowKey:
    return (row.file, row.name)


def _failing(row: RowResult | None) -> bool:
    return row is not None and row.status in _FAILING


# --- since the previous run ---------------------------------------------------------------


def since_previous(previous: RunResult, current: RunResult, earlier: Iterable[RunStatuses] = ()) -> Since:
    """What changed from ``previous`` to ``current`` (module docstring); ``earlier`` are the runs of the suite
    before ``previous``, newest first, read as far as the failures' ages need."""
    before = {_key(row): row for row in previous.rows}
    new: list[str] = []
    fixed: list[str] = []
    still: list[str] = []
    arms = {suite.file for suite in current.suites}
    plain = [row for row in current.rows if row.file not in arms]
    for row in plain:
        then = before.get(_key(row))
        if _failing(row):
            (still if _failing(then) else new).append(row.name)
        elif row.status == "PASS" and _failing(then):
            fixed.append(row.name)
    previous_point, current_point = run_point(previous), run_point(current)
    after = current_point.cost
    before_cost = next((c for c in previous_point.costs if after is not None and c.metric == after.metric), None)
    return Since(
        previous=previous_point,
        new_failures=tuple(new),
        fixed=tuple(fixed),
        still_failing=tuple(still),
        cost_before=before_cost if after is not None else previous_point.cost,
        cost_after=after,
        ages=failure_ages(current, _chained(statuses_of(previous), earlier)),
        moves=metric_moves(previous, current, arms),
        suites=suite_changes(previous, current),
        rows_counted=bool(plain) or not current.suites,
    )


def suite_changes(previous: RunResult, current: RunResult) -> tuple[SuiteChange, ...]:
    """Each A/B suite of ``current`` that ``previous`` ran too: its decision then and now, the changed cases."""
    then_suites = {suite.file: suite for suite in previous.suites}
    found = []
    for now in current.suites:
        then = then_suites.get(now.file)
        if then is None:
            continue
        cases_then = {case.name: case for case in then.cases}
        changed = []
        for case in now.cases:
            old = cases_then.get(case.name)
            if old is None:
                continue
            margin_moved = (old.margin is None) != (case.margin is None) or (
                old.margin is not None and case.margin is not None and abs(case.margin - old.margin) >= CASE_MARGIN_MOVE
            )
            if margin_moved or old.winner != case.winner:
                changed.append(CaseChange(case.name, old.margin, case.margin, old.winner, case.winner))
        found.append(SuiteChange(now.file, then, now, tuple(changed)))
    return tuple(found)


def metric_moves(previous: RunResult, current: RunResult, left_out: Iterable[str] = ()) -> tuple[MetricMove, ...]:
    """The metrics that moved from ``previous`` to ``current`` (module docstring), grouped; the rows of the
    fixture files ``left_out`` (A/B suites: their cases say what moved) are not counted."""
    before = {_key(row): row for row in previous.rows}
    groups: dict[tuple[str, bool], list[tuple[RowResult, float | None]]] = {}
    skipped = set(left_out)
    for row in current.rows:
        then = before.get(_key(row))
        if then is None or row.file in skipped:
            continue
        for name, now in row.metrics.items():
            was = then.metrics.get(name)
            if was is None or was.value is None or now.value is None or not _moved(was, now):
                continue
            change = (now.value - was.value) / abs(was.value) if was.value else None
            groups.setdefault((name, now.value > was.value), []).append((row, change))
    moves = []
    for (name, up), found in groups.items():
        first = found[0][0].metrics[name]
        worse = None if first.direction not in ("lower", "higher") else up == (first.direction == "lower")
        shared, of = _shared_property(
            [row for row, _change in found], [r for r in current.rows if r.file not in skipped]
        )
        moves.append(
            MetricMove(
                name, first.unit, up, worse, tuple(row.name for row, _ in found), tuple(c for _, c in found), shared, of
            )
        )
    return tuple(sorted(moves, key=lambda move: (-len(move.rows), move.metric)))


def _moved(was: MetricSummary, now: MetricSummary) -> bool:
    """The step rule on two runs, or a threshold passed then and failed now."""
    assert was.value is not None and now.value is not None
    if was.status == "pass" and now.status == "fail":
        return True
    noise = max(_mean_deviation(was.values), _mean_deviation(now.values))
    difference = abs(now.value - was.value)
    return difference > STEP_FRACTION * abs(was.value) and difference > STEP_NOISE * noise


def _mean_deviation(values: Sequence[float]) -> float:
    finite = [value for value in values if math.isfinite(value)]
    return _spread(finite) / len(finite) if finite else 0.0


def _shared_property(rows: Sequence[RowResult], everyone: Sequence[RowResult]) -> tuple[tuple[str, str] | None, int]:
    """The ``(property, value)`` all ``rows`` share that the fewest of ``everyone`` have, and how many do."""
    common = {(k, str(v)) for k, v in rows[0].properties.items() if v not in (None, "")}
    for row in rows[1:]:
        common &= {(k, str(v)) for k, v in row.properties.items()}
    if not common:
        return None, 0
    counts = {pair: sum(str(r.properties.get(pair[0])) == pair[1] for r in everyone) for pair in common}
    best = min(sorted(counts), key=lambda pair: counts[pair])
    if counts[best] == len(everyone) and len(rows) < len(everyone):  # every row has it: it names nothing
        return None, 0
    return best, counts[best]


def _chained(first: RunStatuses, rest: Iterable[RunStatuses]) -> Iterable[RunStatuses]:
    yield first
    yield from rest


def failure_ages(current: RunResult, earlier: Iterable[RunStatuses], limit: int = MAX_AGE_RUNS) -> tuple[Age, ...]:
    """The age of every row failing in ``current`` (module docstring): ``earlier`` are the suite's runs before
    it, newest first, read lazily and no further than every streak's start or ``limit`` runs."""
    now = run_point(current)
    open_rows = {_key(row): [now] for row in current.rows if _failing(row)}
    streaks = dict(open_rows)
    read = 0
    for run in earlier:
        if not open_rows or read >= limit:
            break
        read += 1
        for key in list(open_rows):
            if run.statuses.get(key) in _FAILING:
                open_rows[key].append(run.point)
            else:
                del open_rows[key]
    ages = []
    for key, streak in streaks.items():
        reached_limit = key in open_rows and read >= limit
        ages.append(Age(key[0], key[1], streak[-1], len(streak), at_least=reached_limit))
    return tuple(ages)


# --- across runs --------------------------------------------------------------------------


def trends(runs: Sequence[RunResult], complete: bool = True) -> Trends:
    """The trends of ``runs`` (oldest first): every row any of them ran, rows failing now first, then flipped
    and changed rows; ``complete``: no earlier run of the suite exists (else an age reaching the oldest run
    may be older)."""
    keys: dict[RowKey, None] = {}
    indexed = []
    for run in runs:
        rows = {_key(row): row for row in run.rows}
        indexed.append(rows)
        keys.update(dict.fromkeys(rows))
    points = tuple(run_point(run) for run in runs)
    ages = _window_ages(runs, points, complete)
    found = [_row_trend(key, [rows.get(key) for rows in indexed], ages.get(key)) for key in keys]
    order = {key: index for index, key in enumerate(keys)}

    def rank(trend: RowTrend) -> tuple[int, int, int, int, int]:
        failing_now = trend.latest in _FAILING
        return (
            0 if failing_now else 1,
            0 if trend.flip is not None else 1,
            0 if trend.change is not None else 1,
            -trend.flaky_runs,
            order[(trend.file, trend.name)],
        )

    return Trends(points, tuple(sorted(found, key=rank)))


def _window_ages(runs: Sequence[RunResult], points: Sequence[RunPoint], complete: bool) -> dict[RowKey, Age]:
    """The ages of the newest run's failures within the window, numbered by run (1: the oldest)."""
    if not runs:
        return {}
    limit = len(runs) - 1 if not complete else MAX_AGE_RUNS
    found = {}
    for age in failure_ages(runs[-1], (statuses_of(run) for run in reversed(runs[:-1])), limit):
        number = next(index for index, point in enumerate(points, 1) if point.run_id == age.since.run_id)
        found[(age.file, age.name)] = Age(age.file, age.name, age.since, age.runs, number, age.at_least)
    return found


def _row_trend(key: RowKey, rows: Sequence[RowResult | None], age: Age | None = None) -> RowTrend:
    statuses = tuple(row.status if row is not None else None for row in rows)
    flaky = tuple(
        row is not None and row.stochastic is not None and row.stochastic.row_class == "flaky" for row in rows
    )
    ran = [status for status in statuses if status is not None]
    flips = sum(1 for a, b in zip(ran, ran[1:], strict=False) if a != b)
    flip = None
    if len(statuses) >= 2 and statuses[-1] is not None and statuses[-2] is not None and statuses[-1] != statuses[-2]:
        flip = (statuses[-2], statuses[-1])
    names = list(dict.fromkeys(name for row in rows if row is not None for name in row.metrics))
    metrics = []
    for name in names:
        summaries = [row.metrics.get(name) if row is not None else None for row in rows]
        first = next(s for s in summaries if s is not None)
        values = tuple(s.value if s is not None else None for s in summaries)
        metrics.append(MetricTrend(name, first.unit, first.direction, values, find_step(values)))
    return RowTrend(key[0], key[1], statuses, flaky, flip, flips, tuple(metrics), age, _last_change(statuses))


def _last_change(statuses: Sequence[Status | None]) -> Change | None:
    """The last change of status between two runs the row ran in."""
    ran = [(index, status) for index, status in enumerate(statuses) if status is not None]
    for (_, before), (index, after) in reversed(list(zip(ran, ran[1:], strict=False))):
        if before != after:
            return Change(index, before, after)
    return None


def find_step(values: Sequence[float | None]) -> Step | None:
    """The step of a series under the change-point rule (module docstring); None values are left out,
    and ``Step.index`` counts positions in ``values``."""
    present = [(index, value) for index, value in enumerate(values) if value is not None and math.isfinite(value)]
    series = [value for _index, value in present]
    if len(series) < 2 * MIN_SIDE:
        return None
    best: tuple[float, int] | None = None
    for split in range(MIN_SIDE, len(series) - MIN_SIDE + 1):
        cost = _spread(series[:split]) + _spread(series[split:])
        if best is None or cost < best[0] - 1e-12:  # the earliest of equally good splits
            best = (cost, split)
    assert best is not None
    split = best[1]
    earlier, later = series[:split], series[split:]
    before, after = statistics.median(earlier), statistics.median(later)
    noise = max(_spread(earlier) / len(earlier), _spread(later) / len(later))
    difference = abs(after - before)
    if difference <= STEP_FRACTION * abs(before) or difference <= STEP_NOISE * noise:
        return None
    change = (after - before) / abs(before) if before else None
    return Step(present[split][0], before, after, change, noise)


def _spread(values: Sequence[float]) -> float:
    """The sum of absolute deviations from the median (the cost of one flat part)."""
    middle = statistics.median(values)
    return math.fsum(abs(value - middle) for value in values)
