"""Outages of the Prefect API as a long-lived process sees them: each lost and regained connection said once.

A process that serves a schedule (``deployments/nightly.py``) outlives any
number of server restarts. ``OutageLog`` probes the API's health in the
background (``flows.server.api_watch``: a server that refuses connections for
10 s, or does not answer for 60 s, is lost; any HTTP answer means it is
there) and says one line when it is lost and one line when it answers again,
however long it stays away: never a line per poll. Callers wait on it for the
API to come back.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from flows.server.api_watch import EVERY_S, LOST_AFTER_S, ApiWatch, Probe, probe_health

Say = Callable[[str], None]


class OutageLog:
    """A background thread watching the API; ``up`` is set while it answers."""

    def __init__(
        self,
        api_url: str,
        say: Say,
        probe: Probe = probe_health,
        every: float = EVERY_S,
        lost_after: float = LOST_AFTER_S,
    ) -> None:
        self.api_url = api_url
        self._say, self._probe, self._every, self._lost_after = say, probe, every, lost_after
        self._watch = self._new_watch()
        self.up = threading.Event()
        self.up.set()  # the caller checked it answers before serving
        self._lost_at: float | None = None
        self._up_since = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="assay-outages", daemon=True)

    def __enter__(self) -> OutageLog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def lost(self) -> bool:
        return not self.up.is_set()

    def up_for(self) -> float:
        """Seconds the API has answered since it was last lost (or since this log started)."""
        return 0.0 if self.lost else time.monotonic() - self._up_since

    def lost_now(self, why: str) -> None:
        """The caller saw the API fail (``why``): lost from now on, until a probe answers."""
        if self.up.is_set() and self._probe(self.api_url) != "up":
            self._mark_lost(f"lost the Prefect API at {self.api_url}: {why}")

    def wait_up(self, timeout: float | None = None) -> bool:
        """Until the API answers again (True), or ``timeout`` seconds pass (False)."""
        return self.up.wait(timeout)

    def _new_watch(self) -> ApiWatch:
        return ApiWatch(self.api_url, probe=self._probe, every=self._every, lost_after=self._lost_after)

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            if self.up.is_set():
                reason = self._watch.lost()
                if reason is not None:
                    self._mark_lost(reason)
            elif self._probe(self.api_url) == "up":
                self._mark_up()

    def _mark_lost(self, reason: str) -> None:
        self.up.clear()
        self._lost_at = time.monotonic()
        self._say(f"{reason}; serving waits for it (the schedule is kept on the server)")

    def _mark_up(self) -> None:
        away = time.monotonic() - (self._lost_at or time.monotonic())
        self._watch = self._new_watch()
        self._say(f"the Prefect API at {self.api_url} answers again (lost for {away:.0f} s): serving again")
        self._up_since = time.monotonic()
        self.up.set()
