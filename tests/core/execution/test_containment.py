"""Containment: every process a sample starts dies with the sample, and with assay.

Each escape a daemon can try (setsid, a double fork, its own process group,
``nohup &``) is run in both modes: with a cgroup per sample (where this
machine allows one) and in the fallback (process group, subreaper, token).
Processes are found by a marker in their environment (``ASSAY_TEST_MARK``)
or by pid files; nothing here asserts on how long something took. A sample
whose behaviour matters once it has set something up (a signal handler, its
daemons) writes a ready file after that, and the test acts on the file, not
after a pause.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.execution.cgroups import cgroup_base
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import Execution, execute
from tests.integration.conftest import REPO
from tests.polling import until
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


def zombie_children() -> list[int]:
    return [p for p in procfs.children(os.getpid()) if (s := procfs.stat(p)) is not None and s.zombie]


def timed_out_once_ready(
    start: Callable[[float], Execution], ready: Path, budgets: Sequence[float] = (2, 10, 60)
) -> Execution:
    """Run ``start(deadline)`` until its sample got ready (wrote ``ready``) before its deadline passed.

    A sample stopped before it got ready proves nothing either way, so it is
    run again with a longer budget: a busy machine costs time, never a
    verdict. The last budget is the generous bound that fails the test.
    """
    for budget in budgets:
        ready.unlink(missing_ok=True)
        result = start(soon(budget))
        if ready.exists():
            return result
    pytest.fail(f"the sample was never ready within {budgets[-1]} s")


def cancelled_once_ready(argv: list[str], ready: Path, containment: Containment, at_once: bool) -> Execution:
    """Run ``argv`` on a thread, cancel the run once the sample wrote ``ready``, and return how it ended."""
    box: dict[str, Execution] = {}
    worker = threading.Thread(
        target=lambda: box.update(result=execute(argv, deadline=soon(120), containment=containment))
    )
    worker.start()
    assert until(lambda: ready.exists() or not worker.is_alive(), within_s=60), "the sample never got ready"
    containment.cancel(at_once=at_once)
    worker.join(timeout=60)
    assert not worker.is_alive() and "result" in box
    return box["result"]


# --- escapes at the end of a sample ---------------------------------------------------------


@pytest.mark.parametrize("cgroups", MODES)
@pytest.mark.parametrize("escape", list(ESCAPES))
def test_a_daemon_dies_with_its_sample(escape: str, cgroups: bool, marker: str) -> None:
    with Containment(use_cgroups=cgroups) as containment:
        result = execute(bash(f"{ESCAPES[escape]}\necho started"), deadline=soon(), containment=containment)
        assert result.exit_code == 0 and result.stdout == b"started\n"
        assert result.timed_out is False
        assert until(lambda: processes_with(marker) == []), f"{escape}: {processes_with(marker)} outlived it"


@pytest.mark.parametrize("cgroups", MODES)
def test_a_timed_out_sample_takes_its_daemons_along(tmp_path: Path, cgroups: bool, marker: str) -> None:
    ready = tmp_path / "ready"
    script = f"{ESCAPES['double fork']}\n{ESCAPES['setsid']}\ntouch {shlex.quote(str(ready))}\nsleep 60"

    def start(deadline: float) -> Execution:
        with Containment(use_cgroups=cgroups) as containment:
            return execute(bash(script), deadline=deadline, containment=containment)

    result = timed_out_once_ready(start, ready, budgets=(1, 10, 60))
    assert result.timed_out is True
    assert processes_with(marker) == []


@pytest.mark.skipif(not CGROUPS, reason="no writable cgroup v2 here")
def test_only_a_cgroup_catches_a_daemon_that_clears_its_environment(tmp_path: Path) -> None:
    # setsid + env -i: no group, no session, no token; the documented limit of the fallback.
    pid_file = tmp_path / "daemon.pid"
    quoted = shlex.quote(str(pid_file))
    outside = shlex.quote(f"0::{procfs.cgroup_of(os.getpid())}")
    # The leader starts the daemon once it is in its sample's cgroup (it joins a moment after it starts:
    # what it forks before then is found by group and token only), and ends once the daemon has written
    # its pid: so the daemon surely runs, in the cgroup, when the sample ends.
    script = (
        f"while [ \"$(grep '^0::' /proc/$$/cgroup)\" = {outside} ]; do sleep 0.01; done;"
        f" setsid env -i sh -c 'echo $$ > {quoted}.tmp; mv {quoted}.tmp {quoted}; exec sleep 60' >/dev/null 2>&1 &"
        f" while [ ! -e {quoted} ]; do sleep 0.01; done"
    )
    with Containment(use_cgroups=True) as containment:
        result = execute(bash(script), deadline=soon(), containment=containment)
    assert result.exit_code == 0
    assert gone_soon(int(pid_file.read_text()))


def orphan_parent_script(pid_file: Path) -> str:
    """Leave a ``sleep`` orphaned (its parent subshell exits) and print who adopted it."""
    pids = shlex.quote(str(pid_file))
    return f"( sleep 30 >/dev/null 2>&1 & echo $! > {pids} ); awk '{{print $4}}' /proc/$(cat {pids})/stat"


@pytest.mark.parametrize("cgroups", MODES)
def test_orphans_adopted_by_assay_are_reaped(cgroups: bool, marker: str, tmp_path: Path) -> None:
    before = set(zombie_children())
    with Containment(use_cgroups=cgroups) as containment:
        execute(
            bash(f"{ESCAPES['double fork']}\n{ESCAPES['setsid']}\nexit 0"), deadline=soon(), containment=containment
        )
        adopted = execute(bash(orphan_parent_script(tmp_path / "in")), deadline=soon(), containment=containment)
        assert adopted.stdout.decode().strip() == str(os.getpid()), (
            "assay adopts its samples' orphans while a run is open"
        )
    assert set(zombie_children()) - before == set()
    outside = subprocess.run(bash(orphan_parent_script(tmp_path / "out")), capture_output=True, text=True, timeout=20)
    os.kill(int((tmp_path / "out").read_text()), 9)
    assert outside.stdout.strip() != str(os.getpid()), "the setting is given back when the last run closes"


# --- graceful stop ----------------------------------------------------------------------------

# Writes its "transcript" only when told to stop: the grace is what lets it. Ready once it listens.
FLUSHING = """
import signal, sys, time
def flush(*_):
    open(sys.argv[1], "w").write("transcript flushed")
    sys.exit(0)
signal.signal(signal.SIGTERM, flush)
open(sys.argv[2], "w").close()
time.sleep(120)
"""

# A grace far longer than flushing takes: a stop ends as soon as the sample has exited, so it costs nothing.
LONG_GRACE_S = 30.0


def flushing(tmp_path: Path) -> tuple[list[str], Path, Path]:
    """The flushing sample's argv, its transcript and its ready file."""
    transcript, ready = tmp_path / "transcript.txt", tmp_path / "ready"
    return [sys.executable, "-c", FLUSHING, str(transcript), str(ready)], transcript, ready


@pytest.mark.parametrize("cgroups", MODES)
def test_a_timed_out_sample_gets_sigterm_and_time_to_flush(tmp_path: Path, cgroups: bool, marker: str) -> None:
    argv, transcript, ready = flushing(tmp_path)

    def start(deadline: float) -> Execution:
        with Containment(use_cgroups=cgroups, grace_s=LONG_GRACE_S) as containment:
            return execute(argv, deadline=deadline, containment=containment)

    result = timed_out_once_ready(start, ready)
    assert result.timed_out is True
    assert transcript.read_text() == "transcript flushed"
    assert processes_with(marker) == []


@pytest.mark.parametrize("cgroups", MODES)
def test_a_cancelled_sample_gets_sigterm_and_time_to_flush(tmp_path: Path, cgroups: bool, marker: str) -> None:
    argv, transcript, ready = flushing(tmp_path)
    with Containment(use_cgroups=cgroups, grace_s=LONG_GRACE_S) as containment:
        result = cancelled_once_ready(argv, ready, containment, at_once=False)
    assert (result.cancelled, result.timed_out) == (True, False)
    assert transcript.read_text() == "transcript flushed"
    assert processes_with(marker) == []


def test_a_sample_ignoring_sigterm_is_killed_after_the_grace(tmp_path: Path, marker: str) -> None:
    # SIGTERM is ignored by the shell and, inherited, by its `sleep`: only the SIGKILL after the grace ends them.
    ready = tmp_path / "ready"
    script = f"trap '' TERM; sleep 60 & touch {shlex.quote(str(ready))}; wait"
    with Containment(grace_s=0.5) as containment:
        result = cancelled_once_ready(bash(script), ready, containment, at_once=False)
    assert result.cancelled is True
    assert processes_with(marker) == []


def test_cancel_at_once_skips_the_grace(tmp_path: Path, marker: str) -> None:
    argv, transcript, ready = flushing(tmp_path)
    with Containment(grace_s=LONG_GRACE_S) as containment:
        result = cancelled_once_ready(argv, ready, containment, at_once=True)
    assert result.cancelled is True
    assert ready.exists() and not transcript.exists(), "a second interrupt sends SIGKILL without a grace"
    assert processes_with(marker) == []


# --- the parent-death signal and the spawner thread -------------------------------------------


def test_a_sample_started_from_a_short_lived_thread_outlives_that_thread(tmp_path: Path, marker: str) -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that forked exits: the spawner thread does the forking.
    # The sample finishes only after that thread is gone (it waits for `go`, written after the join).
    go = tmp_path / "go"
    script = f"while [ ! -e {shlex.quote(str(go))} ]; do sleep 0.01; done; echo alive"
    with Containment() as containment:
        box: dict[str, object] = {}
        starter = threading.Thread(target=lambda: box.update(s=containment.start(bash(script))))
        starter.start()
        starter.join()
        sample = box["s"]
        assert not starter.is_alive()
        go.touch()
        out, _err = sample.popen.communicate(timeout=20)  # type: ignore[attr-defined]
        sample.finish()  # type: ignore[attr-defined]
    assert out == b"alive\n"
    assert sample.popen.returncode == 0  # type: ignore[attr-defined]


# A stand-in for assay: starts samples that daemonise (each touches its ready file, $0, once it
# has forked its daemons) and waits to be killed.
HOST = """
import sys, threading, time
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import execute
cgroups, watchdog, ready = sys.argv[1] == "1", sys.argv[2] == "1", sys.argv[3]
containment = Containment(use_cgroups=cgroups, watchdog=watchdog)
scripts = [
    "setsid sleep 60 >/dev/null 2>&1 & ( ( sleep 60 & ) & ) ; nohup sleep 60 >/dev/null 2>&1 &"
    " touch \\"$0\\"; sleep 60",
    "set -m; sleep 60 & touch \\"$0\\"; sleep 60",
]
for number, script in enumerate(scripts):
    threading.Thread(target=execute, args=(["bash", "-c", script, f"{ready}.{number}"],), kwargs={
        "deadline": time.monotonic() + 120, "containment": containment}, daemon=True).start()
time.sleep(120)
"""
HOST_SLEEPS = 6  # once the forks have settled: 4 daemons and the 2 foreground sleeps


def sleeping(pids: list[int]) -> list[int]:
    """The ``sleep`` processes among ``pids``: the shells around them may or may not exec their last command."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0"):
                found.append(pid)
    return found


def start_host(tmp_path: Path, marker: str, cgroups: bool, watchdog: bool) -> subprocess.Popen[bytes]:
    ready = tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    args = ["1" if cgroups else "0", "1" if watchdog else "0", str(ready)]
    host = subprocess.Popen([sys.executable, "-c", HOST, *args], env=env, cwd=tmp_path)

    def samples_ready() -> bool:
        return host.poll() is not None or all(Path(f"{ready}.{n}").exists() for n in range(2))

    def all_running() -> bool:  # a double fork's last process appears a moment after its script went on
        return len(sleeping(processes_with(marker))) == HOST_SLEEPS

    assert until(samples_ready, within_s=60), "the host's samples never got ready"
    assert host.poll() is None
    assert until(all_running, within_s=60), f"not all samples and daemons run: {processes_with(marker)}"
    return host


@pytest.mark.parametrize("cgroups", MODES)
def test_sigkill_of_assay_leaves_no_process_of_its_samples(tmp_path: Path, cgroups: bool, marker: str) -> None:
    host = start_host(tmp_path, marker, cgroups, watchdog=True)
    host.kill()
    host.wait()
    left = processes_with(marker)
    assert until(lambda: processes_with(marker) == [], within_s=5), f"still alive 5 s after: {left}"


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
