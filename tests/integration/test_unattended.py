"""A nightly nobody watches: a served schedule and workers that outlive server outages, and runs whose
process is gone marked Crashed by the server's automation, their deployment's slot free again.

Everything is real: PostgreSQL, Prefect's server (stopped and started again by the tests, as an outage
would), ``deployments/nightly.py``, ``prefect worker start``; states are read through the client.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.settings import temporary_settings
from prefect.states import Scheduled

from tests.integration.team_server import TeamServer, team_server
from tests.integration.test_deployments import NIGHTLY, QUICK, stop_group
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
