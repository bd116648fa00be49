"""Prefect's global concurrency limits as a shared nightly server sees them: a killed run's slots come
back at once (its lease guard), and a sample that waits for a slot says what for and keeps to its row's
time budget. Everything runs on the session's real server through the command line.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client

from tests.integration.conftest import WIDE, run_cli
from tests.integration.test_throughput import start_run
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("prefect_backend")


def holding(tmp_path: Path, provider: str, marker: Path) -> Path:
    """A row of ``provider`` (cap 1) whose one sample marks its start, then sleeps."""
    fixture = tmp_path / "hold.md"
    fixture.write_text(
        f"---\nlimits: {{provider: 1}}\ntimeout: 5m\n---\n\n| Name | provider | Command |\n|---|---|---|\n"
        f"| hold | {provider} | `bash -c 'touch {marker}; sleep 120'` |\n",
        encoding="utf-8",
    )
    return fixture


def quick(tmp_path: Path, provider: str, timeout: str = "2m") -> Path:
    fixture = tmp_path / "quick.md"
    fixture.write_text(
        f"---\nlimits: {{provider: 1}}\ntimeout: {timeout}\n---\n\n| Name | provider | Command |\n|---|---|---|\n"
        f"| quick | {provider} | `true` |\n",
        encoding="utf-8",
    )
    return fixture


@pytest.fixture
def client() -> Iterator[SyncPrefectClient]:
    with get_client(sync_client=True) as found:
        yield found


def in_use(client: SyncPrefectClient, provider: str) -> int | None:
    limits = {gcl.name: gcl for gcl in client.read_global_concurrency_limits(limit=200)}
    found = limits.get(f"assay:provider={provider}")
    return None if found is None else found.active_slots


def test_a_killed_runs_slots_come_back_and_the_next_run_starts(tmp_path: Path, client: SyncPrefectClient) -> None:
    provider, marker = f"killed-{os.getpid()}", tmp_path / "started"
    first = start_run([str(holding(tmp_path, provider, marker)), "--out", str(tmp_path / "a")], tmp_path)
    try:
        wait_until(lambda: marker.exists() and in_use(client, provider) == 1, "the first run holds the slot")
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=60)
        # The server alone would free it when the lease expires (60 s at the least, then its repossessor's
        # next look): the lease guard gives it back within seconds (it imports Prefect only when the run
        # dies: several seconds on a busy machine). Polled for up to 45 s, still far inside the 75 s.
        wait_until(lambda: in_use(client, provider) == 0, "the killed run's slot is free within 45 s", within_s=45)
    finally:
        if first.poll() is None:
            first.kill()
    second = run_cli([str(quick(tmp_path, provider)), "--out", str(tmp_path / "b")], tmp_path, WIDE, timeout=120)
    assert second.returncode == 0, second.stdout + second.stderr
    assert second.stderr == ""  # a run under global limits prints nothing of Prefect's own


def test_a_sample_waiting_for_a_slot_says_so_and_keeps_its_rows_budget(
    tmp_path: Path, client: SyncPrefectClient
) -> None:
    provider, marker = f"held-{os.getpid()}", tmp_path / "started"
    holder: Any = start_run([str(holding(tmp_path, provider, marker)), "--out", str(tmp_path / "a")], tmp_path)
    try:
        wait_until(lambda: marker.exists() and in_use(client, provider) == 1, "the first run holds the slot")
        waiting = run_cli(
            [str(quick(tmp_path, provider, "3s")), "--out", str(tmp_path / "b"), "--json", str(tmp_path / "b.json"),
             "--progress", "plain", "--progress-interval", "0.5"],
            tmp_path, WIDE, timeout=120,
        )  # fmt: skip
    finally:
        os.killpg(holder.pid, signal.SIGTERM)
        holder.communicate(timeout=60)
    assert waiting.returncode == 2, waiting.stdout + waiting.stderr
    assert f"waiting for provider={provider} (1 of 1 held)" in waiting.stderr  # the progress line
    [row] = json.loads((tmp_path / "b.json").read_text())["fixtures"][0]["rows"]
    assert (row["status"], row["stopped"], row.get("samples", [])) == ("ERR", "timeout", [])
    assert row["error"] == (
        f"time budget 3s ran out waiting for a slot of provider={provider} (Prefect's global concurrency limits); "
        "sample 0 never started"
    )


def test_the_lease_guard_retries_only_a_server_that_did_not_answer(client: SyncPrefectClient) -> None:
    from uuid import uuid4

    from prefect.settings import PREFECT_API_URL, temporary_settings

    from fixtures_core.execution.daemons import free_port
    from flows.server.lease_guard import _answered

    assert _answered(client, uuid4())  # an unknown lease (expired, or given back by the run): answered, done
    unreachable = {PREFECT_API_URL: f"http://127.0.0.1:{free_port()}/api"}
    with temporary_settings(unreachable), get_client(sync_client=True) as nowhere:
        assert not _answered(nowhere, uuid4())  # nothing listening: worth another try
