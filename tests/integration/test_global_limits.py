"""Prefect's global concurrency limits as a shared nightly server sees them: a killed run's slots come
back at once (its lease guard), a sample that waits for a slot says what for and keeps to its row's
time budget, runs that create one limit at once all go on with that one limit, and two runs sharing a
cap take turns. Everything runs on the session's real server, through the command line where a run is.
"""

from __future__ import annotations

import contextvars
import json
import os
import shlex
import signal
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
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


def create_at_once(name: str, creators: int = 6) -> list[Any]:
    """``creators`` runs' limits, each on a thread with its own client, all creating ``name`` at the same moment."""
    from fixtures_core.spec import Limit
    from flows.flow.concurrency import GlobalLimits

    property_, value = name.removeprefix("assay:").split("=", 1)
    together = threading.Barrier(creators)

    def create() -> Any:
        together.wait(timeout=60)
        limits = GlobalLimits([Limit(property_, concurrency=2)], [(property_, value)])
        limits.close()
        with get_client(sync_client=True) as client:
            return client.read_global_concurrency_limit_by_name(name)

    with ThreadPoolExecutor(creators) as pool:  # each thread in this test's context: its Prefect settings
        futures = [pool.submit(contextvars.copy_context().run, create) for _ in range(creators)]
        return [future.result(timeout=120) for future in futures]


def test_six_runs_creating_one_limit_at_once_all_go_on_with_that_one_limit(client: SyncPrefectClient) -> None:
    name = f"assay:provider=race-{uuid.uuid4().hex[:8]}"
    found = create_at_once(name)  # none raises: a conflict (409, or the 500 of a server that failed on it) is read back
    assert len({limit.id for limit in found}) == 1 and {limit.limit for limit in found} == {2}
    named = [gcl for gcl in client.read_global_concurrency_limits(limit=200) if gcl.name == name]
    assert len(named) == 1
    assert client.api_healthcheck() is None  # the server answers after the race


def taking_turns(folder: Path, provider: str, log: Path, who: str, other: str) -> Path:
    """Run ``who``'s row of ``provider`` (cap 1): 8 samples, each logging its start and end. Its skip command
    (run once the row has its own run's slot, before it asks for the provider's) says the run is ready, and its
    first sample waits (bounded) for the other run to be ready too: from then on, both want the one slot."""
    folder.mkdir()
    here, ready = shlex.quote(str(log)), shlex.quote(str(folder.parent / "ready-"))
    wait = f"for i in $(seq 600); do [ -e {ready}{other} ] && break; sleep 0.1; done"
    body = f"echo start {who} >> {here}; [ $ASSAY_SAMPLE = 0 ] && {{ {wait}; }}; sleep 0.3; echo end {who} >> {here}"
    fixture = folder / "turns.md"
    fixture.write_text(
        f"---\nlimits: {{provider: 1}}\nrepeat: 8\ntimeout: 5m\n---\n\n"
        f"| Name | provider | skip | Command |\n|---|---|---|---|\n"
        f"| turns {who} | {provider} | `touch {ready}{who}; exit 1` | `bash -c {shlex.quote(body)}` |\n",
        encoding="utf-8",
    )
    return fixture


def test_two_runs_sharing_a_cap_take_turns(tmp_path: Path) -> None:
    """A run that gives a slot back does not take it again at once while another run's sample waits for it:
    that one would otherwise wait for every sample of the first (its row's budget running out meanwhile)."""
    provider, log = f"turns-{os.getpid()}", tmp_path / "log"
    fixtures = {who: taking_turns(tmp_path / who, provider, log, who, other) for who, other in (("a", "b"), ("b", "a"))}
    runs = [start_run([str(path), "--out", str(path.parent / "state")], tmp_path) for path in fixtures.values()]
    try:
        done = [run.communicate(timeout=300) for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                os.killpg(run.pid, signal.SIGKILL)
    for run, (out, err) in zip(runs, done, strict=True):
        assert run.returncode == 0, out + err
    events = [tuple(line.split()) for line in log.read_text().splitlines()]
    in_flight = 0
    for event, _who in events:  # the cap held across the runs: never two samples at once
        in_flight += 1 if event == "start" else -1
        assert in_flight <= 1, events
    starts = [who for event, who in events if event == "start"]
    first, other = starts[0], "b" if starts[0] == "a" else "a"
    last_of_first = len(starts) - 1 - starts[::-1].index(first)
    # The other run had a turn before the first one was done with its 8 samples (both wanted the slot throughout).
    assert other in starts[:last_of_first], starts
