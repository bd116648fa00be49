"""Which flow runs have lost their process: only this host's, and a reused pid is not the owner."""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from datetime import UTC, datetime, timedelta

from prefect.client.schemas.objects import FlowRun

from flows.server.abandoned import is_gone
from flows.server.owners import OWNER_LABEL, Owner

HOST = socket.gethostname()


def flow_run(owner: str | None, started: datetime | None = None, label: str | None = None) -> FlowRun:
    return FlowRun(
        id=uuid.uuid4(), flow_id=uuid.uuid4(), name="r", infrastructure_pid=owner,
        start_time=started or datetime.now(UTC), labels={OWNER_LABEL: label} if label else {},
    )  # fmt: skip


def test_a_run_whose_process_exited_is_gone() -> None:
    exited = subprocess.Popen(["true"])
    exited.wait()
    assert is_gone(flow_run(f"{HOST}:{exited.pid}"), HOST)


def test_a_live_owner_another_host_or_no_owner_is_not_gone() -> None:
    assert not is_gone(flow_run(f"{HOST}:{os.getpid()}"), HOST)  # this process began before "now"
    assert not is_gone(flow_run(f"elsewhere:{os.getpid()}"), HOST)
    assert not is_gone(flow_run(None), HOST)
    assert not is_gone(flow_run("not-a-pid"), HOST)


def test_a_pid_reused_by_a_process_started_after_the_run_is_not_its_owner() -> None:
    before_this_process = datetime.now(UTC) - timedelta(days=3650)
    assert is_gone(flow_run(f"{HOST}:{os.getpid()}", before_this_process), HOST)


def test_owner_reads_and_writes_host_and_pid_as_prefect_workers_do() -> None:
    assert Owner.parse("a:b:12") == Owner("a:b", 12) and str(Owner("h", 3)) == "h:3"
    assert Owner.here() == Owner(HOST, os.getpid())


def test_a_worker_run_is_judged_by_the_owner_its_process_labelled_never_by_the_workers_bare_pid() -> None:
    exited = subprocess.Popen(["true"])
    exited.wait()
    assert not is_gone(flow_run(str(exited.pid)), HOST), "a bare pid names no host: never judged"
    assert is_gone(flow_run(str(os.getpid()), label=f"{HOST}:{exited.pid}"), HOST)
    assert not is_gone(flow_run(str(exited.pid), label=f"{HOST}:{os.getpid()}"), HOST)
