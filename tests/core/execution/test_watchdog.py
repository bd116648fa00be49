"""The watchdog program: kills what a dead owner left, reads the whole pipe first, leaves quietly on bye."""

from __future__ import annotations

import array
import fcntl
import os
import shlex
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import IO

from fixtures_core.execution import watchdog
from tests.processes import gone_soon, is_gone

PROGRAM = str(Path(watchdog.__file__))


def start_watchdog(owner: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-I", "-S", PROGRAM, str(owner)], stdin=subprocess.PIPE)


def test_a_scope_written_just_before_the_owner_died_is_still_cleaned_up() -> None:
    # The owner is gone before the watchdog even starts: what it wrote is still in the pipe.
    owner = subprocess.Popen(["true"])
    owner.wait()
    target = subprocess.Popen(["sleep", "60"], env={**os.environ, "ASSAY_SAMPLE_ID": "tok123-4"})
    bystander = subprocess.Popen(["sleep", "60"], env={**os.environ, "ASSAY_SAMPLE_ID": "other-1"})
    try:
        guard = start_watchdog(owner.pid)
        assert guard.stdin is not None
        guard.stdin.write(b"scope tok123\n")
        guard.stdin.close()
        assert guard.wait(timeout=20) == 0
        assert gone_soon(target.pid)
        assert not is_gone(bystander.pid), "only the scope's processes are killed"
    finally:
        for process in (target, bystander):
            process.kill()
            process.wait()


def unread(pipe: IO[bytes]) -> int:
    """Bytes written to ``pipe`` that its reader has not read yet."""
    count = array.array("i", [0])
    fcntl.ioctl(pipe.fileno(), termios.FIONREAD, count)
    return count[0]


def noted_by(guard: subprocess.Popen[bytes]) -> None:
    """Return once the watchdog has noted its owner's children as they are now.

    Each round it notes them, then reads its commands: once it has read a
    line written now (a blank one: no command), it has noted them since.
    """
    assert guard.stdin is not None
    guard.stdin.write(b"\n")
    guard.stdin.flush()
    for _ in range(3000):  # bounded wait (60 s), not a timing assertion
        if unread(guard.stdin) == 0 or guard.poll() is not None:
            break
        time.sleep(0.02)
    assert unread(guard.stdin) == 0 and guard.poll() is None, "the watchdog never read its pipe"


def start_owner(tmp_path: Path, child: str = "sleep 60") -> tuple[subprocess.Popen[bytes], int]:
    """An owner in its own session with one attached child (``child``, in that session); both pids."""
    child_pid = tmp_path / "child.pid"
    script = f"{child} & echo $! > {child_pid}.tmp; mv {child_pid}.tmp {child_pid}; wait"
    owner = subprocess.Popen(["bash", "-c", script], start_new_session=True)
    for _ in range(3000):
        if child_pid.exists():
            return owner, int(child_pid.read_text())
        time.sleep(0.02)
    owner.kill()
    owner.wait()
    raise AssertionError("the owner never started its child")


def test_an_owner_dying_takes_its_attached_children_along(tmp_path: Path) -> None:
    owner, child = start_owner(tmp_path)
    try:
        guard = start_watchdog(owner.pid)
        noted_by(guard)
        owner.kill()
        owner.wait()
        assert guard.wait(timeout=20) == 0
        assert gone_soon(child)
    finally:
        owner.kill()
        owner.wait()
        if not is_gone(child):
            os.kill(child, signal.SIGKILL)


def test_bye_leaves_the_owners_own_children_alone(tmp_path: Path) -> None:
    # The same owner and child as above, where the child dies: only "bye" makes the difference.
    owner, child = start_owner(tmp_path)
    try:
        guard = start_watchdog(owner.pid)
        noted_by(guard)
        assert guard.stdin is not None
        guard.stdin.write(b"bye\n")
        guard.stdin.close()
        assert guard.wait(timeout=20) == 0
        assert not is_gone(child)
    finally:
        owner.kill()
        owner.wait()
        if not is_gone(child):
            os.kill(child, signal.SIGKILL)


def test_a_child_that_left_for_a_session_of_its_own_is_spared(tmp_path: Path) -> None:
    # The lease guard's case: noted in the owner's session between its fork and its setsid, it must
    # outlive the owner to give back the dead run's slots.
    go, moved = tmp_path / "go", tmp_path / "moved"
    leaver = (
        "import os, time, pathlib\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
        f"os.setsid(); pathlib.Path({str(moved)!r}).touch(); time.sleep(60)\n"
    )
    owner, child = start_owner(tmp_path, f"{sys.executable} -c {shlex.quote(leaver)}")
    try:
        guard = start_watchdog(owner.pid)
        noted_by(guard)  # noted while still in the owner's session
        go.touch()
        for _ in range(3000):
            if moved.exists():
                break
            time.sleep(0.02)
        owner.kill()
        owner.wait()
        assert guard.wait(timeout=20) == 0
        assert not is_gone(child)
    finally:
        owner.kill()
        owner.wait()
        if not is_gone(child):
            os.kill(child, signal.SIGKILL)
