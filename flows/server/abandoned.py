"""Flow runs whose process is gone: marked Crashed by the next assay run that sees them.

Heartbeats are off for ``assay run`` (they cost about 1 s per run), so a run
killed with SIGKILL, or whose machine lost the server, would stay Running in
the UI for good. Every flow run of ``assay-matrix`` records its process as
``host:pid`` (``flows.server.owners``: its ``infrastructure_pid``, or its
``assay.owner`` label on a work pool, whose worker writes a bare pid), and
every new run, whoever started it, marks Crashed each Running one of this host
whose process is gone, or is a newer process that reused its pid, and with it
whatever of that run is unfinished: its rows' subflow runs (Pending or
Running) and the task runs of both (rows, samples, finalize). A run on another
host, or whose owner is unknown, is never judged from here.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TypeVar

from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.filters import (
    FlowFilter,
    FlowFilterName,
    FlowRunFilter,
    FlowRunFilterParentFlowRunId,
    FlowRunFilterState,
    FlowRunFilterStateType,
    TaskRunFilter,
    TaskRunFilterFlowRunId,
    TaskRunFilterState,
    TaskRunFilterStateType,
)
from prefect.client.schemas.objects import FlowRun, StateType
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
    host = socket.gethostname()
    running = client.read_flow_runs(
        flow_filter=FlowFilter(name=FlowFilterName(any_=[FLOW_NAME])),
        flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING]))),
        limit=_PAGE,
    )
    marked = []
    for found in running:
        if found.id == current.id or not is_gone(found, host):
            continue
        message = f"its process ({owner(found)}) is gone: killed, or lost; found by flow run {current.name!r}"
        if resumed is not None and found.name == resumed:
            message += ", which resumes it"
        # Its parts first: should this fail half-way, the run is still Running, and the next run finds it again.
        crash_within(client, found, message)
        client.set_flow_run_state(found.id, Crashed(message=message), force=True)
        marked.append(found)
    return marked


def crash_within(client: SyncPrefectClient, flow_run: FlowRun, message: str) -> None:
    """Mark Crashed, with ``message``, the unfinished subflow runs of ``flow_run`` (its rows) and the
    unfinished task runs of both (rows, samples, finalize)."""
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


def _pages(read: Callable[[int], list[T]]) -> list[T]:
    """Every item of a paged read, page by page (``read(offset)`` gives one page of at most ``_PAGE``)."""
    found: list[T] = []
    while True:
        page = read(len(found))
        found.extend(page)
        if len(page) < _PAGE:
            return found
