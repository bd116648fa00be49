"""The watchdog program: kills what a dead owner left, reads the whole pipe first, leaves quietly on bye."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

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


def test_bye_leaves_the_owners_own_children_alone() -> None:
    child = subprocess.Popen(["sleep", "60"])  # attached: same session as its owner (this process)
    try:
        guard = start_watchdog(os.getpid())
        time.sleep(3 * watchdog.TICK_S)  # let it note the child (what comes next is the point, not the time)
        assert guard.stdin is not None
        guard.stdin.write(b"bye\n")
        guard.stdin.close()
        assert guard.wait(timeout=20) == 0
        assert not is_gone(child.pid)
    finally:
        child.kill()
        child.wait()
