"""Flow runs whose process is gone: marked Crashed by the next assay run that sees them.

Heartbeats are off for ``assay run`` (they cost about 1 s per run), so a run
killed with SIGKILL, or whose machine lost the server, would stay Running in
the UI for good. Every flow run of ``assay-matrix`` records its process as
``host:pid`` (``infrastructure_pid``: Prefect's workers and ``serve`` write
the same), and a new run marks Crashed each Running one of this host whose
process is gone, or is a newer process that reused its pid, and with it
whatever of that run is unfinished: its rows' subflow runs (Pending or
Running) and the task runs of both (rows, samples, finalize). A run on
another host is never judged from here.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
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

from fixtures_core.execution import procfs

FLOW_NAME = "assay-matrix"
_STARTED_SLACK_S = 5.0  # a process started this long after its flow run is another process on a reused pid
_PAGE = 200
# What a run that is gone may have left unfinished (Prefect's final states are the others).
_UNFINISHED = [StateType.SCHEDULED, StateType.PENDING, StateType.RUNNING, StateType.PAUSED, StateType.CANCELLING]
T = TypeVar("T")


@dataclass(frozen=True)
class Owner:
    """The process that runs a flow run: ``host:pid``."""

    host: str
    pid: int

    @classmethod
    def here(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid())

    @classmethod
    def parse(cls, text: str | None) -> Owner | None:
        host, _, pid = (text or "").rpartition(":")
        return cls(host, int(pid)) if host and pid.isdigit() else None

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


def is_gone(flow_run: FlowRun, host: str) -> bool:
    """True when the flow run's process ran on ``host`` and no longer runs there."""
    owner = Owner.parse(flow_run.infrastructure_pid)
    if owner is None or owner.host != host:
        return False
    started = procfs.started_at(owner.pid)
    if started is None:
        return True
    began = flow_run.start_time or flow_run.expected_start_time
    return began is not None and started > began.timestamp() + _STARTED_SLACK_S


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
        owner = Owner.parse(found.infrastructure_pid)
        message = f"its process ({owner}) is gone: killed, or lost; found by flow run {current.name!r}"
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
