"""Integration fixtures: one Prefect home and one real Prefect server for the whole session.

Every integration test runs with its own Prefect home (``PREFECT_HOME``, a
temporary folder set before anything imports Prefect), never the user's. The
server is Prefect's background server of that home, started once on a free
port by ``flows.server.local`` (what ``assay server start`` runs): command-line
runs find it through the home's PID file, in-process flows through
``prefect_backend``. At the end of the session every server of that home is
stopped. Only the tests that must prove a first start pay for their own.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.server.prefect_env import quiet_prefect

quiet_prefect()

REPO = Path(__file__).resolve().parents[2]
WIDE = {"COLUMNS": "200"}  # one terminal line per table row, whatever the test runner's width
SESSION_HOME = Path(tempfile.mkdtemp(prefix="assay-prefect-home-")).resolve()
os.environ["PREFECT_HOME"] = str(SESSION_HOME)  # before any test module imports Prefect
os.environ.pop("PREFECT_API_URL", None)
os.environ.pop("ASSAY_PREFECT_SERVER", None)
# The session server retries a deployment run that waits for its concurrency slot after 1 s, not 30.
os.environ["PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS"] = "1"
with socket.socket() as _probe:  # a free port for the session server, never Prefect's shared default 4200
    _probe.bind(("127.0.0.1", 0))
    os.environ["ASSAY_PREFECT_PORT"] = str(_probe.getsockname()[1])


def pytest_unconfigure(config: pytest.Config) -> None:
    """Stop every server of the session's Prefect home, then remove it."""
    from flows.server.local import stop

    stop(SESSION_HOME)
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def prefect_server() -> Iterator[Any]:
    """The session's real Prefect server (Prefect's background server of the session home).

    Started without the ``marker`` of whichever test asks first: that test's
    clean-up kills what carries its marker, and the server outlives the test.
    """
    from flows.server.local import ensure_started

    mark = os.environ.pop("ASSAY_TEST_MARK", None)
    try:
        started = ensure_started(SESSION_HOME)
    finally:
        if mark is not None:
            os.environ["ASSAY_TEST_MARK"] = mark
    yield started


@pytest.fixture(scope="session")
def prefect_backend(prefect_server: Any) -> Iterator[None]:
    """Point this process's Prefect client at the session server (for flows run in process)."""
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"api.url": prefect_server.api_url}):
        yield


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m flows.run ARGS`` as a user would, in its own process.

    Without PREFECT_API_URL, so the Prefect engine uses the session home's
    local server (request ``prefect_server`` so it is already up).
    """
    full_env = dict(os.environ)
    full_env.pop("PREFECT_API_URL", None)
    full_env["PYTHONPATH"] = str(REPO)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "flows.run", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_local(fixture: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run a fixture with the local engine; the finished process and its run document (``--json``)."""
    target = tmp_path / "run.json"
    done = run_cli(
        [str(fixture), "--engine", "local", "--out", str(tmp_path / "state"), "--json", str(target), *extra],
        cwd=tmp_path,
        env=WIDE,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    document = json.loads(target.read_text()) if target.exists() else {}
    return done, document
