"""The Prefect flow: one row task per row, nested sample tasks, a finalize task.

Rows are tasks, not subflows: measured here, a subflow costs 0.6-1.1 s and a
task about 5 ms. Sample tasks never retry and never cache (a cached sample
would silently not run). Deadlines are enforced by ``fixtures_core.execution.sampling``
because Prefect's timeouts cannot interrupt a blocking call in a thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from flows.prefect_env import quiet_prefect

quiet_prefect()

from prefect import flow, task  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.futures import PrefectFuture, wait  # noqa: E402
from prefect.settings import temporary_settings  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402
from prefect.utilities.annotations import quote  # noqa: E402

from fixtures_core.execution.rows import RunSettings, crashed_row, run_row, run_sample  # noqa: E402
from fixtures_core.execution.sampling import ProcessGroups  # noqa: E402
from fixtures_core.records.rundoc import RunResult  # noqa: E402
from fixtures_core.records.store import new_run_id  # noqa: E402
from fixtures_core.reports import terminal  # noqa: E402
from fixtures_core.reports.progress import ProgressListener  # noqa: E402
from fixtures_core.results import RowResult, SampleResult  # noqa: E402
from fixtures_core.runner import (  # noqa: E402
    Baseline,
    Plan,
    Recorder,
    RunOptions,
    complete,
    interruption,
    plan,
    settings_for,
    store_for,
)
from fixtures_core.spec import RowSpec  # noqa: E402

T = TypeVar("T")


def opaque(value: T) -> T:
    """Hand a value to a task as is: Prefect must not walk or copy domain objects."""
    return cast(T, quote(value))


@dataclass
class _LiveRun:
    """A run in flight in this process: its process groups (what a signal kills) and,
    when the command line planned it already, its plan (so the flow does not plan twice)."""

    groups: ProcessGroups = field(default_factory=ProcessGroups)
    plan: Plan | None = None
    listener: ProgressListener | None = None


_LIVE: dict[str, _LiveRun] = {}
_LIVE_LOCK = threading.Lock()


def _live(run_id: str) -> _LiveRun:
    with _LIVE_LOCK:
        return _LIVE.setdefault(run_id, _LiveRun())


def process_groups(run_id: str) -> ProcessGroups:
    """The live process groups of one run (tasks find theirs by the run id in RunSettings)."""
    return _live(run_id).groups


@task(name="sample", task_run_name="{row.name} #{index}", retries=0, cache_policy=NO_CACHE, persist_result=False)
def sample_task(row: RowSpec, index: int, deadline: float, settings: RunSettings) -> SampleResult:
    """One execution of a row's command, checked."""
    return run_sample(row, index, deadline, settings, process_groups(settings.run_id))


@task(name="row", task_run_name="{row.name}", retries=0, cache_policy=NO_CACHE, persist_result=False)
def row_task(row: RowSpec, settings: RunSettings, recorder: Recorder) -> RowResult:
    """Every sample of one row, serially, under the row's time budget."""

    def as_task(spec: RowSpec, index: int, deadline: float) -> SampleResult:
        return sample_task(opaque(spec), index, deadline, opaque(settings))

    groups = process_groups(settings.run_id)
    recorder.on_row_start(row)
    result = run_row(row, settings, groups, sample_runner=as_task, on_sample=recorder.on_sample)
    recorder.on_row(result)
    return result


@task(name="finalize", retries=0, cache_policy=NO_CACHE, persist_result=False)
def finalize_task(
    recorder: Recorder, options: RunOptions, rows: list[RowResult], error: str | None, baseline: Baseline | None
) -> RunResult:
    """Metrics, comparisons, verdict; the run document and the UI artifacts."""
    run = complete(recorder, options, rows, error, baseline, process_groups(recorder.run_id))
    create_markdown_artifact(key="assay-report", markdown=terminal.markdown(run), description="assay run report")
    create_table_artifact(
        key="assay-rows",
        table=[
            {"row": r.name, "status": r.status, "passed": sum(s.passed for s in r.samples), "samples": len(r.samples)}
            for r in run.rows
        ],
        description="assay rows",
    )
    return run


class VerdictFailed(Exception):
    """Raised at the end of a deployed run whose verdict is not PASS, so the UI marks it failed."""


@flow(name="assay-matrix", log_prints=False, validate_parameters=False)
def matrix_flow(
    options: RunOptions | dict[str, Any], run_id: str | None = None, raise_on_failure: bool = False
) -> RunResult:
    """Run a fixture matrix and return its run document (also written to disk).

    ``options`` may be a mapping, as a deployment's parameters are; with
    ``raise_on_failure`` a FAIL or ERR verdict fails the flow run (after the
    run document is written), so schedules and the UI show it.
    """
    if not isinstance(options, RunOptions):
        options = RunOptions.from_mapping(options)
    run = _run_matrix(options, run_id)
    if raise_on_failure and run.verdict != "PASS":
        raise VerdictFailed(f"assay verdict {run.verdict} for run {run.run_id}: {run.error or 'see the report'}")
    return run


def _run_matrix(options: RunOptions, run_id: str | None) -> RunResult:
    run_id = run_id or new_run_id()
    live = _live(run_id)
    try:
        planned = live.plan or plan(options)
        recorder = Recorder(store_for(options), run_id, planned.matrix, listener=live.listener)
        settings = settings_for(options, run_id)
        runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=options.parallel)
        with runner.duplicate() as pool:
            shared = {"settings": opaque(settings), "recorder": opaque(recorder)}
            futures = [pool.submit(row_task, {"row": opaque(row), **shared}) for row in planned.matrix.rows]
            try:
                wait(cast(list[Any], futures))
            except BaseException:
                # A cancelled or terminated deployment run (Prefect raises in the thread that
                # runs the flow): kill the samples, keep what finished, then let Prefect go on.
                live.groups.cancel()
                wait(cast(list[Any], futures))
                rows = _row_results(futures, planned.matrix.rows)
                complete(recorder, options, rows, "interrupted: the flow run was stopped", planned.baseline)
                raise
        rows = _row_results(futures, planned.matrix.rows)
        error = interruption(live.groups)
        return finalize_task(opaque(recorder), opaque(options), opaque(rows), error, opaque(planned.baseline))
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(run_id, None)


def _row_results(futures: Sequence[PrefectFuture[Any]], rows: tuple[RowSpec, ...]) -> list[RowResult]:
    """Each row task's result; a task that raised (e.g. the API failed) becomes an ERR row."""
    results = []
    for future, row in zip(futures, rows, strict=True):
        try:
            results.append(cast(RowResult, future.result()))
        except Exception as exc:
            results.append(crashed_row(row, exc))
    return results


def run_with_prefect(
    options: RunOptions,
    run_id: str,
    groups: ProcessGroups | None = None,
    planned: Plan | None = None,
    listener: ProgressListener | None = None,
) -> RunResult:
    """Run the flow in a worker thread of this process and wait for it.

    The flow runs off the main thread so that Prefect does not replace the
    main thread's SIGTERM handler: assay's own handler cancels the samples
    and lets the flow finish, which writes the run document and stops the
    temporary server cleanly. The heartbeat is off (it costs ~1 s at exit).
    """
    with _LIVE_LOCK:
        # The caller's signal handler kills these groups.
        _LIVE[run_id] = _LiveRun(groups or ProcessGroups(), planned, listener)
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            with temporary_settings(updates={"flows.heartbeat_frequency": None}):
                outcome["run"] = matrix_flow(options, run_id)
        except BaseException as exc:  # handed to the main thread, which re-raises it
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="assay-flow", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(timeout=0.2)  # short waits keep the main thread responsive to signals
    if "error" in outcome:
        raise outcome["error"]
    return cast(RunResult, outcome["run"])
