"""The minute sweep of a long-lived process: runs whose process is gone, marked Crashed from what the server stored.

``deployments/nightly.py`` runs it while it serves, and ``python -m
flows.server.silent_runs --watch`` runs it beside workers (or the server).
Every ``EVERY_S`` while the API answers it makes sure the automation of
``flows.server.silent_runs`` is there, marks Crashed the Running runs of this
host whose process is gone (``flows.server.abandoned.sweep``: ad-hoc runs
too, which send no heartbeats) and, once the API has answered for a whole
window, the deployment runs that fell silent anywhere and what crashed runs
left unfinished (``sweep_silent``, ``finish_crashed``): what the automation
misses when a killed server lost its last events, or dropped a window that
ended during a long outage.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from flows.server.outages import OutageLog

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient

# Makes sure the server has the automation that marks silent runs Crashed (``silent_runs.ensure``, given by
# the caller: that module's ``--watch`` runs this one) and returns the automation's window in seconds.
KeepAutomation = Callable[["SyncPrefectClient"], int]

EVERY_S = 60.0
TIDY_BACK = timedelta(hours=1)  # crashed runs whose unfinished parts are looked for


class Sweeper:
    """A thread sweeping every ``every`` seconds as ``finder`` (the messages say who found a run)."""

    def __init__(
        self,
        finder: str,
        keep_automation: KeepAutomation,
        outages: OutageLog,
        every: float = EVERY_S,
        said: Callable[[str], None] | None = None,
    ) -> None:
        self.finder, self._keep_automation, self._outages, self._every = finder, keep_automation, outages, every
        self._said = said
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="assay-sweep", daemon=True)

    def __enter__(self) -> Sweeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            if self._outages.lost:
                continue
            with contextlib.suppress(Exception):  # the next sweep tries again; serving goes on
                self.sweep_once()

    def sweep_once(self) -> None:
        from prefect.client.orchestration import get_client

        from flows.server.abandoned import finish_crashed, sweep, sweep_silent

        with get_client(sync_client=True) as client:
            marked = sweep(client, finder=self.finder)
            window = self._keep_automation(client)
            if self._outages.up_for() >= window:
                marked += sweep_silent(client, window, self.finder)
            finish_crashed(client, since=datetime.now(UTC) - TIDY_BACK)
        if self._said is not None:
            for found in marked:
                self._said(f"marked flow run {found.name!r} Crashed: its process is gone")
