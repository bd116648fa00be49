"""The automation that marks Crashed a deployment run whose process fell silent (Prefect's "zombie" runs).

A deployment run's process sends Prefect's flow-run heartbeat event every
``PREFECT_FLOWS_HEARTBEAT_FREQUENCY`` seconds (180 by default, at least 30;
assay turns heartbeats off only for ``assay run`` and row subflows, where they
cost about 1 s each). A run whose process is gone sends nothing more, and
nobody may be left to say so: its worker or ``serve`` process died with it, or
the server was down when they tried. This server-side automation (a proactive
trigger, as Prefect documents for zombie flow runs) watches every flow run of
``assay-matrix`` that belongs to a deployment: once it is Pending, Running or
has sent a heartbeat, another heartbeat or state change must follow within
the window (three heartbeats, at least 3 minutes), else it is marked Crashed
with the reason. Its deployment concurrency slot is released by that
transition (Prefect's ``ReleaseFlowConcurrencySlots``), so later scheduled
runs are not stuck. The state change is not forced: a run that has ended
meanwhile keeps its final state.

Its state (the open windows) lives in the server's database and survives a
restart, but Prefect 3.9.1 sweeps away, unfired, a window that ended more than
``PREFECT_SERVER_EVENTS_EXPIRED_BUCKET_BUFFER`` (60 s) before the server is
back, and a killed server loses the events it had not yet handed to its
automations: ``flows.server.sweeper`` applies the same rule to what the server
stored, every minute.

``ensure`` creates it once per server, idempotently: ``deployments/nightly.py``
when it starts serving (and after an outage), every deployment run as it
starts (a worker's runs on a server where nothing serves), and
``python -m flows.server.silent_runs`` (the workers' setup, right after
``prefect deploy``: the first run on a fresh server is watched from its
start; ``--watch`` then sweeps every minute). The automation only sees events
that come after it exists: a run that started before, and dies before its next
heartbeat, is not watched. The window only ever widens, to that of the slowest
heartbeat that ensured it; delete the automation to narrow it.

Prefect is imported lazily: ``python -m`` quiets it first.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from flows.server.prefect_env import quiet_prefect

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.events.schemas.automations import Automation, AutomationCore

NAME = "assay: silent deployment runs are Crashed"
FLOW_NAME = "assay-matrix"
HEARTBEATS_MISSED = 3  # two lost heartbeat events (a server restarting) are not a crash
# Never less: a worker's run is Pending until its new process has imported Prefect and the flow, which took more
# than 90 s on a 2-core machine at load 15 (5 s when quiet); a live run taken for gone would lose its slot.
MINIMUM_WINDOW_S = 180
MINIMUM_HEARTBEAT_S = 30  # Prefect's own floor (prefect.flow_engine.MINIMUM_HEARTBEAT_INTERVAL)
_RUN = "prefect.flow-run"
# A state that starts the watch: the run's process is (about to be) there and must say so.
_WATCHED = ("Pending", "Submitting", "InfrastructurePending", "Running", "Retrying")
# Any state of the run after that, or a heartbeat, is a sign of life (or the end of the watch).
_ANSWERS = (
    *_WATCHED,
    "Completed", "Failed", "Crashed", "Cancelled", "Cancelling", "TimedOut",
    "Scheduled", "AwaitingRetry", "AwaitingConcurrencySlot", "Late", "Paused", "Suspended",
)  # fmt: skip


@dataclass(frozen=True)
class Ensured:
    """What ``ensure`` found or did: ``created``, ``widened`` or ``kept``, and the window in seconds."""

    outcome: str
    window_s: int


def heartbeat_seconds(setting: int | None) -> int | None:
    """The heartbeat a process with this ``flows.heartbeat_frequency`` setting sends (None: none)."""
    return None if setting is None else max(int(setting), MINIMUM_HEARTBEAT_S)


def window_for(heartbeat_s: int) -> int:
    """Seconds of silence after which a run counts as gone: ``HEARTBEATS_MISSED`` heartbeats, at least
    ``MINIMUM_WINDOW_S``."""
    return max(HEARTBEATS_MISSED * max(heartbeat_s, MINIMUM_HEARTBEAT_S), MINIMUM_WINDOW_S)


def crash_message(window_s: int) -> str:
    return (
        f"its process is gone: no heartbeat or state change for {window_s} s "
        f"(marked Crashed by the automation {NAME!r})"
    )


def automation(window_s: int) -> AutomationCore:
    """The automation: a proactive trigger per flow run of an ``assay-matrix`` deployment, and its action."""
    from prefect.client.schemas.objects import StateType
    from prefect.events.actions import ChangeFlowRunState
    from prefect.events.schemas.automations import AutomationCore, EventTrigger, Posture
    from prefect.events.schemas.events import ResourceSpecification

    return AutomationCore(
        name=NAME,
        description=(
            f"A flow run of a deployment of {FLOW_NAME} that is Pending or Running and sends no heartbeat or "
            f"state change for {window_s} s has lost its process: mark it Crashed (releasing its deployment "
            "concurrency slot). Created by assay (flows/server/silent_runs.py)."
        ),
        trigger=EventTrigger(
            match=ResourceSpecification({"prefect.resource.id": f"{_RUN}.*"}),
            match_related=[
                ResourceSpecification({"prefect.resource.role": "flow", "prefect.resource.name": FLOW_NAME}),
                ResourceSpecification({"prefect.resource.role": "deployment"}),
            ],
            after={f"{_RUN}.heartbeat", *(f"{_RUN}.{name}" for name in _WATCHED)},
            expect={f"{_RUN}.heartbeat", *(f"{_RUN}.{name}" for name in _ANSWERS)},
            for_each={"prefect.resource.id"},
            posture=Posture.Proactive,
            threshold=1,
            within=timedelta(seconds=window_s),
        ),
        actions=[ChangeFlowRunState(name=None, state=StateType.CRASHED, message=crash_message(window_s), force=False)],
    )


def ensure(client: SyncPrefectClient, heartbeat_s: int) -> Ensured:
    """Create the automation, or widen its window to three of these heartbeats; never narrow it.

    Two processes creating it at once may both create one: each creator then keeps the
    first by id and deletes the others, so that one remains.
    """
    wanted = window_for(heartbeat_s)
    found = _read(client)
    if not found:
        client.create_automation(automation(wanted))
        found = _read(client)
        for extra in found[1:]:
            client.delete_automation(extra.id)
        return Ensured("created", wanted)
    kept = found[0]
    current = _window_of(kept)
    if current is not None and current >= wanted and kept.enabled:
        return Ensured("kept", current)
    window = max(wanted, current or 0)
    client.update_automation(kept.id, automation(window))
    return Ensured("widened", window)


def ensure_for_this_process(client: SyncPrefectClient, logger: logging.Logger | logging.LoggerAdapter[Any]) -> None:
    """``ensure`` for this process's own heartbeat (a deployment run, as it starts). With heartbeats off
    here the automation would take the run for gone: its log says so instead."""
    from prefect.settings import get_current_settings

    heartbeat = heartbeat_seconds(get_current_settings().flows.heartbeat_frequency)
    if heartbeat is None:
        logger.warning(
            f"this deployment run sends no heartbeats (PREFECT_FLOWS_HEARTBEAT_FREQUENCY is off): the automation "
            f"{NAME!r}, when the server has it, will mark it Crashed after its window"
        )
        return
    ensure(client, heartbeat)


def _read(client: SyncPrefectClient) -> list[Automation]:
    """Automations named ``NAME``, by id: every caller picks the same one to keep."""
    return sorted(client.read_automations_by_name(NAME), key=lambda found: str(found.id))


def _window_of(found: Automation) -> int | None:
    within = getattr(found.trigger, "within", None)
    return int(within.total_seconds()) if isinstance(within, timedelta) else None


USAGE = "usage: python -m flows.server.silent_runs [--watch]  (PREFECT_API_URL names the server)"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m flows.server.silent_runs [--watch]``: create (or widen) the automation on ``PREFECT_API_URL``'s
    server for this environment's heartbeat (``PREFECT_FLOWS_HEARTBEAT_FREQUENCY``, 180 s by default), one line;
    with ``--watch``, then sweep every minute until stopped (``flows.server.sweeper``, as ``nightly.py`` does)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in ([], ["--watch"]):
        print(USAGE, file=sys.stderr)
        return 2
    quiet_prefect()
    from prefect.client.orchestration import get_client
    from prefect.settings import get_current_settings

    from flows.server.local import ServerError, configured_api_url, wait_for_api

    url = configured_api_url()
    if url is None:
        print("error: PREFECT_API_URL is not set: it names the server that gets the automation", file=sys.stderr)
        return 2
    try:
        wait_for_api(url, "PREFECT_API_URL")
    except ServerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    heartbeat = heartbeat_seconds(get_current_settings().flows.heartbeat_frequency)
    if heartbeat is None:
        print("error: heartbeats are off here (PREFECT_FLOWS_HEARTBEAT_FREQUENCY): set it as the workers have it",
              file=sys.stderr)  # fmt: skip
        return 2
    with get_client(sync_client=True) as client:
        done = ensure(client, heartbeat)
    print(
        f"automation {NAME!r} {done.outcome} on {url}: a deployment run silent for {done.window_s} s is marked Crashed"
    )
    sys.stdout.flush()
    return _watch(url, heartbeat) if args else 0


def _watch(url: str, heartbeat: int) -> int:
    """Sweep every minute until SIGTERM or Ctrl-C (exit 0); each lost and regained connection said once."""
    import signal
    import threading

    from flows.server.outages import OutageLog
    from flows.server.sweeper import Sweeper

    def say(message: str) -> None:
        print(f"silent_runs: {message}", flush=True)

    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    finder = "python -m flows.server.silent_runs --watch"
    with (
        OutageLog(url, say) as outages,
        Sweeper(finder, lambda client: ensure(client, heartbeat).window_s, outages, said=say),
        contextlib.suppress(KeyboardInterrupt),
    ):
        stopped.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
