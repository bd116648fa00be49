"""The lease guard: gives back a dead run's slots of Prefect's global concurrency limits.

A sample holds a slot of ``assay:provider=VALUE`` through a lease on the
Prefect server; the run renews it while the sample runs. The server accepts
no lease shorter than a minute and frees an expired one only when its
repossessor next looks (every 15 s by default), so a SIGKILLed run would hold
its slots for up to 75 s (300 s with Prefect's default lease) and the next
run would wait for nothing. The guard closes that gap: a small process, in
its own session, that the run tells over a pipe which leases it holds. When
the run dies the pipe reaches its end (the kernel closes it, whatever killed
the run), and the guard releases every lease still held, then exits.

Protocol, one line each on stdin: ``hold LEASE_ID``, ``free LEASE_ID``;
end of input with leases still held means the run is gone. It reaches the
API the run used (``PREFECT_API_URL`` and its credentials, passed in its
environment) and imports Prefect only then.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING
from uuid import UUID

from fixtures_core.execution.containment import HELPER_VARIABLE, helper_mark

if TYPE_CHECKING:  # Prefect is imported only once the run is gone: the guard starts in milliseconds
    from prefect.client.orchestration import SyncPrefectClient

_LINE = 64  # "hold " + a UUID + newline fits with room to spare
_RETRY_PAUSES_S = (0.5, 1.0, 2.0, 4.0, 8.0)  # six tries over about 15 s, well inside the minute a lease lasts


class LeaseGuard:
    """The run's side of the guard: starts it, tells it each lease taken and given back."""

    def __init__(self) -> None:
        from prefect.settings import get_current_settings

        settings = get_current_settings()
        env = dict(os.environ)
        env["PREFECT_API_URL"] = str(settings.api.url or "")
        env[HELPER_VARIABLE] = helper_mark("lease-guard")
        if settings.api.key is not None:
            env["PREFECT_API_KEY"] = settings.api.key.get_secret_value()
        if settings.api.auth_string is not None:
            env["PREFECT_API_AUTH_STRING"] = settings.api.auth_string.get_secret_value()
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "flows.server.lease_guard"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a terminal's Ctrl-C must not stop it before it did its job
            close_fds=True,
        )

    def hold(self, lease_id: UUID) -> None:
        self._say(f"hold {lease_id}")

    def free(self, lease_id: UUID) -> None:
        self._say(f"free {lease_id}")

    def close(self) -> None:
        """The run ends having given back every lease: the guard exits with nothing to do."""
        with self._lock:
            if self._process.stdin is not None and not self._process.stdin.closed:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(timeout=10)

    def _say(self, line: str) -> None:
        with self._lock:
            stream = self._process.stdin
            if stream is None or stream.closed:
                return
            with contextlib.suppress(OSError):  # a guard that died: the lease still expires on the server
                stream.write(f"{line}\n".encode())
                stream.flush()


def serve() -> None:
    """Read the run's leases until its pipe ends, then release those still held."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    held: set[str] = set()
    for raw in sys.stdin.buffer:
        words = raw[:_LINE].decode("ascii", "replace").split()
        if len(words) == 2 and words[0] == "hold":
            held.add(words[1])
        elif len(words) == 2 and words[0] == "free":
            held.discard(words[1])
    if held:
        release(sorted(held))


def release(leases: list[str]) -> None:
    """Give back each lease (one already expired or released is fine), retrying a busy server."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for lease in leases:
            for pause in (*_RETRY_PAUSES_S, None):
                if _answered(client, UUID(lease)) or pause is None:
                    break
                time.sleep(pause)


def _answered(client: SyncPrefectClient, lease: UUID) -> bool:
    """Release ``lease``: True once the server has answered (released, or already gone), False when
    it could not (a busy or restarting server: worth another try while the lease lasts)."""
    from prefect.exceptions import PrefectHTTPStatusError

    try:
        client.release_concurrency_slots_with_lease(lease)
    except PrefectHTTPStatusError as exc:
        return exc.response.status_code < 500  # 404: expired, or released by the run
    except Exception:
        return False
    return True


if __name__ == "__main__":
    serve()
