"""What a run will execute, checked before anything runs: the selected rows, the baseline, and
the sample pool they share (its slots, limits and budget)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from fixtures_core.errors import BaselineError, UsageError, as_baseline
from fixtures_core.execution.judging import suites_of
from fixtures_core.execution.pool import Gate, Resumed, SamplePool, sample_pool
from fixtures_core.execution.sample_budget import SampleBudget, budget_total
from fixtures_core.execution.spending import Spending
from fixtures_core.parsing.matrix import adaptive_rows, budgeted_rows, load_matrix, samples_at_once, select
from fixtures_core.parsing.suite import with_judge
from fixtures_core.parsing.throughput import merge_limits
from fixtures_core.parsing.validate import isolate_row_errors
from fixtures_core.records.resume import check_fixtures, find_started, resumed_rows
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.records.store import SHIPPED
from fixtures_core.runs.options import DEFAULT_PARALLEL, RunOptions, store_for
from fixtures_core.spec import Limit, Matrix, Rate, RowSpec


@dataclass(frozen=True)
class Baseline:
    """A saved run to compare with, and where it was found.

    ship_gates_only: the blessed ``shipped`` run, found for A/B suites whose gates compare with it
                     (``baseline_margin``, ``baseline_score``) on a run without ``--baseline``: it
                     feeds those gates, and the run is not compared with it as a whole.
    name:            what the user called it (``--baseline abhard``; ``shipped``); the path without one.
    """

    path: str
    run: RunResult
    ship_gates_only: bool = False
    name: str | None = None

    @property
    def shown(self) -> str:
        """The baseline as every report names it: its own name and its run's id, ``abhard (run ID)``."""
        name = self.name or self.path
        return f"run {self.run.run_id}" if name == self.run.run_id else f"{name} (run {self.run.run_id})"


@dataclass(frozen=True)
class Plan:
    """What a run will execute, checked before anything runs; a resumed run's id, start and
    what it already has."""

    matrix: Matrix
    baseline: Baseline | None = None
    resumed: Resumed | None = None
    run_id: str | None = None
    started_at: str | None = None


def plan(options: RunOptions) -> Plan:
    """Load, validate and select the rows of a run; raise before anything runs.

    A configuration error of one row (or table, block, golden file) puts that row in the plan as
    ERR with its message, one of a whole file (its frontmatter) every row of that file; every other row
    and file runs.

    A baseline is loaded here too, and must share rows with the matrix: a
    missing, unreadable or unrelated one stops the run before it spends
    anything (the gate fails closed).
    """
    options.check()
    baseline = load_baseline(options) if options.baseline is not None else None
    matrix = load_matrix(options.paths)
    if options.judge is not None:
        matrix = with_judge(matrix, options.judge)
    matrix = isolate_row_errors(matrix)
    selected = select(matrix, options.filter, options.repeat)
    if options.parallel_samples:
        selected = samples_at_once(selected)
    if options.adaptive:
        selected = adaptive_rows(selected)
    if options.sample_budget is not None:
        selected = budgeted_rows(selected)
    _check_sample_budget(options, selected)
    if baseline is not None:
        check_overlap(selected, baseline)
    elif not options.dry_run:
        baseline = shipped_for_gates(options, selected)
    _check_budget_metric(options, selected)
    if options.resume is None:
        return Plan(selected, baseline)
    store = store_for(options)
    started = find_started(store, options.resume)
    check_fixtures(started, selected)
    resumed = resumed_rows(store, started.run_id, selected)
    return Plan(selected, baseline, resumed, started.run_id, started.started_at)


def _check_budget_metric(options: RunOptions, matrix: Matrix) -> None:
    budget = options.run_budget()
    if budget is None:
        return
    names = sorted({m.name for row in matrix.rows for m in row.metrics})
    if budget.metric not in names:
        known = ", ".join(names) or "none"
        raise UsageError(f"--budget sums metric '{budget.metric}', which no row extracts (metrics: {known})")


def _check_sample_budget(options: RunOptions, matrix: Matrix) -> None:
    """``--sample-budget N`` must cover what its rows take at their max: the budget only moves samples
    from decided rows to undecided ones (a smaller one would cut rows short: lower their max instead)."""
    budgeted = [row for row in matrix.rows if row.budgeted]
    if options.sample_budget is not None and not budgeted:
        raise UsageError("--sample-budget shares samples among adaptive rows, and no row is adaptive (--adaptive)")
    total = budget_total(options.run_sample_budget(), matrix.rows)
    fixed = sum(row.repeat for row in budgeted)
    if total is not None and total < fixed:
        raise UsageError(
            f"--sample-budget {total} is below the {fixed} samples its {len(budgeted)} adaptive rows take at their "
            f"max (fixed k): give at least {fixed}, or lower their max"
        )


def sample_budget(options: RunOptions, planned: Plan) -> SampleBudget | None:
    """The run's sample budget, when rows share one (a dry run spends nothing: none); a resumed run's
    kept samples are spent already."""
    rows = [row for row in planned.matrix.rows if row.budgeted]
    total = budget_total(options.sample_budget, planned.matrix.rows)
    if total is None or options.dry_run:
        return None
    resumed = planned.resumed or Resumed()
    kept = {row.id: len(resumed.rows[row.id].samples if row.id in resumed.rows else resumed.samples.get(row.id, ()))
            for row in rows}  # fmt: skip
    return SampleBudget(total, rows, kept, done=set(resumed.rows))


def sample_slots(options: RunOptions, matrix: Matrix) -> int:
    """Samples in flight across the run: ``--concurrency``, else the smallest ``concurrency`` of the
    fixture files, else ``--parallel`` (so ``--parallel 8`` alone still runs 8 samples at once), else 4;
    a run with A/B arms defaults to 1 (seed 04: attempts on paid agents and shared lockfiles run one at
    a time unless the suite or the command line asks for more)."""
    declared = [row.concurrency for row in matrix.rows if row.concurrency is not None]
    with_arms = any(row.ab is not None and row.ab.arm is not None for row in matrix.rows)
    default = 1 if with_arms else DEFAULT_PARALLEL
    return options.concurrency or min(declared, default=0) or options.parallel or default


# With a sample budget a row undecided at its max waits for what later rows leave, holding its row's
# thread; up to this many rows are in flight by default (a thread each, mostly waiting for a slot).
BUDGET_ROWS_AT_ONCE = 256


def rows_at_once(options: RunOptions, matrix: Matrix) -> int:
    """Rows in flight: ``--parallel``, else as many as there are sample slots; with a sample budget, every
    row (up to ``BUDGET_ROWS_AT_ONCE``): slots still bound the samples in flight, earliest row first, and
    a row that waits for left-over samples does not keep a later row from starting."""
    if options.parallel:
        return options.parallel
    slots = sample_slots(options, matrix)
    if options.dry_run or not any(row.budgeted for row in matrix.rows):
        return slots
    return max(slots, min(len(matrix.rows), BUDGET_ROWS_AT_ONCE))


def run_limits(options: RunOptions, matrix: Matrix) -> tuple[Limit, ...]:
    """The caps of the run: the strictest each fixture file sets per property, then ``--limit``'s."""
    declared: dict[str, Limit] = {}
    for row in matrix.rows:
        for limit in row.limits:
            before = declared.get(limit.property)
            declared[limit.property] = limit if before is None else _stricter(before, limit)
    return merge_limits([*declared.values(), *options.run_limits()])


def _stricter(a: Limit, b: Limit) -> Limit:
    caps = [c for c in (a.concurrency, b.concurrency) if c is not None]
    rates = [r for r in (a.rate, b.rate) if r is not None]
    slowest: Rate | None = min(rates, key=lambda r: r.count / r.per_s) if rates else None
    return Limit(a.property, concurrency=min(caps) if caps else None, rate=slowest)


@contextlib.contextmanager
def pool_for(
    options: RunOptions, planned: Plan, order: Sequence[RowSpec], gate: Gate | None = None
) -> Iterator[SamplePool]:
    """The sample pool of a run: its slots, limits and budgets (a resumed run's kept samples are spent already)."""
    spending = Spending(options.run_budget())
    resumed = planned.resumed or Resumed()
    for row in planned.matrix.rows:
        kept = resumed.rows[row.id].samples if row.id in resumed.rows else resumed.samples.get(row.id, ())
        for sample in kept:
            spending.charge(row, sample)
    limits = run_limits(options, planned.matrix)
    budget = sample_budget(options, planned)
    slots = sample_slots(options, planned.matrix)
    with sample_pool(slots, limits, spending, gate, order, resumed, budget) as pool:
        yield pool


def check_overlap(matrix: Matrix, baseline: Baseline) -> None:
    """Raise BaselineError unless some row of the matrix is in the baseline (by file and name)."""
    ours = {(row.fixture_id or row.file, row.name) for row in matrix.rows}
    theirs = {(row.file, row.name) for row in baseline.run.rows}
    if not ours & theirs:
        files = sorted({f for f, _ in theirs})
        mine = sorted({f for f, _ in ours})
        raise BaselineError(
            baseline.path,
            f"no row in common with this run (baseline rows are in {', '.join(files)}; "
            f"this run's in {', '.join(mine)})",
        )


def shipped_for_gates(options: RunOptions, matrix: Matrix) -> Baseline | None:
    """The blessed ``shipped`` run for suites whose ship gates compare with it, when one exists
    (a suite's "Regression vs shipped" then reads ``n/a (first run)`` only before the first bless)."""
    if not any(suite.compares_with_shipped for suite in suites_of(matrix.rows)):
        return None
    path = store_for(options).baseline_file(SHIPPED)
    if not path.is_file():
        return None
    with as_baseline():
        return Baseline(str(path), load_run(path), ship_gates_only=True, name=SHIPPED)


def load_baseline(options: RunOptions) -> Baseline:
    """The baseline run of these options; BaselineError when it cannot serve as one."""
    assert options.baseline is not None
    path, baseline = store_for(options).load_baseline(options.baseline)
    if not baseline.rows:
        raise BaselineError(str(path), "baseline has no rows")
    return Baseline(str(path), baseline, name=options.baseline)
