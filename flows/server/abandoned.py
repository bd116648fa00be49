"""Flow runs whose process is gone: marked Crashed by the next assay run, or serving process, that sees them.

Heartbeats are off for ``assay run`` (they cost about 1 s per run), so a run
killed with SIGKILL, or whose machine lost the server, would stay Running in
the UI for good. Every flow run of ``assay-matrix`` records its process as
``host:pid`` (``flows.server.owners``: its ``infrastructure_pid``, or its
``assay.owner`` label on a work pool, whose worker writes a bare pid), and
every new run, whoever started it, marks Crashed each Running one of this host
whose process is gone, or is a newer process that reused its pid, and with it
whatever of that run is unfinished: its rows' subflow runs (Pending or
Running) and the task runs of both (rows, samples, finalize). A run on another
host, or whose owner is unknown, is never judged from here (``sweep``).
``deployments/nightly.py`` sweeps so every minute while it serves.

Deployment runs send heartbeats, and the server's automation
(``flows.server.silent_runs``) marks one Crashed once it falls silent,
wherever it ran. ``sweep_silent`` applies the same rule to what the server
stored (a killed server may lose the last events of a run before its
automations see them), and ``finish_crashed`` marks Crashed what such a run
left unfinished, which the automation does not; ``nightly.py`` runs both
every minute, once the API has answered for a whole window.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar
from uuid import UUID

from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterDeploymentId,
    FlowRunFilterEndTime,
    FlowRunFilterParentFlowRunId,
    FlowRunFilterState,
    FlowRunFilterStateType,
    TaskRunFilter,
    TaskRunFilterFlowRunId,
    TaskRunFilterState,
    TaskRunFilterStateType,
)
from prefect.client.schemas.objects import FlowRun, StateType
from prefect.client.schemas.responses import SetStateStatus
from prefect.events.filters import EventFilter, EventNameFilter, EventOccurredFilter, EventResourceFilter
from prefect.states import Crashed

from flows.server import owners
from flows.server.owners import Owner

FLOW_NAME = "assay-matrix"
_PAGE = 200
# What a run that is gone may have left unfinished (Prefect's final states are the others).
_UNFINISHED = [StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED, StateType.CANCELLING]
T = TypeVar("T")


def owner(flow_run: FlowRun) -> Owner | None:
    """The process that runs ``flow_run``, when it recorded one."""
    return owners.owner_of(flow_run.infrastructure_pid, flow_run.labels)


def is_gone(flow_run: FlowRun, host: str) -> bool:
    """True when the flow run's process ran on ``host`` and no longer runs there."""
    began = flow_run.start_time or flow_run.expected_start_time
    return owners.is_gone(owner(flow_run), began.timestamp() if began is not None else None, host)


def mark_abandoned(client: SyncPrefectClient, current: FlowRun, resumed: str | None = None) -> list[FlowRun]:
    """Mark Crashed every Running ``assay-matrix`` flow run of this host whose process is gone; the ones marked.

    ``resumed`` is the flow-run name of a run this one resumes: its old flow run's message says so.
    """
    return sweep(client, finder=f"flow run {current.name!r}", skip=current.id, resumed=resumed)


def sweep(
    client: SyncPrefectClient, finder: str, skip: UUID | None = None, resumed: str | None = None
) -> list[FlowRun]:
    """``mark_abandoned`` for any ``finder`` (who found them, as the message says: a flow run, a serving
    process); ``skip`` is the finder's own flow run."""
    host = socket.gethostname()
    running = client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING]))),
        limit=_PAGE,
    )
    marked = []
    for found in running:
        if found.id == skip or not is_gone(found, host):
            continue
        message = f"its process ({owner(found)}) is gone: killed, or lost; found by {finder}"
        if resumed is not None and found.name == resumed:
            message += ", which resumes it"
        # Its parts first: should this fail half-way, the run is still Running, and the next run finds it again.
        crash_within(client, found, message)
        client.set_flow_run_state(found.id, Crashed(message=message), force=True)
        marked.append(found)
    return marked


def sweep_silent(client: SyncPrefectClient, window_s: int, finder: str) -> list[FlowRun]:
    """Mark Crashed every Pending or Running flow run of an ``assay-matrix`` deployment, on any host, that has
    had no state change and sent no heartbeat for ``window_s`` seconds, and then what it left unfinished.

    The rule of the automation in ``flows.server.silent_runs``, read from what the server stored: it also
    finds a run whose last events a killed server lost before its automations saw them. The change is not
    forced: a run that reported its end meanwhile keeps it. Judge only with an API that has answered for a
    whole window, or a live run's heartbeats lost to the outage would count against it.
    """
    now = datetime.now(UTC)
    candidates = _pages(lambda offset: client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])),
        flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.PENDING, StateType.RUNNING])),
            deployment_id=FlowRunFilterDeploymentId(is_null_=False),
        ),
        limit=_PAGE, offset=offset))  # fmt: skip
    marked = []
    for found in candidates:
        changed = found.state.timestamp if found.state is not None else None
        if changed is None or (now - changed).total_seconds() < window_s:
            continue
        if _heartbeat_since(client, found.id, now - timedelta(seconds=window_s)):
            continue
        message = f"its process is gone: no heartbeat or state change for {window_s} s; found by {finder}"
        if client.set_flow_run_state(found.id, Crashed(message=message)).status == SetStateStatus.ACCEPT:
            crash_within(client, found, message)
            marked.append(found)
    return marked


def finish_crashed(client: SyncPrefectClient, since: datetime) -> int:
    """Mark Crashed what ``assay-matrix`` flow runs that ended Crashed after ``since`` left unfinished (rows'
    subflow runs, task runs), with their own message: Prefect's automation marks only the flow run itself.
    The number of runs tidied."""
    crashed = client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])),
        flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.CRASHED])),
            end_time=FlowRunFilterEndTime.model_validate({"after_": since}),
        ),
        limit=_PAGE,
    )
    tidied = 0
    for found in crashed:
        message = (found.state.message if found.state is not None else None) or "its flow run crashed"
        tidied += crash_within(client, found, message) > 0
    return tidied


def _heartbeat_since(client: SyncPrefectClient, flow_run_id: UUID, since: datetime) -> bool:
    """True when the flow run sent a heartbeat event since ``since``."""
    page = client.read_events(
        EventFilter(
            occurred=EventOccurredFilter.model_validate({"since": since}),
            event=EventNameFilter(name=["prefect.flow-run.heartbeat"]),
            resource=EventResourceFilter(id=[f"prefect.flow-run.{flow_run_id}"]),
        ),
        limit=1,
    )
    return bool(page.events)


def crash_within(client: SyncPrefectClient, flow_run: FlowRun, message: str) -> int:
    """Mark Crashed, with ``message``, the unfinished subflow runs of ``flow_run`` (its rows) and the
    unfinished task runs of both (rows, samples, finalize); how many it marked."""
    subflows = _pages(lambda offset: client.read_flow_runs(
        flow_run_filter=FlowRunFilter(
            parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run.id]),
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=_UNFINISHED)),
        ),
        limit=_PAGE, offset=offset))  # fmt: skip
    for subflow in subflows:
        client.set_flow_run_state(subflow.id, Crashed(message=message), force=True)
    tree = [flow_run.id, *(subflow.id for subflow in subflows)]
    tasks = _pages(lambda offset: client.read_task_runs(
        task_run_filter=TaskRunFilter(
            flow_run_id=TaskRunFilterFlowRunId(any_=tree),
            state=TaskRunFilterState(type=TaskRunFilterStateType(any_=_UNFINISHED)),
        ),
        limit=_PAGE, offset=offset))  # fmt: skip
    for task_run in tasks:
        client.set_task_run_state(task_run.id, Crashed(message=message), force=True)
    return len(subflows) + len(tasks)


def _pages(read: Callable[[int], list[T]]) -> list[T]:
    """Every item of a paged read, page by page (``read(offset)`` gives one page of at most ``_PAGE``)."""
    found: list[T] = []
    while True:
        page = read(len(found))
        found.extend(page)
        if len(page) < _PAGE:
            return found
