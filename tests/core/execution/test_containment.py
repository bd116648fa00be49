"""Containment: every process a sample starts dies with the sample, and with assay.

Each escape a daemon can try (setsid, a double fork, its own process group,
``nohup &``) is run in both modes: with a cgroup per sample (where this
machine allows one) and in the fallback (process group, subreaper, token).
Processes are found by a marker in their environment (``ASSAY_TEST_MARK``)
or by pid files; nothing here asserts on how long something took.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.execution.cgroups import cgroup_base
from fixtures_core.execution.containment import Containment, is_subreaper
from fixtures_core.execution.sampling import execute
from tests.integration.conftest import REPO
from tests.processes import gone_soon, processes_with

CGROUPS = cgroup_base() is not None
MODES = [
    pytest.param(True, id="cgroup", marks=pytest.mark.skipif(not CGROUPS, reason="no writable cgroup v2 here")),
    pytest.param(False, id="fallback"),
]

# Ways a command leaves its sample's process group or session, each leaving `sleep 60` behind.
ESCAPES = {
    "setsid": "setsid sleep 60 >/dev/null 2>&1 < /dev/null &",
    "double fork": "( ( sleep 60 >/dev/null 2>&1 & ) & )",
    "own process group": "set -m; sleep 60 >/dev/null 2>&1 &",
    "nohup &": "nohup sleep 60 >/dev/null 2>&1 &",
    "setsid double fork holding stdout": "( setsid sh -c 'sleep 60 & exit 0' & )",
}


def soon(seconds: float = 20.0) -> float:
    return time.monotonic() + seconds


def bash(script: str) -> list[str]:
    return ["bash", "-c", script]


def wait_until(condition: object, attempts: int = 500) -> bool:
    """Poll a condition (bounded; not a timing assertion)."""
    for _ in range(attempts):
        if callable(condition) and condition():
            return True
        time.sleep(0.02)
    return False


def zombie_children() -> list[int]:
    return [p for p in procfs.children(os.getpid()) if (s := procfs.stat(p)) is not None and s.zombie]


# --- escapes at the end of a sample ---------------------------------------------------------


@pytest.mark.parametrize("cgroups", MODES)
@pytest.mark.parametrize("escape", list(ESCAPES))
def test_a_daemon_dies_with_its_sample(escape: str, cgroups: bool, marker: str) -> None:
    with Containment(use_cgroups=cgroups) as containment:
        result = execute(bash(f"{ESCAPES[escape]}\necho started"), deadline=soon(), containment=containment)
        assert result.exit_code == 0 and result.stdout == b"started\n"
        assert result.timed_out is False
        assert wait_until(lambda: processes_with(marker) == []), f"{escape}: {processes_with(marker)} outlived it"


@pytest.mark.parametrize("cgroups", MODES)
def test_a_timed_out_sample_takes_its_daemons_along(cgroups: bool, marker: str) -> None:
    script = f"{ESCAPES['double fork']}\n{ESCAPES['setsid']}\nsleep 60"
    with Containment(use_cgroups=cgroups) as containment:
        result = execute(bash(script), deadline=soon(1), containment=containment)
    assert result.timed_out is True
    assert processes_with(marker) == []


@pytest.mark.skipif(not CGROUPS, reason="no writable cgroup v2 here")
def test_only_a_cgroup_catches_a_daemon_that_clears_its_environment(tmp_path: Path) -> None:
    # setsid + env -i: no group, no session, no token; the documented limit of the fallback.
    pid_file = tmp_path / "daemon.pid"
    script = f"setsid env -i sh -c 'echo $$ > {shlex.quote(str(pid_file))}; exec sleep 60' >/dev/null 2>&1 & sleep 0.2"
    with Containment(use_cgroups=True) as containment:
        result = execute(bash(script), deadline=soon(), containment=containment)
    assert result.exit_code == 0
    assert gone_soon(int(pid_file.read_text()))


@pytest.mark.parametrize("cgroups", MODES)
def test_orphans_adopted_by_assay_are_reaped(cgroups: bool, marker: str) -> None:
    before = set(zombie_children())
    with Containment(use_cgroups=cgroups) as containment:
        execute(
            bash(f"{ESCAPES['double fork']}\n{ESCAPES['setsid']}\nexit 0"), deadline=soon(), containment=containment
        )
        assert is_subreaper(), "assay adopts the orphans of its samples while a run is open"
    assert set(zombie_children()) - before == set()
    assert not is_subreaper(), "the setting is given back when the last run closes"


# --- graceful stop ----------------------------------------------------------------------------

# Writes its "transcript" only when told to stop: the grace is what lets it.
FLUSHING = """
import signal, sys, time
def flush(*_):
    open(sys.argv[1], "w").write("transcript flushed")
    sys.exit(0)
signal.signal(signal.SIGTERM, flush)
print("ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("cgroups", MODES)
def test_a_stopped_sample_gets_sigterm_and_time_to_flush(tmp_path: Path, cgroups: bool, marker: str) -> None:
    transcript = tmp_path / "transcript.txt"
    with Containment(use_cgroups=cgroups) as containment:
        result = execute([sys.executable, "-c", FLUSHING, str(transcript)], deadline=soon(2), containment=containment)
    assert result.timed_out is True
    assert transcript.read_text() == "transcript flushed"


def test_a_sample_ignoring_sigterm_is_killed_after_the_grace(marker: str) -> None:
    with Containment(grace_s=0.5) as containment:
        result = execute(bash("trap '' TERM; sleep 60 & wait"), deadline=soon(1), containment=containment)
    assert result.timed_out is True
    assert processes_with(marker) == []


def test_cancel_at_once_skips_the_grace(tmp_path: Path, marker: str) -> None:
    transcript = tmp_path / "transcript.txt"
    box: dict[str, object] = {}
    with Containment(grace_s=30) as containment:
        argv = [sys.executable, "-u", "-c", FLUSHING, str(transcript)]
        worker = threading.Thread(
            target=lambda: box.update(r=execute(argv, deadline=soon(60), containment=containment))
        )
        worker.start()
        assert wait_until(lambda: processes_with(marker) != [])
        time.sleep(0.3)  # let it install its handler (the test is about what comes next, not timing)
        containment.cancel(at_once=True)
        worker.join(timeout=20)
    assert not worker.is_alive()
    assert getattr(box["r"], "cancelled", False) is True
    assert not transcript.exists(), "a second interrupt sends SIGKILL without a grace"
    assert processes_with(marker) == []


# --- the parent-death signal and the spawner thread -------------------------------------------


def test_a_sample_started_from_a_short_lived_thread_outlives_that_thread(marker: str) -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that forked exits: the spawner thread does the forking.
    with Containment() as containment:
        box: dict[str, object] = {}
        starter = threading.Thread(target=lambda: box.update(s=containment.start(bash("sleep 0.5; echo alive"))))
        starter.start()
        starter.join()
        sample = box["s"]
        assert not starter.is_alive()
        out, _err = sample.popen.communicate(timeout=20)  # type: ignore[attr-defined]
        sample.finish()  # type: ignore[attr-defined]
    assert out == b"alive\n"
    assert sample.popen.returncode == 0  # type: ignore[attr-defined]


# A stand-in for assay: starts samples that daemonise, says ready, waits to be killed.
HOST = """
import os, sys, threading, time
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import execute
cgroups, watchdog, ready = sys.argv[1] == "1", sys.argv[2] == "1", sys.argv[3]
containment = Containment(use_cgroups=cgroups, watchdog=watchdog)
scripts = [
    "setsid sleep 60 >/dev/null 2>&1 & ( ( sleep 60 & ) & ) ; nohup sleep 60 >/dev/null 2>&1 & sleep 60",
    "set -m; sleep 60 & sleep 60",
]
for script in scripts:
    threading.Thread(target=execute, args=(["bash", "-c", script],), kwargs={
        "deadline": time.monotonic() + 120, "containment": containment}, daemon=True).start()
time.sleep(1.0)
open(ready, "w").write(str(os.getpid()))
time.sleep(120)
"""


def start_host(tmp_path: Path, marker: str, cgroups: bool, watchdog: bool) -> subprocess.Popen[bytes]:
    ready = tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = ["1" if cgroups else "0", "1" if watchdog else "0", str(ready)]
    host = subprocess.Popen([sys.executable, "-c", HOST, *args], env=env, cwd=tmp_path)
    assert wait_until(lambda: ready.exists() or host.poll() is not None, attempts=1500), "the host never got ready"
    assert host.poll() is None
    assert len(processes_with(marker)) >= 7, "the samples and their daemons run"
    return host


@pytest.mark.parametrize("cgroups", MODES)
def test_sigkill_of_assay_leaves_no_process_of_its_samples(tmp_path: Path, cgroups: bool, marker: str) -> None:
    host = start_host(tmp_path, marker, cgroups, watchdog=True)
    host.kill()
    host.wait()
    left = processes_with(marker)
    assert wait_until(lambda: processes_with(marker) == [], attempts=100), f"still alive 2 s after: {left}"


def test_without_a_watchdog_the_leaders_still_get_their_parent_death_signal(tmp_path: Path, marker: str) -> None:
    from fixtures_core.execution.containment import _setpriv

    if _setpriv() is None:
        pytest.skip("util-linux setpriv with --pdeathsig is not installed")
    host = start_host(tmp_path, marker, cgroups=False, watchdog=False)
    leaders = [p for p in procfs.children(host.pid) if procfs.environ_has(p, b"ASSAY_TEST_MARK=" + marker.encode())]
    leaders = [p for p in leaders if (s := procfs.stat(p)) is not None and s.session == p]
    assert len(leaders) == 2
    host.kill()
    host.wait()
    assert all(gone_soon(pid) for pid in leaders)
