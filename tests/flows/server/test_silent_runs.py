"""The automation that marks silent deployment runs Crashed: its window, what it watches, what it does."""

from __future__ import annotations

from datetime import timedelta

from prefect.client.schemas.objects import StateType
from prefect.events.actions import ChangeFlowRunState
from prefect.events.schemas.automations import EventTrigger, Posture

from flows.server import silent_runs


def test_the_window_is_three_heartbeats_and_at_least_three_minutes() -> None:
    assert silent_runs.heartbeat_seconds(None) is None  # heartbeats off
    assert silent_runs.heartbeat_seconds(10) == 30  # Prefect sends one every 30 s at the most
    assert silent_runs.window_for(180) == 540  # Prefect's default heartbeat: 3 x 180 s
    assert silent_runs.window_for(30) == 180  # 3 x 30 s = 90 s is less than a slow start takes


def test_it_watches_pending_and_running_runs_of_assay_deployments_and_crashes_the_silent_ones() -> None:
    made = silent_runs.automation(180)
    trigger = made.trigger
    assert isinstance(trigger, EventTrigger)
    assert trigger.posture == Posture.Proactive and trigger.threshold == 1 and trigger.within == timedelta(seconds=180)
    assert trigger.for_each == {"prefect.resource.id"}  # one window per flow run
    assert {"prefect.flow-run.Pending", "prefect.flow-run.Running", "prefect.flow-run.heartbeat"} <= trigger.after
    assert {"prefect.flow-run.heartbeat", "prefect.flow-run.Completed", "prefect.flow-run.Crashed"} <= trigger.expect
    related = [dict(spec.root) for spec in trigger.match_related]  # type: ignore[union-attr]
    # Ad-hoc runs (no deployment) send no heartbeats; rows' subflow runs are another flow: neither is watched.
    assert {"prefect.resource.role": "flow", "prefect.resource.name": "assay-matrix"} in related
    assert {"prefect.resource.role": "deployment"} in related
    [action] = made.actions
    assert isinstance(action, ChangeFlowRunState)
    assert action.state == StateType.CRASHED and not action.force  # a run that ended meanwhile keeps its state
    assert action.message == (
        "its process is gone: no heartbeat or state change for 180 s "
        "(marked Crashed by the automation 'assay: silent deployment runs are Crashed')"
    )
