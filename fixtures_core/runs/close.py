"""Closing a run, the same for every engine: judge A/B suites, finalize the rows, write the run
document and the report files, compare with the baseline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fixtures_core.analysis.baseline import Comparison, compare
from fixtures_core.analysis.finalize import Summary, finalize_rows, summarize
from fixtures_core.analysis.shipgate import SuiteOutcome
from fixtures_core.errors import BaselineError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import SamplePool
from fixtures_core.execution.rows import unfinished_row
from fixtures_core.execution.sample_budget import budget_total
from fixtures_core.records.devlyn_layout import write_results
from fixtures_core.records.resume import resumed_rows
from fixtures_core.records.rundoc import FixtureResult, RunResult, environment, utc_now
from fixtures_core.records.store import Store
from fixtures_core.reports.outputs import step_summary_file
from fixtures_core.results import BudgetFigures, RowResult, Status, Stop
from fixtures_core.runs.ab import JudgingDirs, judge_run, suite_outcomes, write_report
from fixtures_core.runs.options import DEFAULT_PARALLEL, RunOptions, store_for
from fixtures_core.runs.plan import Baseline
from fixtures_core.runs.recorder import Recorder
from fixtures_core.spec import RowSpec
from fixtures_core.verdicts.run import errored, run_status


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


@dataclass(frozen=True)
class Rejudging:
    """A run that re-judges another's evidence: which run, and the folder holding its attempts."""

    run_id: str
    evidence_run: str


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
    if not recorder.reserve_close():  # another thread closes this run (a lost API, a second interrupt)
        closed = recorder.wait_closed()
        assert closed is not None
        return closed
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
        status = run_status(as_ran, (), incomplete=True, dry_run=options.dry_run)
        run = _run_document(recorder, options, as_ran, counts, status, f"{error}; {failure}" if error else failure)
    if stop is not None:
        run = replace(run, stopped=stop.stopped)
    try:
        record(run, options, step_summary_file(), recorder.store)
        evidence_run = rejudging.evidence_run if rejudging is not None else run.run_id
        store = recorder.store
        write_results(store.run_dir(run.run_id), store.run_dir(evidence_run), run, recorder.matrix.rows)
    finally:
        recorder.release()
        recorder.closed(run)
    return run


def complete_from_evidence(
    recorder: Recorder,
    options: RunOptions,
    order: Sequence[RowSpec],
    stop: RunStop,
    baseline: Baseline | None = None,
    containment: Containment | None = None,
) -> RunResult:
    """Close a run whose rows' results are lost (an interrupt that stopped everything at once, a lost
    Prefect API) from what its evidence holds: finished rows as they ended, the others ERR with their
    finished samples (``--resume`` runs them again)."""
    found = resumed_rows(recorder.store, recorder.run_id, recorder.matrix)
    reason = f"{stop.error}; the row did not finish"
    rows = [found.rows.get(spec.id) or unfinished_row(spec, found.samples.get(spec.id, ()), reason, stop.stopped)
            for spec in order]  # fmt: skip
    return complete(recorder, options, rows, stop, baseline, containment)


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
    dirs = JudgingDirs(store.run_dir(recorder.run_id), store.run_dir(evidence_run), recorder.run_id)
    skip_judge = options.dry_run or error is not None
    calls = options.concurrency or options.parallel or DEFAULT_PARALLEL
    judged = judge_run(matrix.rows, rows, dirs, containment, calls, options.seed, skip_judge)
    finished = [recorder.shareable(row) for row in finalize_rows(judged.specs, judged.rows, options.k)]
    summary = summarize(finished, options.k, options.group_by)
    budget = None if options.dry_run else budget_total(options.sample_budget, matrix.rows)
    if budget is not None:
        summary = replace(summary, sample_budget=BudgetFigures.of(budget, finished))
    suites, finished = suite_outcomes(
        judged,
        finished,
        (baseline.shown, baseline.run) if baseline is not None else None,
        options.dry_run,
        rejudging.run_id if rejudging is not None else None,
        rejudging.evidence_run if rejudging is not None else None,
    )
    incomplete = error is not None or len(finished) < len(matrix.rows)
    status = run_status(finished, suites, incomplete, options.dry_run)
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
        dask=recorder.dask,
        rechecked=options.recheck,
    )


def compare_with_baseline(run: RunResult, options: RunOptions, baseline: Baseline | None) -> RunResult:
    """The run with its comparison; an errored run gets none (its own error decides).

    A baseline that cannot be compared (no row in common ran, ...) makes the
    run ERR: the gate fails closed and never reports "no regression".
    """
    if baseline is None or baseline.ship_gates_only or run.status == "ERR":
        return run
    try:
        comparison = compare(baseline.run, run, options.tolerance, baseline.path)
    except BaselineError as exc:
        failed = Comparison(baseline.path, options.tolerance, False, (), (), (), (), (), (), error=str(exc))
        return replace(errored(run, str(exc)), comparison=failed)
    return replace(run, comparison=comparison)
