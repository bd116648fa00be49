"""The process that runs a flow run, as ``host:pid``, and whether it is gone.

Heartbeats are off for ``assay run`` (they cost about 1 s per run), so a run
killed with SIGKILL would stay Running for good. Every ``assay-matrix`` flow
run therefore records the process that runs it:

* in its ``infrastructure_pid`` when nothing else wrote one (an ``assay run``,
  a run served by ``deployments/nightly.py``: Prefect's runner records none);
* in its ``assay.owner`` label when it runs on a work pool: Prefect 3.9's
  worker writes its own bare pid (``4242``, no host) there, which says nothing
  about which machine ran it, and may land after assay's;
* in its rows' subflow runs' ``assay.owner`` label, given as assay creates them:
  the idle stop counts no run as live whose process is gone, rows included.

Standard library only: the idle stop (``flows.server.idle_stop``) judges runs too.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from fixtures_core.execution import procfs

OWNER_LABEL = "assay.owner"
_STARTED_SLACK_S = 5.0  # a process started this long after its flow run is another process on a reused pid


@dataclass(frozen=True)
class Owner:
    """The process that runs a flow run: ``host:pid``."""

    host: str
    pid: int

    @classmethod
    def here(cls) -> Owner:
        return cls(socket.gethostname(), os.getpid())

    @classmethod
    def parse(cls, text: object) -> Owner | None:
        """``host:pid``; None for anything else (a worker's bare pid, a container id)."""
        host, _, pid = (text if isinstance(text, str) else "").rpartition(":")
        return cls(host, int(pid)) if host and pid.isascii() and pid.isdigit() and len(pid) < 10 else None

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


def owner_of(infrastructure_pid: str | None, labels: Mapping[str, object] | None) -> Owner | None:
    """Who runs a flow run: its ``assay.owner`` label, else a ``host:pid`` infrastructure pid; None if unknown."""
    return Owner.parse((labels or {}).get(OWNER_LABEL)) or Owner.parse(infrastructure_pid)


def is_gone(owner: Owner | None, began: float | None, host: str) -> bool:
    """True when ``owner`` ran on ``host`` and no longer runs there (or a newer process took its pid);
    ``began`` is when the flow run started (epoch seconds). An unknown owner or another host is never judged."""
    if owner is None or owner.host != host:
        return False
    started = procfs.started_at(owner.pid)
    if started is None:
        return True
    return began is not None and started > began + _STARTED_SLACK_S
