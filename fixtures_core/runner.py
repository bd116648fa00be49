"""What every engine shares: planning a run, recording evidence, closing it.

An engine (the local thread pool, or the Prefect flow) only decides where
``rows.run_row`` executes; planning, evidence and the run document are here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from fixtures_core.abstage import Evidence, judge_run, run_status, suite_outcomes, write_report
from fixtures_core.analysis.baseline import Comparison, check_tolerance, compare
from fixtures_core.analysis.finalize import Summary, finalize_rows, summarize
from fixtures_core.analysis.shipgate import SuiteOutcome
from fixtures_core.errors import BaselineError, UsageError, ValidationFailed
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import Gate, Resumed, SamplePool, sample_pool
from fixtures_core.execution.rows import RunSettings, SampleRunner, crashed_row, run_row
from fixtures_core.execution.sampling import DEFAULT_CAPTURE_LIMIT
from fixtures_core.execution.spending import Spending
from fixtures_core.parsing.matrix import load_matrix, select
from fixtures_core.parsing.suite import with_judge
from fixtures_core.parsing.throughput import merge_limits, parse_budget, parse_limit
from fixtures_core.parsing.validate import validate_matrix
from fixtures_core.records.resume import (
    check_fixtures,
    check_resumable,
    find_started,
    resumed_rows,
    write_started,
)
from fixtures_core.records.rundoc import FixtureResult, RunResult, environment, load_run, utc_now
from fixtures_core.records.shareable import shareable_row
from fixtures_core.records.store import Store
from fixtures_core.reports.outputs import ReportFiles, step_summary_file
from fixtures_core.reports.progress import ProgressListener
from fixtures_core.results import RowResult, SampleResult, Status, Stop, worst
from fixtures_core.spec import Budget, Limit, Matrix, Rate, RowSpec

DEFAULT_PARALLEL = 4
# What a resumed run may change: how it runs and what it writes besides run.json, never what it runs.
EXECUTION_OPTIONS = frozenset(
    {
        "engine",
        "parallel",
        "concurrency",
        "limits",
        "dask_address",
        "capture_limit",
        "html",
        "junit",
        "summary",
        "frame",
    }
)


@dataclass(frozen=True)
class RunOptions:
    """The options of one run, as the command line or a deployment gives them."""

    paths: tuple[str, ...]
    out: str = ".assay"
    filter: str | None = None
    repeat: int | None = None
    k: int | None = None
    group_by: tuple[str, ...] = ()
    parallel: int | None = None  # rows in flight (default: the sample slots)
    concurrency: int | None = (
        None  # samples in flight across the run (default: the files' own, else --parallel, else 4)
    )
    limits: tuple[str, ...] = ()  # PROPERTY=CAP or PROPERTY=COUNT/UNIT, on top of the files' limits
    budget: str | None = None  # a summed metric and its cap for the whole run: "cost_usd <= 5"
    resume: str | None = None  # the interrupted run this run continues
    dask_address: str | None = None  # run samples on this Dask scheduler ("local": a LocalCluster of processes)
    label: str | None = None
    engine: str = "prefect"
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    baseline: str | None = None
    tolerance: float = 0.0
    dry_run: bool = False  # A/B suites: prepare, set up and verify; never run an arm or the judge
    judge: str | None = None  # a judge command line replacing every suite's own
    seed: int | None = None  # the seed of the judge's blind labels (default: the suite's, else a new one)
    rejudge: str | None = None  # the run whose evidence this run re-judges
    html: str | None = None
    junit: str | None = None
    summary: str | None = None
    frame: str | None = None

    @property
    def reports(self) -> ReportFiles:
        """The report files this run writes once it is complete."""
        return ReportFiles(html=self.html, junit=self.junit, summary=self.summary, frame=self.frame)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> RunOptions:
        """Options from JSON-like values (a deployment's parameters); lists become tuples."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UsageError(f"unknown run option(s): {', '.join(unknown)} (known: {', '.join(sorted(fields))})")
        converted = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        if isinstance(converted.get("paths"), str):
            converted["paths"] = (converted["paths"],)
        return cls(**converted)  # type: ignore[arg-type]

    def check(self) -> None:
        """Raise UsageError for values out of range: the one check of option values, whether they
        come from the command line, a deployment's parameters or ``deployments/nightly.py``."""
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise UsageError(f"--out {self.out} is not a folder: give the state folder (default .assay)")
        if self.repeat is not None and self.repeat < 1:
            raise UsageError(f"--repeat must be a whole number >= 1, got {self.repeat}")
        if self.parallel is not None and self.parallel < 1:
            raise UsageError(f"--parallel must be >= 1, got {self.parallel}")
        if self.concurrency is not None and self.concurrency < 1:
            raise UsageError(f"--concurrency must be >= 1, got {self.concurrency}")
        self.run_limits()
        self.run_budget()
        if self.dask_address is not None and self.engine != "prefect":
            raise UsageError("--dask-address runs samples on Dask workers through Prefect: not with --engine local")
        if self.k is not None and self.k < 1:
            raise UsageError(f"--k must be >= 1, got {self.k}")
        if self.engine not in ("prefect", "local"):
            raise UsageError(f"--engine must be prefect or local, got {self.engine!r}")
        if self.dry_run and self.baseline is not None:
            raise UsageError("--dry-run scores nothing, so it cannot be compared with a --baseline")
        if self.seed is not None and self.seed < 0:
            raise UsageError(f"--seed must be >= 0, got {self.seed}")
        check_tolerance(self.tolerance)
        self.reports.check()

    def run_limits(self) -> tuple[Limit, ...]:
        """``--limit`` values (UsageError when one does not parse)."""
        parsed = []
        for text in self.limits:
            try:
                parsed.append(parse_limit(text))
            except ValueError as exc:
                raise UsageError(f"--limit {text}: {exc}") from None
        return merge_limits(parsed)

    def run_budget(self) -> Budget | None:
        """``--budget`` (UsageError when it does not parse)."""
        if self.budget is None:
            return None
        try:
            return parse_budget(self.budget, "--budget")
        except ValueError as exc:
            raise UsageError(f"--budget: {exc}") from None

    def recorded(self) -> dict[str, object]:
        """The options as the run document records them."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v not in (None, ())}


@dataclass(frozen=True)
class Baseline:
    """A saved run to compare with, and where it was found."""

    path: str
    run: RunResult


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

    A baseline is loaded here too, and must share rows with the matrix: a
    missing, unreadable or unrelated one stops the run before it spends
    anything (the gate fails closed).
    """
    options.check()
    baseline = load_baseline(options) if options.baseline is not None else None
    matrix = load_matrix(options.paths)
    if options.judge is not None:
        matrix = with_judge(matrix, options.judge)
    errors = validate_matrix(matrix)
    if errors:
        raise ValidationFailed(errors)
    selected = select(matrix, options.filter, options.repeat)
    if baseline is not None:
        check_overlap(selected, baseline)
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


def resume_options(options: RunOptions) -> RunOptions:
    """``--resume RUN``: that run's own options, with this command's way of running it (engine,
    slots, limits, report files); anything that would change what runs is a usage error."""
    if options.resume is None:
        return options
    store = store_for(options)
    started = find_started(store, options.resume)
    check_resumable(store, started)
    defaults = RunOptions(paths=())
    changed = [f.name for f in dataclasses.fields(RunOptions) if getattr(options, f.name) != getattr(defaults, f.name)]
    conflicting = [name for name in changed if name not in EXECUTION_OPTIONS | {"resume", "out"}]
    if conflicting:
        flags = ", ".join("PATH" if n == "paths" else "--" + n.replace("_", "-") for n in conflicting)
        raise UsageError(f"--resume {started.run_id} runs that run's own fixtures and options: drop {flags}")
    fields = {f.name for f in dataclasses.fields(RunOptions)}
    recorded = {k: v for k, v in started.options.items() if k in fields and k not in ("out", "resume")}
    mine = {name: getattr(options, name) for name in changed if name in EXECUTION_OPTIONS}
    return RunOptions.from_mapping({**recorded, **mine, "out": options.out, "resume": started.run_id})


def sample_slots(options: RunOptions, matrix: Matrix) -> int:
    """Samples in flight across the run: ``--concurrency``, else the smallest ``concurrency`` of the
    fixture files, else ``--parallel`` (so ``--parallel 8`` alone still runs 8 samples at once), else 4."""
    declared = [row.concurrency for row in matrix.rows if row.concurrency is not None]
    return options.concurrency or min(declared, default=0) or options.parallel or DEFAULT_PARALLEL


def rows_at_once(options: RunOptions, matrix: Matrix) -> int:
    """Rows in flight: ``--parallel``, else as many as there are sample slots."""
    return options.parallel or sample_slots(options, matrix)


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
    with sample_pool(sample_slots(options, planned.matrix), limits, spending, gate, order, resumed) as pool:
        yield pool


@dataclass(frozen=True)
class RunStop:
    """Why a run stopped before every row finished on its own: ``stopped`` for code to test,
    ``error`` for people (the run's error)."""

    stopped: Stop
    error: str


def run_stop(containment: Containment, pool: SamplePool, rows: Sequence[RowResult]) -> RunStop | None:
    """Why the run could not complete: an interrupt, or a cost budget that stopped rows (naming them)."""
    if containment.cancelled.is_set():
        return RunStop("cancelled", "interrupted: samples were cancelled")
    skipped = [r.name for r in rows if r.status == "SKIP" and r.stopped == "budget"]
    stopped = [r.name for r in rows if r.status == "ERR" and r.stopped == "budget"]
    if not skipped and not stopped:
        return None  # the budget was reached by the last samples, or never: every sample ran
    parts = ["budget exhausted: " + "; ".join(pool.spending.reached())]
    if stopped:
        parts.append(f"{len(stopped)} row(s) stopped early: {', '.join(stopped)}")
    if skipped:
        parts.append(f"{len(skipped)} row(s) skipped: {', '.join(skipped)}")
    return RunStop("budget", "; ".join(parts))


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


@dataclass
class Recorder:
    """Writes a run's evidence as it is produced (each sample, then each row's raw result)
    and tells a listener (the progress display) after each write."""

    store: Store
    run_id: str
    matrix: Matrix
    started_at: str = field(default_factory=utc_now)
    listener: ProgressListener | None = None
    resumed: Resumed | None = None  # what a resumed run already has (its evidence is written)
    evidence_run: str | None = None  # a re-judged run's: the run whose evidence its rows were read from

    def __post_init__(self) -> None:
        self._index = {row.id: i for i, row in enumerate(self.matrix.rows)}
        if self.evidence_run is None:  # a re-judged run runs no sample: it has no evidence of its own
            self.store.prepare_evidence(self.run_id)

    def on_row_start(self, row: RowSpec) -> None:
        if self.listener is None:
            return
        self.listener.row_started(row)
        if self.resumed is not None:  # the samples a resumed run kept count as done
            kept = self.resumed.rows[row.id].samples if row.id in self.resumed.rows else ()
            for sample in kept or self.resumed.samples.get(row.id, ()):
                self.listener.sample_finished(row, sample)

    def on_sample(self, row: RowSpec, sample: SampleResult) -> None:
        self.store.write_sample(self.run_id, self._index[row.id], row.name, sample)
        if self.listener is not None:
            self.listener.sample_finished(row, sample)

    def on_row(self, row: RowResult) -> None:
        """A row's samples are done; its metrics and comparisons come at finalize."""
        if self.resumed is None or self.resumed.rows.get(row.id) is not row:  # a kept row is on disk already
            self.store.write_row(self.run_id, self._index[row.id], row)
        if self.listener is not None:
            self.listener.row_finished(row)

    def shareable(self, row: RowResult) -> RowResult:
        """``row`` as the run document keeps it: shareable samples, and the evidence file of its raw output."""
        return replace(shareable_row(row), evidence=self._evidence_of(row))

    def _evidence_of(self, row: RowResult) -> str | None:
        """Where a row's raw output is, relative to the run's folder (None when nothing was written).

        A re-judged run's rows point into the run they were read from, whose folder is a sibling of
        this one: ``../RUN/evidence/ROW.jsonl`` (``row.evidence`` is relative to that run's folder).
        """
        if self.evidence_run is None:
            path = self.store.evidence_file(self.run_id, self._index[row.id], row.name)
        elif row.evidence is not None:
            path = self.store.run_dir(self.evidence_run) / row.evidence
        else:
            return None
        return Path(os.path.relpath(path, self.store.run_dir(self.run_id))).as_posix() if path.is_file() else None


def run_recorded_row(
    row: RowSpec,
    settings: RunSettings,
    containment: Containment,
    recorder: Recorder,
    pool: SamplePool | None = None,
    sample_runner: SampleRunner | None = None,
) -> RowResult:
    """Run one row and record its raw result; every engine runs its rows through here.

    Anything that raises on the way (a bug, an evidence write that fails) makes the row ERR
    (``crashed_row``): a row whose raw result is not on disk is not reported as it ran, and
    the run goes on with its other rows.
    """
    try:
        recorder.on_row_start(row)
        result = run_row(row, settings, containment, sample_runner, recorder.on_sample, pool)
        recorder.on_row(result)
    except Exception as exc:
        return crashed_row(row, exc)
    return result


def open_run(options: RunOptions, run_id: str, planned: Plan, listener: ProgressListener | None = None) -> Recorder:
    """The recorder of a run that starts now (recording its options for ``--resume``), or that resumes."""
    store = store_for(options)
    if planned.resumed is not None:
        return Recorder(store, run_id, planned.matrix, planned.started_at or utc_now(), listener, planned.resumed)
    recorder = Recorder(store, run_id, planned.matrix, listener=listener)
    write_started(store, run_id, recorder.started_at, options.recorded(), planned.matrix)
    return recorder


@dataclass(frozen=True)
class Rejudging:
    """A run that re-judges another's evidence: which run, and the folder holding its attempts."""

    run_id: str
    evidence_run: str


def settings_for(options: RunOptions, run_id: str) -> RunSettings:
    """What every sample of a run shares (A/B attempts keep their evidence in the run's folder)."""
    return RunSettings(
        run_id=run_id,
        capture_limit=options.capture_limit,
        evidence_dir=str(store_for(options).run_dir(run_id)),
        dry_run=options.dry_run,
    )


def complete(
    recorder: Recorder,
    options: RunOptions,
    rows: Sequence[RowResult],
    stop: RunStop | None = None,
    baseline: Baseline | None = None,
    containment: Containment | None = None,
    rejudging: Rejudging | None = None,
) -> RunResult:
    """Judge A/B suites, finalize the rows, build the run document, write it and the report files
    asked for; return it. ``stop``: why the run stopped short (an interrupt, a cost budget).

    A failure while judging or finalizing (a bug) still ends the run with a
    run.json: ERR, naming the failure, with the rows as they ran. The judge
    runs in ``containment`` (the run's; without one, a private one).
    """
    error = stop.error if stop is not None else None
    try:
        if containment is None:
            with Containment() as own:
                run = _finalized(recorder, options, rows, error, baseline, own, rejudging)
        else:
            run = _finalized(recorder, options, rows, error, baseline, containment, rejudging)
    except Exception as exc:
        failure = f"finalize failed: {type(exc).__name__}: {exc}"
        counts = Summary.of(rows)
        as_ran = [recorder.shareable(row) for row in rows]
        run = _run_document(recorder, options, as_ran, counts, "ERR", f"{error}; {failure}" if error else failure)
    if stop is not None:
        run = replace(run, stopped=stop.stopped)
    record(run, options, step_summary_file(), recorder.store)
    return run


def record(run: RunResult, options: RunOptions, step_summary: str | None = None, store: Store | None = None) -> None:
    """Write the run document, ``report.md`` (a run with A/B suites) and the report files asked for,
    and append the Markdown summary to ``step_summary`` (a GitHub step summary file) when given."""
    store = store or store_for(options)
    store.write_run(run)
    write_report(store.run_dir(run.run_id), run)
    options.reports.write(run, step_summary)


def _finalized(
    recorder: Recorder,
    options: RunOptions,
    rows: Sequence[RowResult],
    error: str | None,
    baseline: Baseline | None,
    containment: Containment,
    rejudging: Rejudging | None,
) -> RunResult:
    matrix = recorder.matrix
    store = recorder.store
    evidence_run = rejudging.evidence_run if rejudging is not None else recorder.run_id
    evidence = Evidence(store.run_dir(recorder.run_id), store.run_dir(evidence_run), recorder.run_id)
    skip_judge = options.dry_run or error is not None
    calls = options.concurrency or options.parallel or DEFAULT_PARALLEL
    judged = judge_run(matrix.rows, rows, evidence, containment, calls, options.seed, skip_judge)
    finished = [recorder.shareable(row) for row in finalize_rows(judged.specs, judged.rows, options.k)]
    summary = summarize(finished, options.k, options.group_by)
    suites = suite_outcomes(
        judged,
        finished,
        (baseline.path, baseline.run) if baseline is not None else None,
        options.dry_run,
        rejudging.run_id if rejudging is not None else None,
        rejudging.evidence_run if rejudging is not None else None,
    )
    incomplete = error or len(finished) < len(matrix.rows)
    status: Status = worst(run_status(judged.specs, finished, suites), "ERR" if incomplete else "PASS")
    if error is None and len(finished) < len(matrix.rows):
        error = f"only {len(finished)} of {len(matrix.rows)} rows finished"
    run = _run_document(recorder, options, finished, summary, status, error, suites)
    return compare_with_baseline(run, options, baseline)


def _run_document(
    recorder: Recorder,
    options: RunOptions,
    rows: Sequence[RowResult],
    summary: Summary,
    status: Status,
    error: str | None,
    suites: tuple[SuiteOutcome, ...] = (),
) -> RunResult:
    matrix = recorder.matrix
    by_file: dict[str, list[RowResult]] = {f.identity or f.path: [] for f in matrix.files}
    for row in rows:
        by_file.setdefault(row.file, []).append(row)
    return RunResult(
        run_id=recorder.run_id,
        label=options.label,
        started_at=recorder.started_at,
        finished_at=utc_now(),
        status=status,
        error=error,
        environment=environment(),
        options=options.recorded(),
        fixtures=tuple(
            FixtureResult(f.identity or f.path, f.sha256, tuple(by_file[f.identity or f.path])) for f in matrix.files
        ),
        summary=summary,
        suites=suites,
    )


def load_baseline(options: RunOptions) -> Baseline:
    """The baseline run of these options; BaselineError when it cannot serve as one."""
    assert options.baseline is not None
    path = store_for(options).resolve_run(options.baseline)
    baseline = load_run(path)
    if not baseline.rows:
        raise BaselineError(str(path), "baseline has no rows")
    return Baseline(str(path), baseline)


def compare_with_baseline(run: RunResult, options: RunOptions, baseline: Baseline | None) -> RunResult:
    """The run with its comparison; an errored run gets none (its own error decides).

    A baseline that cannot be compared (no row in common ran, ...) makes the
    run ERR: the gate fails closed and never reports "no regression".
    """
    if baseline is None or run.status == "ERR":
        return run
    try:
        comparison = compare(baseline.run, run, options.tolerance, baseline.path)
    except BaselineError as exc:
        failed = Comparison(baseline.path, options.tolerance, False, (), (), (), (), (), (), error=str(exc))
        return replace(run, status="ERR", error=str(exc), comparison=failed)
    return replace(run, comparison=comparison)


def store_for(options: RunOptions) -> Store:
    """The state folder of a run."""
    return Store(Path(options.out))
