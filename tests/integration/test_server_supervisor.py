"""The local server as assay starts it: under its supervisor, its output in a log, alive after the requests
that used to end it, restarted when killed; and, for a home with a secret, behind Prefect's API
authentication, which every client assay starts (a run, its lease guard, the idle stop) passes.

Each test starts a server of its own on a copy of the session server's database (no migrations to wait for).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client
from prefect.exceptions import PrefectHTTPStatusError
from prefect.settings import temporary_settings

from fixtures_core.execution.daemons import free_port
from flows.server import local as server
from flows.server import supervisor
from flows.server.credentials import read_secret, secret_path
from flows.server.idle_stop import start_companion
from tests.browser import Page, headless_chromium
from tests.integration.conftest import REPO, SESSION_HOME, WIDE, run_cli
from tests.integration.server_faults import create_one_limit_at_once, patch_parameters_with_nul
from tests.polling import wait_until
from tests.processes import gone_soon

pytestmark = pytest.mark.usefixtures("prefect_server")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A Prefect home holding a copy of the session's database, nothing live in it; its server stopped after."""
    found = (tmp_path / "home").resolve()
    found.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(found / "prefect.db") as copy:
        source.backup(copy)
        # Other tests of the session leave deployments (which keep a server up for good) and may run flows.
        copy.execute("DELETE FROM deployment")
        copy.execute("UPDATE flow_run SET state_type = 'COMPLETED' WHERE state_type <> 'COMPLETED'")
    monkeypatch.setenv("ASSAY_SERVER_IDLE_MINUTES", "0")  # the idle stop only where a test starts it
    monkeypatch.setenv("ASSAY_PREFECT_PORT", str(free_port()))
    try:
        yield found
    finally:
        server.stop(found)


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    return {"PREFECT_HOME": str(home), **extra}


def ui_shows(page: Page, url: str, what: str) -> str:
    """Open the UI at ``url`` and wait until it shows ``what`` (a password field, or the dashboard); its path."""
    page.load(url, {})
    login = what == "a password field"
    seen: list[Any] = []

    def shown() -> bool:
        expression = "[location.pathname, !!document.querySelector('input[type=password]')]"
        seen[:] = page.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"]["value"]
        return bool(seen[1]) if login else not seen[1] and "login" not in seen[0]

    wait_until(shown, f"the UI shows {what}", within_s=60)
    return str(seen[0])


def test_the_local_server_outlives_the_requests_that_ended_it_and_comes_back_when_killed(home: Path) -> None:
    local = server.ensure_started(home)
    with temporary_settings(updates={"api.url": local.api_url}):
        # Six runs creating one shared limit at once: before, 201 and 500 x 5, then the server stopped answering.
        assert create_one_limit_at_once(6) == [201, 409, 409, 409, 409, 409]
        assert patch_parameters_with_nul() == 204  # SQLite keeps a NUL in JSON
        assert create_one_limit_at_once(6) == [201, 409, 409, 409, 409, 409]
    assert server.find(home) == local and server.serves_home(local), "the server did not survive"
    log = supervisor.log_of(home).path
    said = log.read_text()
    assert "Encountered exception in request" in said and "UNIQUE constraint failed: concurrency_limit_v2.name" in said
    assert " died: " not in said

    status = run_cli(["server", "status"], cwd=home, env=cli_env(home))
    watcher = supervisor.supervisor_pid(home)
    assert status.returncode == 0, status.stderr
    assert status.stdout == (
        f"local Prefect server running: pid {local.pid}, {local.api_url}, UI {local.ui_url}, "
        f"log {log} (supervisor pid {watcher}), API authentication off, answering\n"
    )

    os.kill(local.pid, signal.SIGKILL)  # as the OOM killer would
    wait_until(lambda: (s := server.find(home)) is not None and s.pid != local.pid and server.serves_home(s),
               "the supervisor restarted the server", within_s=240)  # fmt: skip
    restarted = server.find(home)
    assert restarted is not None and restarted.port == local.port
    assert f"the Prefect server (pid {local.pid}) died: killed by SIGKILL (signal 9) after " in log.read_text()

    stopped = run_cli(["server", "stop"], cwd=home, env=cli_env(home))
    assert stopped.stdout == f"stopped the local Prefect server (pid {restarted.pid})\n", stopped.stderr
    assert watcher is not None and gone_soon(watcher) and gone_soon(restarted.pid)
    assert f"stopped the Prefect server (pid {restarted.pid})" in log.read_text()


def test_a_home_with_a_secret_requires_it_and_assays_own_clients_pass_it(home: Path, tmp_path: Path) -> None:
    started = run_cli(["server", "start", "--auth"], cwd=tmp_path, env=cli_env(home))
    assert started.returncode == 0, started.stderr
    secret = read_secret(home)
    assert secret is not None and stat.S_IMODE(secret_path(home).stat().st_mode) == 0o600
    local = server.find(home)
    assert local is not None
    assert started.stdout.rstrip().endswith(f", API authentication on (the secret: {secret_path(home)})")

    # Prefect's own client: refused without the secret, served with it.
    with temporary_settings(updates={"api.url": local.api_url}), get_client(sync_client=True) as stranger:
        with pytest.raises(PrefectHTTPStatusError) as refused:
            stranger.read_flows(limit=1)
        assert refused.value.response.status_code == 401
        assert stranger.api_healthcheck() is None  # the health check stays open (Prefect's choice)
    with temporary_settings(updates={"api.url": local.api_url, "api.auth_string": secret}):
        with get_client(sync_client=True) as client:
            client.read_flows(limit=1)
        assert create_one_limit_at_once(6) == [201, 409, 409, 409, 409, 409]

    # The UI asks for a password, and the secret is that password (the UI keeps what is typed, base64, there).
    with headless_chromium(tmp_path / "chromium") as page:
        assert ui_shows(page, local.ui_url, "a password field") == "/v2/login"
        typed = f"localStorage.setItem('prefect-password', btoa({json.dumps(secret)}))"
        page.call("Runtime.evaluate", expression=typed)
        assert ui_shows(page, local.ui_url, "the dashboard") == "/v2/dashboard"

    # A run on the home's server passes the secret: its flow run, its global concurrency limit, its lease guard.
    provider, marker = f"auth-{os.getpid()}", tmp_path / "started"
    holding = tmp_path / "hold.md"
    holding.write_text(
        f"---\nlimits: {{provider: 1}}\ntimeout: 5m\n---\n\n| Name | provider | Command |\n|---|---|---|\n"
        f"| hold | {provider} | `bash -c 'touch {marker}; sleep 120'` |\n"
    )
    env = {**os.environ, **WIDE, **cli_env(home), "PYTHONPATH": str(REPO)}
    env.pop("PREFECT_API_URL", None)
    run = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(holding), "--out", str(tmp_path / "a")], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        authenticated = {"api.url": local.api_url, "api.auth_string": secret}
        with temporary_settings(updates=authenticated), get_client(sync_client=True) as client:

            def held() -> int | None:
                limits = {gcl.name: gcl for gcl in client.read_global_concurrency_limits(limit=200)}
                found = limits.get(f"assay:provider={provider}")
                return None if found is None else found.active_slots

            wait_until(lambda: marker.exists() and held() == 1, "the run holds its provider's slot", 120)
            os.kill(run.pid, signal.SIGKILL)
            run.communicate(timeout=60)
            # Freed by the lease guard (the server alone: 60 s of lease, then its repossessor's next look).
            wait_until(lambda: held() == 0, "the killed run's lease guard gave its slot back", within_s=45)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()

    quick = tmp_path / "quick.md"
    quick.write_text(
        f"---\nlimits: {{provider: 1}}\n---\n\n| Name | provider | Command |\n|---|---|---|\n"
        f"| ok | {provider} | `true` |\n"
    )
    done = run_cli([str(quick), "--out", str(tmp_path / "b")], cwd=tmp_path, env=cli_env(home))
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert f"Prefect flow run: {local.ui_url}/runs/flow-run/" in done.stdout

    # Someone else's client: PREFECT_API_URL without the secret is one line, with it the run goes through.
    elsewhere = cli_env(tmp_path / "elsewhere", PREFECT_API_URL=local.api_url)
    refused_run = run_cli([str(quick), "--out", str(tmp_path / "c")], cwd=tmp_path, env=elsewhere)
    assert refused_run.returncode == 2
    assert refused_run.stderr == (
        f"error: the Prefect API at {local.api_url} (PREFECT_API_URL) requires credentials (HTTP 401): set "
        "PREFECT_API_AUTH_STRING to its secret (`python deployments/postgres_server.py start` prints how)\n"
    )
    wrong = run_cli([str(quick), "--out", str(tmp_path / "c")], cwd=tmp_path,
                    env={**elsewhere, "PREFECT_API_AUTH_STRING": "assay:wrong"})  # fmt: skip
    assert wrong.returncode == 2 and "refused the credentials in PREFECT_API_AUTH_STRING (HTTP 401)" in wrong.stderr
    passed = run_cli([str(quick), "--out", str(tmp_path / "c")], cwd=tmp_path,
                     env={**elsewhere, "PREFECT_API_AUTH_STRING": secret})  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr

    status = run_cli(["server", "status"], cwd=tmp_path, env=cli_env(home))
    assert f", API authentication on (the secret: {secret_path(home)}), answering\n" in status.stdout

    # deployments/nightly.py serves on the home's server with the secret, and so do the runs it starts.
    served = subprocess.Popen(
        [sys.executable, str(REPO / "deployments" / "nightly.py"), str(quick), "--name", "auth-serve",
         "--out", str(tmp_path / "served")],
        cwd=tmp_path, env={**env, "PREFECT_RUNNER_POLL_FREQUENCY": "1"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        with temporary_settings(updates=authenticated), get_client(sync_client=True) as client:
            wait_until(lambda: served_deployment(client), "nightly.py serves its deployment", within_s=240)
            deployment = client.read_deployment_by_name("assay-matrix/auth-serve")
            flow_run = client.create_flow_run_from_deployment(deployment.id)

            def ended() -> bool:
                state = client.read_flow_run(flow_run.id).state
                return state is not None and state.is_final()

            wait_until(ended, "the served run ends", within_s=300)
            finished = client.read_flow_run(flow_run.id).state
            assert finished is not None and finished.name == "Completed", finished
            client.delete_deployment(deployment.id)  # a home with deployments is never idle
    finally:
        os.killpg(served.pid, signal.SIGTERM)
        try:
            served.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(served.pid, signal.SIGKILL)
            served.communicate()

    # The idle stop asks the server with the secret too: without it, every answer is 401, never "idle".
    companion = start_companion(home, {"ASSAY_SERVER_IDLE_MINUTES": "0.05"})
    assert companion is not None
    wait_until(lambda: server.find(home) is None, "the idle stop stopped the unused server", within_s=120)
    assert gone_soon(companion)


def served_deployment(client: Any) -> bool:
    try:
        client.read_deployment_by_name("assay-matrix/auth-serve")
    except Exception:  # not yet registered
        return False
    return True


def test_auth_cannot_be_switched_on_under_a_running_server_and_prefects_stop_is_a_stop(
    home: Path, tmp_path: Path
) -> None:
    local = server.ensure_started(home)
    done = run_cli(["server", "start", "--auth"], cwd=tmp_path, env=cli_env(home))
    assert done.returncode == 2
    assert done.stderr == (
        f"error: the local Prefect server of {home} (pid {local.pid}) runs without API authentication: "
        "`assay server stop` first, then `assay server start --auth`\n"
    )
    assert read_secret(home) is None and not secret_path(home).exists()

    # Prefect's own `prefect server stop` (SIGTERM, its PID file removed): the supervisor lets it go.
    watcher = supervisor.supervisor_pid(home)
    env = {**os.environ, "PREFECT_HOME": str(home)}
    env.pop("PREFECT_API_URL", None)
    stopped = subprocess.run([sys.executable, "-m", "prefect", "server", "stop"], env=env, capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert watcher is not None and gone_soon(local.pid)
    wait_until(lambda: supervisor.supervisor_pid(home) is None, "the supervisor exits, the server not restarted")
    assert server.find(home) is None
    said = supervisor.log_of(home).path.read_text()
    assert f"the Prefect server (pid {local.pid}) was stopped from outside (" in said or \
        f"the Prefect server (pid {local.pid}) was stopped on purpose (" in said  # fmt: skip
    assert " died: " not in said


def test_a_server_that_cannot_start_is_one_line_with_its_logs_last_words(tmp_path: Path) -> None:
    home = (tmp_path / "home").resolve()
    home.mkdir()
    (home / "prefect.db").write_text("not a database\n" * 100)
    done = run_cli(["server", "start"], cwd=tmp_path, env=cli_env(home, ASSAY_SERVER_IDLE_MINUTES="0"), timeout=300)
    assert done.returncode == 2, done.stdout + done.stderr
    *progress, line = done.stderr.splitlines()  # "assay: starting a local Prefect server ...", then the error
    assert all(said.startswith("assay: ") for said in progress), done.stderr
    log = supervisor.log_of(home)
    assert line.startswith("error: the local Prefect server (pid ") and " exited while starting: its log says '" in line
    assert line.endswith(f"' ({log.path})") and "file is not a database" in line, line
    assert supervisor.supervisor_pid(home) is None and server.find(home) is None
    assert "exited while starting (exit status " in log.path.read_text() and "not restarted" in log.path.read_text()
