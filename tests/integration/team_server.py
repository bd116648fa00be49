"""A team server that tests take down and bring back: Prefect's server on PostgreSQL, on a fixed port.

PostgreSQL is set up as ``deployments/postgres_server.py`` does it (its cluster and the database URL
pinned in the home's profile). Prefect's server runs as a child of the test in its own session, its
output in ``ROOT/server.log``, so that a test decides exactly when it is down (a kill, a stop) and when
it is back. Clients get their environment from ``prefect_env`` (``test_deployments``), as every test
of a team server does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.server.api_watch import probe_health
from tests.integration.test_deployments import postgres_available, prefect_env
from tests.polling import wait_until


class TeamServer:
    """PostgreSQL in ``root/pgdata`` and Prefect's server on it, always on ``port``."""

    def __init__(self, root: Path, port: int) -> None:
        from deployments.postgres_server import pin_database, start_cluster
        from flows.server.local import free_port

        self.root, self.port = root, port
        self.cluster = start_cluster(root, free_port())
        pin_database(self.home, self.cluster.url)
        self._server: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def home(self) -> Path:
        return self.root.resolve() / "prefect-home"

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """A client's environment (``prefect_env``: the API URL, and what else a client of this server needs)."""
        return prefect_env(self.api_url, home, **extra)

    def start(self) -> None:
        """Start the server (when it is not running); it answers when this returns."""
        with self._lock:
            if self._server is None or self._server.poll() is not None:
                env = dict(os.environ, PREFECT_HOME=str(self.home), PREFECT_SERVER_API_PORT=str(self.port))
                env.update(
                    PREFECT_API_DATABASE_CONNECTION_URL=self.cluster.url, PREFECT_SERVER_ANALYTICS_ENABLED="false"
                )
                env.pop("PREFECT_API_URL", None)
                with (self.root / "server.log").open("ab") as log:
                    self._server = subprocess.Popen(
                        [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                         str(self.port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, start_new_session=True,
                    )  # fmt: skip
        wait_until(lambda: probe_health(self.api_url) == "up", f"the team server answers on {self.api_url}", 240)

    def kill(self) -> None:
        """SIGKILL the server and everything it started: an outage without warning."""
        self._signal(signal.SIGKILL)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL): an outage."""
        self._signal(signal.SIGTERM)

    def _signal(self, sig: int) -> None:
        with self._lock:
            server = self._server
            if server is None or server.poll() is not None:
                return
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, sig)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(server.pid, signal.SIGKILL)
                server.wait(timeout=30)
        wait_until(lambda: probe_health(self.api_url) == "refused", "the team server is gone", 30)

    def close(self) -> None:
        from deployments.postgres_server import stop_cluster

        self.stop()
        stop_cluster(self.root)


@contextlib.contextmanager
def team_server() -> Iterator[TeamServer]:
    """A started team server in a folder of its own, stopped and removed after."""
    if not postgres_available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI: .ci/run installs the postgresql package")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); CI always runs this test")
    from flows.server.local import free_port

    # Not under pytest's folder: as root, PostgreSQL runs as the postgres user, who must reach it.
    root = Path(tempfile.mkdtemp(prefix="assay-team-"))
    server = None
    try:
        server = TeamServer(root, free_port())
        server.start()
        yield server
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(root, ignore_errors=True)


def processes_in(parent: int, marker: str) -> list[int]:
    """Live descendants of ``parent`` whose command line holds ``marker`` (e.g. a flow run's process)."""
    from fixtures_core.execution import procfs

    return [
        pid for pid in procfs.descendants(parent) if marker in " ".join(procfs.argv(pid) or []) and procfs.alive(pid)
    ]
