"""The Prefect flow: one subflow run per row holding its sample tasks, and a finalize task.

That is the design card's shape and the default (``flows.flow.row_subflow``: each
row's subflow run, its own budget as timeout, no retries, the run's tags);
``--rows-as-tasks`` makes each row a task run of the matrix's flow run
instead, its samples nested tasks. Sample tasks never retry and never cache
(a cached sample would silently not run). Deadlines are enforced by
``fixtures_core.execution.sampling`` because Prefect's timeouts cannot
interrupt a blocking call in a thread.

Rows run on a thread pool (rows in flight); each takes slots for its samples
from the run's one pool of sample slots (``runs.plan.pool_for``) and runs its
sample tasks on the pool's threads, or on Dask workers
(``flows.flow.dask_workers``). ``limits`` also go through Prefect's global
concurrency limits (``flows.flow.concurrency``), which hold across flow runs.

What the UI shows: the flow run is named after the assay run id (and
label) and tagged (``flows.flow.naming``); every task ends in an honest state
(``flows.flow.states``); rows and failing samples log a concise line to the API;
the report is a Markdown artifact and the rows and metrics are table
artifacts, keyed per suite; ``assay.run.finished`` is emitted for
automations (``flows.flow.events``).
"""

from __future__ import annotations

import base64
import concurrent.futures
import contextlib
import contextvars
import copy
import functools
import importlib
import logging
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from flows.server.prefect_env import quiet_prefect

quiet_prefect()

import httpx  # noqa: E402
from prefect import Flow, get_run_logger, task  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect.client.schemas.objects import FlowRun, State, StateDetails  # noqa: E402
from prefect.context import FlowRunContext  # noqa: E402
from prefect.events.worker import EventsWorker  # noqa: E402
from prefect.exceptions import ObjectNotFound, PrefectHTTPStatusError  # noqa: E402
from prefect.futures import PrefectFuture, wait  # noqa: E402
from prefect.logging.handlers import APILogWorker  # noqa: E402
from prefect.settings import (  # noqa: E402
    PREFECT_API_AUTH_STRING,
    PREFECT_API_KEY,
    get_current_settings,
    temporary_settings,
)
from prefect.states import Completed, Failed  # noqa: E402
from prefect.task_runners import ThreadPoolTaskRunner  # noqa: E402
from prefect.transactions import CommitMode, transaction  # noqa: E402
from prefect.utilities.annotations import allow_failure, quote  # noqa: E402
from prefect.utilities.urls import url_for  # noqa: E402
from pydantic_core import to_jsonable_python  # noqa: E402

from fixtures_core.errors import AssayError, ValidationFailed  # noqa: E402
from fixtures_core.execution.containment import Containment  # noqa: E402
from fixtures_core.execution.daemons import running_daemons  # noqa: E402
from fixtures_core.execution.pool import SamplePool  # noqa: E402
from fixtures_core.execution.rows import RunSettings, crashed_row, run_sample  # noqa: E402
from fixtures_core.execution.slots import limit_keys  # noqa: E402
from fixtures_core.parsing.suite import ARM_PROPERTY  # noqa: E402
from fixtures_core.records.rundoc import RunResult  # noqa: E402
from fixtures_core.records.store import new_run_id  # noqa: E402
from fixtures_core.reports import describe, markdown, status_words  # noqa: E402
from fixtures_core.reports.progress import ProgressListener  # noqa: E402
from fixtures_core.results import RowResult, SampleResult  # noqa: E402
from fixtures_core.runs.close import RunStop, complete, complete_from_evidence, run_stop  # noqa: E402
from fixtures_core.runs.options import RunOptions, settings_for, store_for  # noqa: E402
from fixtures_core.runs.plan import Baseline, Plan, plan, pool_for, rows_at_once, run_limits, sample_slots  # noqa: E402
from fixtures_core.runs.recorder import Recorder, open_run, run_recorded_row  # noqa: E402
from fixtures_core.spec import RowSpec  # noqa: E402
from flows.flow import row_subflow, states  # noqa: E402
from flows.flow.board import RowBoard, baselines_first  # noqa: E402
from flows.flow.concurrency import GlobalLimits  # noqa: E402
from flows.flow.confinement import Confinement  # noqa: E402
from flows.flow.dask_workers import DaskSamples, run_on_worker  # noqa: E402
from flows.flow.events import emit_run_finished  # noqa: E402
from flows.flow.naming import artifact_key, flow_run_name, run_tags  # noqa: E402
from flows.flow.parameters import MatrixParameters, bounded, flow_args_doc, flow_signature  # noqa: E402
from flows.flow.prefect_logs import InternalLog, quiet_task_runs, quiet_verdict_exits  # noqa: E402
from flows.flow.row_subflow import RowSubflow, RowSubflows  # noqa: E402
from flows.flow.stored_parameters import install, not_given  # noqa: E402
from flows.server import silent_runs  # noqa: E402
from flows.server.abandoned import mark_abandoned  # noqa: E402
from flows.server.api_watch import ApiWatch  # noqa: E402
from flows.server.lease_guard import LeaseGuard  # noqa: E402
from flows.server.local import Backend, ServerError, url_answers  # noqa: E402
from flows.server.owners import OWNER_LABEL, Owner  # noqa: E402

T = TypeVar("T")


def opaque(value: T) -> T:
    """Hand a value to a task as is: Prefect must not walk or copy domain objects."""
    return cast(T, quote(value))


@dataclass(frozen=True)
class Launch:
    """What the command line hands its flow run: the run id, the full options, the plan, extra tags."""

    run_id: str
    options: RunOptions
    plan: Plan
    tags: tuple[str, ...] = ()
    say: Callable[[str], None] | None = None  # a line for the person at the terminal (stderr)


# Set by run_with_prefect around its flow call: a command-line run is planned before it starts.
_LAUNCH: contextvars.ContextVar[Launch | None] = contextvars.ContextVar("assay_launch", default=None)


def _launched() -> Launch | None:
    """The command line's launch of the flow run in this context, if any. (The flow reads the
    variable through this function: a served flow is pickled by value, and a ContextVar cannot be.)"""
    return _LAUNCH.get()


@dataclass
class _LiveRun:
    """A run in flight in this process: its containment (what a signal stops), its row board, its
    sample pool, the containment scope of each sample in flight, and its Dask workers if any."""

    containment: Containment = field(default_factory=Containment)
    board: RowBoard = field(default_factory=lambda: RowBoard(()))
    listener: ProgressListener | None = None  # the command line's progress display
    owned: bool = True  # the containment was made for this run (else the caller closes it)
    pool: SamplePool | None = None
    scopes: dict[str, Containment] = field(default_factory=dict)
    dask: DaskSamples | None = None
    # Looked up, not a row task parameter: a sample task on Dask carries its parent task's parameters
    # to the worker, and the recorder (its progress display) stays in this process.
    recorder: Recorder | None = None
    subflows: RowSubflows | None = None  # the rows' subflow runs (the default shape)
    flow_run_id: str | None = None  # the run's flow run, once it exists: what its API must still know


_LIVE: dict[str, _LiveRun] = {}
_LIVE_LOCK = threading.Lock()


def _live(run_id: str) -> _LiveRun:
    with _LIVE_LOCK:
        live = _LIVE.get(run_id)
        if live is None:  # not setdefault: a _LiveRun starts a Containment, which must happen once per run
            live = _LIVE[run_id] = _LiveRun()
        return live


def _live_here(run_id: str) -> _LiveRun | None:
    """The run, when this process runs its flow (a Dask worker does not)."""
    with _LIVE_LOCK:
        return _LIVE.get(run_id)


@task(name="sample", task_run_name="{row.name} #{index}", retries=0, cache_policy=NO_CACHE, persist_result=False)
def sample_task(
    row: RowSpec,
    index: int,
    deadline: float,
    settings: RunSettings,
    scope: str,
    wall_deadline: float,
    starts_budget: bool = False,
) -> State[Any]:
    """One execution of a row's command, checked: Completed, Failed with its reason, or TimedOut.

    ``deadline`` is monotonic, for this process; on a Dask worker ``wall_deadline`` (wall clock)
    sets it, or (``starts_budget``, the row's first sample) the row's whole budget from its arrival
    there. ``scope`` names the row's containment scope in this process.
    """
    live = _live_here(settings.run_id)
    if live is None:
        result = run_on_worker(row, index, wall_deadline, settings, starts_budget)
    else:
        result = run_sample(row, index, deadline, settings, live.scopes.get(scope, live.containment))
    if result.status not in ("PASS", "SKIP"):  # a sample that did not run (a dry run) is no warning
        get_run_logger().warning(states.sample_log(row.name, result))
    return states.sample_state(result)


@task(name="row", task_run_name="{row.name}", retries=0, cache_policy=NO_CACHE, persist_result=False)
def row_task(row: RowSpec, settings: RunSettings, k: int | None) -> State[Any]:
    """Every sample of one row, on the run's sample slots, under the row's time budget; ends in the
    row's final state."""
    return _row(row, settings, k)


def _row_in_subflow(row: RowSpec, settings: RunSettings, k: int | None, subflows: RowSubflows) -> State[Any]:
    """``row_task``'s work in a subflow run of its own (the default shape), created Pending ahead of the
    row; its samples are its task runs; it ends in the row's final state."""
    subflow = subflows.take(row)
    try:
        return _row(row, settings, k, subflow)
    except BaseException as exc:  # the row's thread failed (a bug, the API): its subflow run must still end
        why = f"row '{row.name}' did not finish: {type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):
            subflow.end(Failed(message=why[:400]), why, failed=True)
        raise


def _row(row: RowSpec, settings: RunSettings, k: int | None, subflow: RowSubflow | None = None) -> State[Any]:
    """The row's samples (task runs of ``subflow``'s flow run when given, else of the caller's), then its
    final state once the rows it compares with are done; logged on the matrix's flow run."""
    live = _live(settings.run_id)
    recorder = live.recorder
    assert recorder is not None, "a row task runs inside its run's flow"

    def as_task(spec: RowSpec, index: int, deadline: float, scope: Containment) -> SampleResult:
        key = f"{spec.id}#{index}"
        live.scopes[key] = scope
        wall = time.time() + (deadline - time.monotonic()) if deadline != math.inf else math.inf
        try:
            if live.dask is not None:
                # Not quoted: Dask would take a quote (a tuple) apart on its way to the worker.
                parameters = {"row": spec, "index": index, "deadline": deadline,
                              "settings": settings, "scope": key, "wall_deadline": wall}  # fmt: skip
                call = functools.partial(live.dask.run, sample_task, parameters, spec.id, scope)
            else:
                call = functools.partial(sample_task, opaque(spec), index, deadline, opaque(settings), key, wall,
                                         return_state=True)  # fmt: skip
            state = subflow.run(call) if subflow is not None else call()
            return states.carried(state, SampleResult)
        finally:
            live.scopes.pop(key, None)

    # Samples commit as they finish: a FAIL row must not roll its passing samples back (Prefect
    # would show them "RolledBack"); each sample keeps the state it ended in.
    with transaction(commit_mode=CommitMode.EAGER):
        raw = run_recorded_row(row, settings, live.containment, recorder, live.pool, sample_runner=as_task)
    if subflow is not None:
        subflow.sampled()
    live.board.post(raw)  # rows comparing with this one wait for it
    final = live.board.final(row, raw, k, live.containment.cancelled)
    failed, line = final.status not in ("PASS", "SKIP"), states.row_log(final)
    logger = get_run_logger()
    (logger.error if failed else logger.info)(line)
    state = states.row_state(final)
    if subflow is not None:
        subflow.end(state, line, failed)  # its own thread ends it while this one takes the next row
    return state


@task(name="finalize", task_run_name="finalize", retries=0, cache_policy=NO_CACHE, persist_result=False)
def finalize_task(
    recorder: Recorder,
    options: RunOptions,
    rows: list[RowResult],
    stop: RunStop | None,
    baseline: Baseline | None,
) -> RunResult:
    """Metrics, comparisons, verdict and the run document, once every row is done."""
    return complete(recorder, options, rows, stop, baseline, _live(recorder.run_id).containment)


def publish(run: RunResult, document: Path, suite: str) -> None:
    """The run's report and its rows and metrics tables as artifacts of the flow run (called in the
    flow, not a task, so the UI shows them on the flow run)."""
    create_markdown_artifact(
        key=f"assay-report-{suite}", markdown=markdown.render(run, document), description=f"assay report: {suite}"
    )
    create_table_artifact(key=f"assay-rows-{suite}", table=rows_table(run), description=f"assay rows: {suite}")
    metrics = metrics_table(run)
    if metrics:
        create_table_artifact(key=f"assay-metrics-{suite}", table=metrics, description=f"assay metrics: {suite}")


def rows_table(run: RunResult) -> list[dict[str, object]]:
    """One line per row for the rows table artifact."""
    k = describe.k_label(run)
    return [
        {
            "row": r.name,
            "status": status_words.row(r).word,
            "passed": describe.passed_cell(r),
            "median": describe.duration(describe.median_duration_ms(r)),
            f"pass@{k}": describe.passk_cells(r)[0],
            f"pass^{k}": describe.passk_cells(r)[1],
            "reason": states.row_why(r),
            "where": f"{r.file}:{r.line}",
        }  # fmt: skip
        for r in run.rows
    ]


def metrics_table(run: RunResult) -> list[dict[str, object]]:
    """One line per row and metric for the metrics table artifact."""
    table: list[dict[str, object]] = []
    for row in run.rows:
        for name, metric in row.metrics.items():
            comparison = metric.comparison
            table.append(
                {
                    "row": row.name,
                    "metric": name,
                    "aggregate": metric.aggregate,
                    "value": metric.value,
                    "unit": metric.unit,
                    "baseline": comparison.baseline if comparison else None,
                    "baseline_value": comparison.baseline_value if comparison else None,
                    "delta_percent": comparison.regression_percent if comparison else None,
                    "verdict": describe.metric_cells(metric).mark.word,
                }  # fmt: skip
            )
    return table


def _matrix_flow(**parameters: Any) -> RunResult:
    """Run a fixture matrix k times per row, check, measure, compare; write the run document.

    The flow run ends Failed, naming the failing rows, when the verdict is
    FAIL or ERR (the run document is written first). A run started by a
    deployment, a schedule or the UI may only use its working folder and
    ``ASSAY_ALLOWED_ROOTS`` (``flows.flow.confinement``).
    """
    logger = get_run_logger()
    quiet_task_runs()
    launch = _launched()
    if launch is None:  # a deployment, a schedule or the UI: plan here, confined
        run_id = new_run_id()  # first: a refused run is named after it too, so a search by run id finds it
        parameters = {**parameters, **_not_parameters(parameters)}
        try:
            launch = _deployed_launch(parameters, run_id)
        except ValidationFailed as exc:
            return _refused(run_id, f"configuration errors: {'; '.join(str(e) for e in exc.errors)}", parameters)
        except AssayError as exc:
            return _refused(run_id, str(exc), parameters)
        except (OSError, ValueError, RuntimeError) as exc:  # a path the OS refuses (too long, a loop, a NUL)
            return _refused(run_id, f"refused: {_os_reason(exc)}", parameters)
    key = artifact_key(launch.options, launch.plan.matrix)
    tags = run_tags(launch.options, launch.plan.matrix, launch.tags)
    # Tags go on the flow run only: a tagged task run costs an API call for tag concurrency limits.
    tidying = _own_flow_run(flow_run_name(launch.run_id, launch.options.label), tags, launch.options.resume is not None)
    _known_as(launch.run_id)
    store = store_for(launch.options)
    with InternalLog(store.run_dir(launch.run_id) / "prefect.log") as internal:
        # The rows' subflow runs end (their final states written) while the artifacts are published.
        with contextlib.ExitStack() as row_ends:
            run = _run_matrix(launch, row_ends)
            document = store.run_file(run.run_id).resolve()
            publish(run, document, key)
        emit_run_finished(run, key, str(document))
    note = internal.note()
    if note is not None:
        logger.warning(note)
        if launch.say is not None:
            launch.say(note)
    log = logger.info if run.verdict.exit_code == 0 else logger.error
    log(f"{states.verdict_message(run)}; run document {document}")
    if tidying is not None:
        tidying.join(timeout=_TIDY_WAIT_S)  # done long ago, except in the shortest runs
    return cast(RunResult, states.flow_state(run))


quiet_verdict_exits()  # a deployment's flow run process imports this module before it runs the flow
install()  # so is this: Prefect binds the flow run's stored parameters after the import

# The flow's parameters are MatrixParameters' fields, flat (Prefect reads them from the signature).
_matrix_flow.__signature__ = flow_signature()  # type: ignore[attr-defined]
_matrix_flow.__doc__ = (_matrix_flow.__doc__ or "") + flow_args_doc()


def _not_parameters(given: Mapping[str, Any]) -> dict[str, Any]:
    """What the flow run's stored parameters hold besides the parameters the flow was given (``run_id``):
    ``flows.flow.stored_parameters`` hands the flow only the keys it has."""
    context = FlowRunContext.get()
    return not_given(context.flow_run.parameters if context and context.flow_run else None, given)


class _MatrixFlow(Flow[..., RunResult]):
    """The matrix's flow. Its parameters are ``MatrixParameters``' fields, JSON values already.

    It checks a deployment run's stored parameters itself, all of them (``takes_stored_parameters``):
    Prefect's own binding would crash the run on a key that is not a parameter, before the flow runs.
    """

    takes_stored_parameters = True

    def serialize_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        """The parameters as Prefect stores them. Prefect's own way imports FastAPI for its encoder,
        0.12 s on the way to every run's first sample; a value JSON cannot hold is named by its type,
        as Prefect names it."""
        return {key: to_jsonable_python(value, fallback=_unserializable) for key, value in parameters.items()}


def _unserializable(value: object) -> str:
    return f"<{type(value).__name__}>"


matrix_flow = _MatrixFlow(
    _matrix_flow, name="assay-matrix", log_prints=False, validate_parameters=False, persist_result=False
)


def _deployed_launch(parameters: Mapping[str, Any], run_id: str) -> Launch:
    """The launch of a flow run that ``assay run`` did not start: its parameters checked, confined and planned."""
    given = MatrixParameters.parse(parameters)
    run_options = given.to_options()
    context = FlowRunContext.get()
    with get_client(sync_client=True) as client:
        confinement = Confinement.of_flow_run(client, context.flow_run if context is not None else None)
    confinement.check_options(run_options)
    planned = plan(run_options)
    confinement.check_fixtures(planned.matrix)
    return Launch(run_id, run_options, planned, tuple(given.tags))


def _refused(run_id: str, message: str, parameters: Mapping[str, Any]) -> RunResult:
    """A flow run that ran nothing: named after the run id it would have had, Failed with one line saying why
    (quoting at most ``QUOTED_CHARS`` characters of any value it was given)."""
    context = FlowRunContext.get()
    if context is not None and context.flow_run is not None:
        context.client.update_flow_run(context.flow_run.id, name=run_id)
        context.flow_run.name = run_id
    message = bounded(message, parameters)
    get_run_logger().error(message)
    return cast(RunResult, Failed(message=message))  # Prefect ends the flow run in the returned state


def _os_reason(exc: BaseException) -> str:
    """What the OS said about a path, in one line (a loop, a name too long, a NUL byte)."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    return str(exc) or type(exc).__name__


_TIDY_WAIT_S = 5.0


def _own_flow_run(name: str, tags: list[str], resumes: bool) -> threading.Thread | None:
    """Name the flow run after the assay run, add the run's tags (a deployment's run starts with
    neither), record its process, and start marking Crashed the flow runs of this host whose
    process is gone (on a thread of its own, while the run runs: it costs an API query)."""
    context = FlowRunContext.get()
    if context is None or context.flow_run is None:
        return None
    flow_run = context.flow_run
    merged = list(dict.fromkeys([*flow_run.tags, *tags]))
    # On a work pool the worker writes its own id there (Prefect 3.9: a bare pid, no host), maybe after this:
    # the owner goes into a label of the run instead (written by the tidy thread, as it costs a call).
    pooled = bool(flow_run.work_pool_name or flow_run.infrastructure_pid)
    owner = None if pooled else str(Owner.here())
    if flow_run.name != name or merged != flow_run.tags or owner:
        context.client.update_flow_run(flow_run.id, name=name, tags=merged, infrastructure_pid=owner)
        # Prefect relates events (assay.run.finished, every state change) to the tags of the context's
        # copy of the flow run: without this, tag-based automations would miss an ad-hoc run's events.
        flow_run.name, flow_run.tags = name, merged
        flow_run.infrastructure_pid = owner or flow_run.infrastructure_pid
    tidy = functools.partial(_mark_abandoned_runs, flow_run, name if resumes else None, pooled)
    thread = threading.Thread(target=contextvars.copy_context().run, args=(tidy,), name="assay-tidy", daemon=True)
    thread.start()
    return thread


def _known_as(run_id: str) -> None:
    """Tell the command line's watch of the API which flow run the run is (``ApiWatch.follow``)."""
    context, live = FlowRunContext.get(), _live_here(run_id)
    if context is not None and context.flow_run is not None and live is not None:
        live.flow_run_id = str(context.flow_run.id)


def _mark_abandoned_runs(flow_run: FlowRun, resumed: str | None, pooled: bool) -> None:
    """``mark_abandoned`` with a client of its own (first recording this run's owner in its label when it
    runs on a work pool, and making sure a deployment run's server has the automation that marks silent
    deployment runs Crashed); a failure only costs the tidying."""
    logger = get_run_logger()
    try:
        with get_client(sync_client=True) as client:
            if pooled:
                client.update_flow_run_labels(flow_run.id, {OWNER_LABEL: str(Owner.here())})
            if flow_run.deployment_id is not None:
                silent_runs.ensure_for_this_process(client, logger)
            marked = mark_abandoned(client, flow_run, resumed=resumed)
    except Exception as exc:  # noqa: BLE001 - tidying others' states never stops this run
        logger.debug("could not look for abandoned flow runs: %s", exc)
        return
    for found in marked:
        logger.info(f"marked flow run {found.name!r} Crashed: its process is gone")


def _import_pandas_aside() -> None:
    """Import pandas on a thread of its own as the run starts. The first rows to finish would
    import it otherwise (about 1 s of CPU here), and every row thread would wait for it."""
    threading.Thread(target=importlib.import_module, args=("pandas",), name="assay-import", daemon=True).start()


def _run_matrix(launch: Launch, row_ends: contextlib.ExitStack) -> RunResult:
    """The run's rows, then its finalize task; the rows' subflow runs end when ``row_ends`` closes."""
    run_id, options, planned = launch.run_id, launch.options, launch.plan
    _import_pandas_aside()
    live = _live(run_id)
    order = baselines_first(planned.matrix.rows)
    live.board = RowBoard(order)
    try:
        recorder = open_run(options, run_id, planned, live.listener)
        settings = settings_for(options, run_id)
        at_once = rows_at_once(options, planned.matrix)
        runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=at_once)
        with (
            _global_limits(options, planned, live.listener) as gate,
            pool_for(options, planned, order, gate) as samples,
            _dask(options, run_id, live, sample_slots(options, planned.matrix), recorder),
            runner.duplicate() as rows_pool,
            running_daemons(order, live.containment) as daemons,
        ):
            live.pool = samples
            live.recorder = recorder
            settings = replace(settings, daemons=daemons)
            tags = run_tags(options, planned.matrix, launch.tags)
            futures = _start_rows(order, settings, options, rows_pool, at_once, tags)
            if live.subflows is not None:
                row_ends.callback(_end_subflows, live.subflows)
            try:
                _wait_rows(futures)
            except BaseException:
                # A cancelled or terminated deployment run (Prefect raises in the thread that
                # runs the flow): kill the samples, keep what finished, then let Prefect go on.
                live.containment.cancel()
                _wait_rows(futures)
                rows = _row_results(futures, order, live.board)
                interrupted = RunStop("cancelled", "interrupted: the flow run was stopped")
                complete(recorder, options, rows, interrupted, planned.baseline, live.containment)
                raise
            rows = _row_results(futures, order, live.board)
            stop = run_stop(live.containment, samples, rows)
        live.containment.closing.set()
        # wait_for: the UI draws finalize after every row; allow_failure, as a FAIL row is still done.
        run = finalize_task(
            opaque(recorder), opaque(options), opaque(rows), opaque(stop), opaque(planned.baseline),
            wait_for=[allow_failure(done) for done in _rows_done(futures, live)],
        )  # fmt: skip
        _restate_arms(run, order, futures, live)
        return run
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(run_id, None)
        if live.owned:
            live.containment.close()


RowFuture = PrefectFuture[Any] | concurrent.futures.Future[Any]


def _restate_arms(run: RunResult, order: Sequence[RowSpec], futures: Sequence[RowFuture], live: _LiveRun) -> None:
    """End each A/B arm row's run in the state its case gave it: its row ended before the judge spoke
    (a lost arm is no plain Completed, a disqualified one Failed). A row subflow run takes it as it ends
    (``RowSubflow.restate``); a row's task run (``--rows-as-tasks``) is set here."""
    final = {row.id: states.row_state(row) for row in run.rows if row.properties.get(ARM_PROPERTY) is not None}
    if not final:
        return
    if live.subflows is not None:
        for row_id, state in final.items():
            subflow = live.subflows.taken.get(row_id)
            if subflow is not None:
                subflow.restate(state)
        return
    tasks = {
        spec.id: future.task_run_id
        for spec, future in zip(order, futures, strict=True)
        if isinstance(future, PrefectFuture)
    }
    with get_client(sync_client=True) as client:
        for row_id, state in final.items():
            if row_id in tasks:
                client.set_task_run_state(
                    tasks[row_id], State(type=state.type, name=state.name, message=state.message), force=True
                )


def _start_rows(
    order: Sequence[RowSpec],
    settings: RunSettings,
    options: RunOptions,
    rows_pool: ThreadPoolTaskRunner[Any],
    at_once: int,
    tags: Sequence[str],
) -> list[RowFuture]:
    """Every row started on the rows' threads: a subflow run each (the default: named after the row,
    tagged like the run, its budget as timeout), or with ``--rows-as-tasks`` a task run each."""
    if options.rows_as_tasks:
        shared = {"settings": opaque(settings), "k": options.k}
        return [rows_pool.submit(row_task, {"row": opaque(row), **shared}) for row in order]
    context = FlowRunContext.get()
    assert context is not None and context.flow_run is not None, "rows start inside their run's flow"
    live = _live(settings.run_id)
    shown = live.listener.waiting if live.listener else None  # the wait for creations, on the progress display
    stopped = live.containment.cancelled.is_set
    live.subflows = subflows = RowSubflows(context.flow_run.id, order, settings.run_id, tags, shown, stopped)
    threads = concurrent.futures.ThreadPoolExecutor(at_once, thread_name_prefix="assay-row")
    # The matrix's flow run context goes with each row (its subflow's parent), without heartbeats: a sync
    # flow run waits about 1 s for its heartbeat thread at exit, and the matrix's flow run has its own.
    with row_subflow.settings_with(flows={"heartbeat_frequency": None})():
        futures: list[RowFuture] = [
            threads.submit(contextvars.copy_context().run, _row_in_subflow, row, settings, options.k, subflows)
            for row in order
        ]
    threads.shutdown(wait=False)  # the submitted rows still run; no more come
    return futures


def _rows_done(futures: Sequence[RowFuture], live: _LiveRun) -> list[Any]:
    """What finalize waits on: the rows' task runs, or the task runs that stand for their subflows."""
    tasks = [future for future in futures if isinstance(future, PrefectFuture)]
    # A state naming the task run is an upstream Prefect records; data=True: it carries no result to load.
    subflows: list[State[Any]] = [
        Completed(data=True, state_details=StateDetails(task_run_id=subflow.task_run_id))
        for subflow in (live.subflows.taken.values() if live.subflows else ())
    ]
    return [*tasks, *subflows]


def _wait_rows(futures: Sequence[RowFuture]) -> None:
    """Until every row is done (its subflow run may still be writing its final state)."""
    wait([f for f in futures if isinstance(f, PrefectFuture)])
    concurrent.futures.wait([f for f in futures if isinstance(f, concurrent.futures.Future)])


def _end_subflows(subflows: RowSubflows) -> None:
    """Until every row's subflow run has ended (the rows are done)."""
    for subflow in list(subflows.taken.values()):
        try:
            subflow.join()
        except Exception as exc:  # noqa: BLE001 - the row's result stands; its subflow run could not end
            get_run_logger().warning(f"row subflow run {subflow.flow_run.name!r} did not end cleanly: {exc}")


@contextlib.contextmanager
def _global_limits(
    options: RunOptions, planned: Plan, listener: ProgressListener | None
) -> Iterator[GlobalLimits | None]:
    """Prefect's global concurrency limits for the run's ``limits`` (None without any), their waits
    shown in progress and logs, their leases watched by a lease guard for as long as the run runs."""
    limits = run_limits(options, planned.matrix)
    if not limits:
        yield None
        return
    names = [limit.property for limit in limits]
    keys = [key for row in planned.matrix.rows for key in limit_keys(names, row.properties)]
    gate = GlobalLimits(limits, keys, get_run_logger(), listener.waiting if listener else None, LeaseGuard())
    try:
        yield gate
    finally:
        gate.close()


@contextlib.contextmanager
def _dask(options: RunOptions, run_id: str, live: _LiveRun, slots: int, recorder: Recorder) -> Iterator[None]:
    """Samples on Dask workers for the run (``--dask-address``), else in this process. The run document says
    how long the run waited for the cluster (the progress display says that it does)."""
    if options.dask_address is None:
        yield
        return
    shown = live.listener.waiting if live.listener is not None else None
    with DaskSamples(options.dask_address, run_id, live.containment, slots, shown) as dask:
        recorder.dask = dask.cluster
        live.dask = dask
        try:
            yield
        finally:
            live.dask = None


def _row_results(futures: Sequence[RowFuture], rows: Sequence[RowSpec], board: RowBoard) -> list[RowResult]:
    """Each row's raw result as posted; a row task that failed before posting (e.g. the API
    failed) becomes an ERR row."""
    results = []
    for future, row in zip(futures, rows, strict=True):
        posted = board.posted(row.id)
        if posted is None:
            try:
                future.result()
                posted = crashed_row(row, RuntimeError("the row task ended without a result"))
            except Exception as exc:
                posted = crashed_row(row, exc)
        results.append(posted)
    return results


def run_with_prefect(
    options: RunOptions,
    run_id: str,
    containment: Containment | None = None,
    planned: Plan | None = None,
    listener: ProgressListener | None = None,
    backend: Backend | None = None,
    extra_tags: Sequence[str] = (),
    announce: Callable[[str], None] | None = None,
    say: Callable[[str], None] | None = None,
) -> RunResult:
    """Run the flow in a worker thread of this process and wait for it.

    The flow runs off the main thread so that Prefect does not replace the
    main thread's SIGTERM handler: assay's own handler cancels the samples
    and lets the flow finish, which writes the run document and stops the
    temporary server cleanly. The heartbeat is off (it costs ~1 s at exit).
    ``announce`` gets the flow run's UI address when a UI answers there; ``say`` gets a line for stderr
    (that Prefect logged warnings or errors of its own, and where they are).
    """
    launch = Launch(run_id, options, planned or plan(options), tuple(extra_tags), say)
    # Prefect's log worker reports a failed delivery on stderr through this switch (the run's
    # prefect.log and its one-line note say what Prefect failed at); the report stays the only output.
    logging.raiseExceptions = False
    with _LIVE_LOCK:
        # The caller's signal handler stops the given containment, and the caller closes it.
        live = _LIVE[run_id] = _LiveRun(containment or Containment(), listener=listener, owned=containment is None)
    updates: dict[str, Any] = {"flows.heartbeat_frequency": None}
    if backend is not None:
        updates.update(backend.prefect_settings())  # its URL, and the home's API secret for its own server
    outcome: dict[str, Any] = {}

    def target() -> None:
        token = _LAUNCH.set(launch)
        try:
            parameters = MatrixParameters.from_options(options, launch.tags)
            # A copy, not ``with_options``: that builds the parameters' schema again (20 ms), for a name.
            named = copy.copy(matrix_flow)
            named.flow_run_name = flow_run_name(run_id, options.label)
            with temporary_settings(updates=updates):
                state = cast(State[Any], named(**parameters.model_dump(), return_state=True))
                outcome["run"] = states.carried(state, RunResult)
                if announce is not None and backend is not None and not backend.temporary:
                    link = _flow_run_link(state, backend)
                    if link:
                        announce(link)
        except BaseException as exc:  # handed to the main thread, which re-raises it
            outcome["error"] = exc
        finally:
            _LAUNCH.reset(token)
            finished.set()

    finished = threading.Event()
    # The caller's context (e.g. its Prefect settings) goes with the flow: a new thread starts without it.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), name="assay-flow", daemon=True)
    thread.start()
    api_url = backend.api_url if backend is not None else None
    with temporary_settings(updates=updates):  # what the flow's client sends: the home's API secret included
        headers = _client_headers()
    watch = ApiWatch(api_url, headers=headers) if api_url else None
    # Short waits keep the main thread responsive to signals. An event, not thread.join(): on Python 3.11 a
    # signal handler that raises inside join() marks the still running thread as finished (bpo-45274), and
    # who joins it later (an in-process caller after a second interrupt) would not wait for it.
    try:
        while not finished.wait(timeout=0.2):
            if watch is not None and live.flow_run_id is not None:
                watch.follow(live.flow_run_id)
            lost = watch.lost() if watch is not None else None
            if lost is not None:
                return _closed_without_api(launch, lost, live)
    except BaseException:
        # A second interrupt stopped every sample at once: the flow closes the run within moments;
        # if it cannot (its API is slow or gone), the run is closed here, so that it has its run.json.
        if not finished.wait(timeout=_CLOSE_GRACE_S):
            _close_here(launch, RunStop("cancelled", "interrupted: every sample was killed at once"))
        raise
    if "error" in outcome:
        # The API went away (or another server took its place) under the flow of an open run: close it
        # from its evidence, or keep what it recorded. (A run that never opened says what failed, below.)
        gone = _gone(watch, live) if live.recorder is not None else None
        if gone is not None:
            return _closed_without_api(launch, gone, live)
        failure = api_failure(outcome["error"], backend)
        closed = live.recorder.wait_closed(timeout=0) if failure is not None and live.recorder is not None else None
        if closed is not None:  # the API failed after run.json was written: that is the run's answer
            return _recorded_without_api(launch, str(failure), closed)
        raise failure or outcome["error"]
    run = cast(RunResult, outcome["run"])
    gone = _gone(watch, live)
    # The flow returned, but its last states, logs and artifacts may not have reached a gone API.
    return _recorded_without_api(launch, gone, run) if gone is not None else run


def _gone(watch: ApiWatch | None, live: _LiveRun) -> str | None:
    """Why the run's API is not there now (gone, or no longer the server of its flow run), or None."""
    if watch is None:
        return None
    if live.flow_run_id is not None:
        watch.follow(live.flow_run_id)
    return watch.gone_now()


def _client_headers() -> dict[str, str]:
    """The headers Prefect's client sends the run's API that say who asks: the Authorization of its auth
    string (else of its key), then its custom headers, which Prefect's client lets override it."""
    auth_string, key = PREFECT_API_AUTH_STRING.value(), PREFECT_API_KEY.value()
    headers: dict[str, str] = {}
    if auth_string:
        headers["Authorization"] = "Basic " + base64.b64encode(auth_string.encode()).decode()
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return {**headers, **{str(k): str(v) for k, v in get_current_settings().client.custom_headers.items()}}


def _closed_without_api(launch: Launch, lost: str, live: _LiveRun) -> RunResult:
    """The run when its Prefect API went away. Once its run.json is written (every row finished and
    the flow closed it), that is the answer: the report prints, the exit code is its verdict's, and a
    warning says that the Prefect record may be incomplete. Before that it is closed here, ERR:
    samples stopped, the rows that finished kept, the others ERR with the finished samples
    (``--resume`` runs them again), and run.json written, so that the report, the run document and
    the exit code agree. The flow's thread is left waiting on the API; the process exits without
    waiting for it. ``live`` is the run's, held by the caller: the flow lets go of it as it returns."""
    _API_LOST.set()
    if live.recorder is None:  # the flow never opened the run: nothing ran
        raise ServerError(f"{lost}; nothing ran: check it (`assay server status`) and run again")
    if live.recorder.reserve_close():  # this thread writes the run's document; the flow's finalize waits
        live.containment.cancel()
        order, stop = baselines_first(launch.plan.matrix.rows), RunStop("crashed", lost)
        planned = launch.plan
        return complete_from_evidence(live.recorder, launch.options, order, stop, planned.baseline, live.containment)
    run = live.recorder.wait_closed(timeout=_CLOSE_GRACE_S)  # the flow closed it, or is closing it
    if run is None:
        raise ServerError(f"{lost} while the run closed: check it (`assay server status`) and resume the run")
    return _recorded_without_api(launch, lost, run)


def _recorded_without_api(launch: Launch, lost: str, run: RunResult) -> RunResult:
    """A run whose run.json was written before its API went away, as written, with one warning."""
    _API_LOST.set()
    if launch.say is not None:
        document = store_for(launch.options).run_file(run.run_id)
        launch.say(
            f"warning: {lost}, after the run was recorded ({document}): its verdict stands; the Prefect "
            "record of the run (its flow run's state, logs and artifacts) may be incomplete"
        )
    return run


def _close_here(launch: Launch, stop: RunStop) -> RunResult | None:
    """The run closed by this thread from its evidence (its flow cannot close it), or as the flow
    closed it meanwhile; None when the flow never opened it."""
    live = _live_here(launch.run_id)
    if live is None or live.recorder is None:
        return None
    if not live.recorder.reserve_close():
        return live.recorder.wait_closed(timeout=_CLOSE_GRACE_S)
    planned = launch.plan
    order = baselines_first(planned.matrix.rows)
    return complete_from_evidence(live.recorder, launch.options, order, stop, planned.baseline, live.containment)


def _flow_run_link(state: State[Any], backend: Backend) -> str | None:
    """The flow run's page in the Prefect UI, when the UI answers."""
    flow_run_id = state.state_details.flow_run_id
    link = url_for("flow-run", obj_id=flow_run_id) if flow_run_id else None
    if not link or not backend.ui_url or not url_answers(backend.ui_url):
        return None
    return link


_API_LOST = threading.Event()  # a run of this process closed without its Prefect API
_CLOSE_GRACE_S = 10.0  # after a second interrupt: how long the flow gets to write its run document

_TEMPORARY_TIMEOUT = "Timed out while attempting to connect to ephemeral Prefect API server"
_UNREACHABLE = "Failed to reach API at"  # Prefect's RuntimeError when its version check gets no answer


def api_failure(exc: BaseException, backend: Backend | None) -> ServerError | None:
    """A one-line ServerError saying what to do when ``exc`` means the Prefect API failed, else None."""
    where = backend.api_url if backend is not None and backend.api_url else "the temporary Prefect server"
    if isinstance(exc, RuntimeError) and _TEMPORARY_TIMEOUT in str(exc):
        return ServerError(
            "the temporary Prefect server did not start in time (a busy machine, or its first start): raise "
            "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS, or use the local server (unset ASSAY_PREFECT_SERVER)"
        )
    if isinstance(exc, RuntimeError) and str(exc).startswith(_UNREACHABLE):  # Prefect's check as a flow starts
        cause = exc.__cause__
        return _lost(where, type(cause).__name__ if cause else "no answer", str(cause or exc))
    if isinstance(exc, ObjectNotFound):  # a 404 for the run's own objects: not the server they live on
        return _lost(where, "HTTP 404", str(exc) or "an object of this run is unknown there")
    if isinstance(exc, httpx.TransportError | PrefectHTTPStatusError):
        status = f"HTTP {exc.response.status_code}" if isinstance(exc, PrefectHTTPStatusError) else type(exc).__name__
        return _lost(where, status, str(exc))
    return None


def _lost(where: str, status: str, detail: str) -> ServerError:
    return ServerError(
        f"lost the Prefect API at {where} ({status}: {' '.join(detail.split())[:200]}); "
        "check it (`assay server status`) and run again"
    )


def deliver_before_exit(timeout: float = 30.0) -> bool:
    """Send Prefect's queued logs and events now; True when nothing else needs an orderly exit.

    Python's own interpreter shutdown after a Prefect run costs about 0.6 s
    here; the command line skips it when this returns True. A temporary
    server still running in this process needs Prefect's exit hook to stop it.
    """
    if _API_LOST.is_set():  # nothing would be delivered: do not wait for it
        return True
    APILogWorker.drain_all(timeout=timeout)
    EventsWorker.drain_all(timeout=timeout)
    server = sys.modules.get("prefect.server.api.server")
    # Prefect's exit hook stops a temporary server's process, also one that timed out starting.
    return server is None or all(s.server_process is None for s in server.SubprocessASGIServer._instances.values())
