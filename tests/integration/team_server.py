"""A team server that tests may take down and bring back: PostgreSQL and Prefect's server, as
``deployments/postgres_server.py`` starts them, on a fixed port so that clients find it again.

Clients get their environment from ``prefect_env`` (``test_deployments``), as every test of a team
server does; ``processes_in`` finds the flow-run processes a worker or serving process started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from tests.integration.conftest import REPO
from tests.integration.test_deployments import POSTGRES_SCRIPT, postgres_available, prefect_env


@dataclass(frozen=True)
class TeamServer:
    """PostgreSQL and Prefect's server in ``root``, the server always on ``port``."""

    root: Path
    port: int

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
        """Start (or find running) PostgreSQL and the server; they answer when this returns."""
        done = subprocess.run(
            [sys.executable, str(POSTGRES_SCRIPT), "start", "--dir", str(self.root), "--port", str(self.port)],
            env=_script_env(), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    def stop(self) -> None:
        """An outage: the server and PostgreSQL stopped (``postgres_server.py stop``)."""
        done = subprocess.run(
            [sys.executable, str(POSTGRES_SCRIPT), "stop", "--dir", str(self.root)],
            env=_script_env(), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    def kill(self) -> int | None:
        """SIGKILL the Prefect server's process (PostgreSQL stays up); its pid, or None when none ran."""
        from flows.server.local import find

        server = find(self.home)
        if server is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)
        return server.pid


def _script_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    return env


@contextlib.contextmanager
def team_server() -> Iterator[TeamServer]:
    """A started team server in a folder of its own, stopped and removed after."""
    if not postgres_available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI: .ci/run installs the postgresql package")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); CI always runs this test")
    from flows.server.local import free_port

    # Not under pytest's folder: as root, PostgreSQL runs as the postgres user, who must reach it.
    server = TeamServer(Path(tempfile.mkdtemp(prefix="assay-team-")), free_port())
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.root, ignore_errors=True)


def processes_in(parent: int, marker: str) -> list[int]:
    """Live descendants of ``parent`` whose command line holds ``marker`` (e.g. a flow run's process)."""
    return [
        pid for pid in procfs.descendants(parent) if marker in " ".join(procfs.argv(pid) or []) and procfs.alive(pid)
    ]
