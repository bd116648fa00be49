"""What a user sees of a flow run in the Prefect UI, read through the Prefect client.

A run is its flow run and, in the default shape, one subflow run per row
holding that row's sample task runs: a view gathers the task runs and logs of
the whole tree, so a test reads a sample's state by name whatever the shape.
The server records task-run states, logs and events a moment after the
client sends them (a worker's flow-run process sends its last logs as it
exits), so ``settled_view`` polls (bounded) until the flow run, its subflow
runs and every task run are final and the run's last log line is there: a
wait for the API to catch up, never a timing assertion.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from prefect.client.orchestration import SyncPrefectClient
from prefect.client.schemas.filters import (
    ArtifactFilter,
    ArtifactFilterFlowRunId,
    FlowRunFilter,
    FlowRunFilterName,
    FlowRunFilterParentFlowRunId,
    LogFilter,
    LogFilterFlowRunId,
    TaskRunFilter,
    TaskRunFilterFlowRunId,
)
from prefect.client.schemas.objects import Artifact, FlowRun, Log, TaskRun
from prefect.events.filters import EventFilter, EventNameFilter, EventResourceFilter


@dataclass(frozen=True)
class FlowRunView:
    """A flow run as the UI shows it: the run, its task runs and its subflow runs' by name, the logs of
    both, its artifacts, and its subflow runs by name (the rows, in the default shape)."""

    flow_run: FlowRun
    tasks: dict[str, TaskRun]
    logs: list[Log]
    artifacts: dict[str, Artifact]
    subflows: dict[str, FlowRun]

    def task(self, name: str) -> TaskRun:
        return self.tasks[name]

    def state(self, task_name: str) -> tuple[str, str]:
        """(state name, message) of a task run."""
        state = self.tasks[task_name].state
        assert state is not None
        return state.name, state.message or ""

    def log_text(self) -> str:
        return "\n".join(log.message for log in self.logs)


def view(client: SyncPrefectClient, flow_run_id: UUID) -> FlowRunView:
    """The flow run, its subflow runs, the task runs and logs of both, and its artifacts as the API has them now."""
    flow_run = client.read_flow_run(flow_run_id)
    subflows = client.read_flow_runs(
        flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[flow_run_id])), limit=200
    )
    tree = [flow_run_id, *(run.id for run in subflows)]
    task_runs = client.read_task_runs(
        task_run_filter=TaskRunFilter(flow_run_id=TaskRunFilterFlowRunId(any_=tree)), limit=200
    )
    logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=tree)), limit=200)
    artifacts = client.read_artifacts(
        artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id]))
    )
    return FlowRunView(
        flow_run,
        {t.name: t for t in task_runs},
        list(logs),
        {a.key: a for a in artifacts if a.key is not None},
        {run.name: run for run in subflows},
    )


def settled_view(client: SyncPrefectClient, flow_run_id: UUID, tasks: int, timeout: float = 60.0) -> FlowRunView:
    """``view`` once the flow run, its subflow runs and ``tasks`` task runs (of both) are final and the flow
    run's last log line (Prefect's "Finished in state ...", sent after every other line of the run) has arrived."""
    deadline = time.monotonic() + timeout
    while True:
        current = view(client, flow_run_id)
        runs = [current.flow_run, *current.subflows.values()]
        final = all(run.state is not None and run.state.is_final() for run in runs)
        tasks_final = len(current.tasks) >= tasks and all(
            t.state is not None and t.state.is_final() for t in current.tasks.values()
        )
        finished = any(
            log.flow_run_id == flow_run_id and log.task_run_id is None and log.message.startswith("Finished in state")
            for log in current.logs
        )
        if (final and tasks_final and finished) or time.monotonic() > deadline:
            return current
        time.sleep(0.5)


def flow_run_named(client: SyncPrefectClient, name: str) -> FlowRun:
    """The one flow run with this name."""
    [found] = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[name])))
    return found


def events_named(client: SyncPrefectClient, event: str, resource_id: str, timeout: float = 60.0) -> list[Any]:
    """Events of this name about this resource, once the server has recorded at least one."""
    deadline = time.monotonic() + timeout
    while True:
        page = client.read_events(
            filter=EventFilter(event=EventNameFilter(name=[event]), resource=EventResourceFilter(id=[resource_id])),
            limit=50,  # the server's maximum (the client's default, 100, is refused)
        )
        if page.events or time.monotonic() > deadline:
            return list(page.events)
        time.sleep(0.5)
