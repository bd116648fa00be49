"""A nightly nobody watches: a served schedule and workers that outlive server outages, and runs whose
process is gone marked Crashed by the server's automation, their deployment's slot free again.

Everything is real: PostgreSQL, Prefect's server (stopped and started again by the tests, as an outage
would), ``deployments/nightly.py``, ``prefect worker start``; states are read through the client.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun
from prefect.settings import temporary_settings
from prefect.states import Pending, Scheduled

from fixtures_core.execution import procfs
from flows.server import silent_runs
from tests.integration.conftest import REPO
from tests.integration.team_server import TeamServer, team_server
from tests.integration.test_deployments import NIGHTLY, QUICK, slow_fixture, stop_group
from tests.polling import until, wait_until

LOST = "nightly: lost the Prefect API at "
REGAINED = "answers again (lost for "


@pytest.fixture(scope="module")
def team() -> Iterator[TeamServer]:
    with team_server() as server:
        yield server


@contextlib.contextmanager
def client_of(team: TeamServer) -> Iterator[SyncPrefectClient]:
    with temporary_settings(updates={"api.url": team.api_url}), get_client(sync_client=True) as client:
        yield client


def lines_of(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def final_state(team: TeamServer, flow_run_id: UUID) -> Any:
    with client_of(team) as client:
        return client.read_flow_run(flow_run_id).state


def is_final(team: TeamServer, flow_run_id: UUID) -> bool:
    with contextlib.suppress(Exception):
        state = final_state(team, flow_run_id)
        return state is not None and state.is_final()
    return False


def test_serve_keeps_serving_through_an_outage_and_runs_what_came_due(team: TeamServer, tmp_path: Path) -> None:
    """The server goes away for longer than Prefect's runner tolerates (three failed polls: here at once, as
    the client does not retry); nightly.py says so once, waits, says once that it is back, and runs the run
    that came due meanwhile."""
    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    stderr = tmp_path / "serve.err"
    env = team.env(tmp_path / "home", PREFECT_RUNNER_POLL_FREQUENCY="1", PREFECT_CLIENT_MAX_RETRIES="0")
    with stderr.open("w") as errors:
        served = subprocess.Popen(
            [sys.executable, str(NIGHTLY), str(fixture), "--name", "outage", "--out", str(tmp_path / "state")],
            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
        )  # fmt: skip
    try:
        with client_of(team) as client:
            wait_until(lambda: _deployment(client, "assay-matrix/outage"), "nightly.py registered its deployment")
            deployment = _deployment(client, "assay-matrix/outage")
            assert deployment is not None
            # Comes due while the server is down: later than the runner looks ahead (10 s) once it is stopped.
            due = datetime.now(UTC) + timedelta(seconds=30)
            waiting = client.create_flow_run_from_deployment(deployment.id, state=Scheduled(scheduled_time=due))
        team.stop()
        assert datetime.now(UTC) < due - timedelta(seconds=10), "the server took too long to stop"
        wait_until(lambda: any(line.startswith(LOST) for line in lines_of(stderr)), "nightly.py saw the outage", 120)
        wait_until(lambda: datetime.now(UTC) > due + timedelta(seconds=2), "the run came due during the outage")
        assert served.poll() is None, stderr.read_text()
        team.start()
        if not until(lambda: is_final(team, waiting.id), 180, every_s=0.5):
            state = final_state(team, waiting.id)
            raise AssertionError(f"the run that came due never ended: {state}; {stderr.read_text()}")
        assert served.poll() is None, stderr.read_text()
    finally:
        stop_group(served)
    state = final_state(team, waiting.id)
    assert state.name == "Completed", (state.name, state.message)
    said = lines_of(stderr)
    assert len([line for line in said if line.startswith(LOST)]) == 1, said  # said once, not once a poll
    assert len([line for line in said if REGAINED in line]) == 1, said
    assert "Failed the last" not in stderr.read_text() and "Traceback" not in stderr.read_text()
    assert len(list((tmp_path / "state" / "runs").glob("*/run.json"))) == 1


def _deployment(client: SyncPrefectClient, name: str) -> Any:
    with contextlib.suppress(Exception):
        return client.read_deployment_by_name(name)
    return None


def deploy_on_the_locked_pool(team: TeamServer, env: dict[str, str], state_dir: Path) -> None:
    """The README's setup: the pool from process-pool.json, prefect.yaml's deployment allowing ``state_dir``."""

    def prefect(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "prefect", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=180
        )
        assert done.returncode == 0, done.stdout + done.stderr

    with client_of(team) as client:
        pools = {pool.name for pool in client.read_work_pools()}
    if "assay" not in pools:
        prefect(
            "work-pool", "create", "assay", "--type", "process", "--base-job-template", "deployments/process-pool.json"
        )
    allowed = json.dumps({"env": {"ASSAY_ALLOWED_ROOTS": str(state_dir)}})
    prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all", "--job-variable", allowed)


def start_worker(env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "assay"], cwd=cwd, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip


def kill_with_its_runs(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL a worker and every process below it at once: nobody is left to report its runs."""
    below = procfs.descendants(process.pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait(timeout=20)


def test_a_run_that_died_silently_is_crashed_by_the_automation_and_frees_the_nightly_slot(
    team: TeamServer, tmp_path: Path
) -> None:
    """A deployment run killed with its worker (nobody reports it), and a run a worker claimed (Pending) and
    never started, while the server is down past the automation's window: once the server is back the
    automation marks both Crashed with the reason, the deployment's only slot is free, and the nightly run
    that waited for it runs."""
    state_dir = tmp_path / "state"
    env = team.env(tmp_path / "home", PREFECT_WORKER_QUERY_SECONDS="1", PREFECT_FLOWS_HEARTBEAT_FREQUENCY="30")
    deploy_on_the_locked_pool(team, env, state_dir)
    done = subprocess.run([sys.executable, "-m", "flows.server.silent_runs"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = f"automation {silent_runs.NAME!r} created on {team.api_url}: "
    assert done.stdout == said + "a deployment run silent for 90 s is marked Crashed\n"  # three heartbeats of 30 s
    slow, started = slow_fixture(state_dir)
    good = {"paths": ["examples/matrix.md"], "out": str(state_dir), "label": "unattended"}
    worker = start_worker(env, tmp_path)
    try:
        with client_of(team) as client:
            deployment = client.read_deployment_by_name("assay-matrix/nightly")
            killed = client.create_flow_run_from_deployment(deployment.id, parameters={**good, "paths": [str(slow)]})
            wait_until(started.exists, "the slow run's sample started", 180)
            [automation] = client.read_automations_by_name(silent_runs.NAME)  # the run kept it as it was
            window = automation.trigger.within.total_seconds()  # type: ignore[union-attr]
            assert window == 90
            waiting = client.create_flow_run_from_deployment(deployment.id, parameters=good)
            claimed = _claimed_and_never_started(client)
    finally:
        kill_with_its_runs(worker)
    gone_at = datetime.now(UTC)
    team.stop()
    wait_until(lambda: datetime.now(UTC) > gone_at + timedelta(seconds=window + 5), "the window ran out", window + 30)
    team.start()
    worker = start_worker(env, tmp_path)
    try:
        ended = until(lambda: all(is_final(team, run.id) for run in (killed, claimed, waiting)), 240, every_s=1)
        assert ended, [(name, final_state(team, run.id)) for name, run in (("killed", killed), ("claimed", claimed),
                                                                           ("waiting", waiting))]  # fmt: skip
    finally:
        stop_group(worker)
    message = silent_runs.crash_message(90)
    for flow_run_id in (killed.id, claimed.id):
        state = final_state(team, flow_run_id)
        assert (state.name, state.message) == ("Crashed", message)
    state = final_state(team, waiting.id)
    assert state.name == "Failed" and state.message.startswith("assay verdict FAIL"), state  # it ran: an answer
    with client_of(team) as client:
        limit = client.read_deployment_by_name("assay-matrix/nightly").global_concurrency_limit
    assert limit is not None and limit.active_slots == 0, limit


def _claimed_and_never_started(client: SyncPrefectClient) -> FlowRun:
    """A flow run of an ``assay-matrix`` deployment that a worker set Pending and never started."""
    flow_id = client.create_flow_from_name("assay-matrix")
    deployment_id = client.create_deployment(
        flow_id=flow_id, name="claimed", entrypoint="flows/flow/matrix.py:matrix_flow"
    )
    flow_run = client.create_flow_run_from_deployment(deployment_id)
    assert client.set_flow_run_state(flow_run.id, Pending()).state is not None
    return flow_run
