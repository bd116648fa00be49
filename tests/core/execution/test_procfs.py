"""Reading /proc: fields by their proc(5) numbers, a command name that looks like a field, gone processes."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures_core.execution import procfs


@pytest.fixture
def oddly_named(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A ``sleep`` whose command name holds ") Z 1 2 (": a parser splitting at the first ')' misreads it."""
    program = tmp_path / "a) Z 1 2 (b"
    shutil.copy(shutil.which("sleep") or "/bin/sleep", program)
    child = subprocess.Popen([str(program), "60"], start_new_session=True)
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def test_stat_reads_the_fields_after_a_command_name_holding_parentheses(
    oddly_named: subprocess.Popen[bytes],
) -> None:
    stat = procfs.stat(oddly_named.pid)
    assert stat is not None
    assert Path(f"/proc/{oddly_named.pid}/comm").read_text().startswith("a) Z 1 2 (b")  # the name is really there
    assert (stat.pid, stat.ppid, stat.pgrp, stat.session) == (
        oddly_named.pid,
        os.getpid(),
        oddly_named.pid,
        oddly_named.pid,
    )
    assert not stat.zombie
    assert procfs.alive(oddly_named.pid, stat.starttime)
    assert not procfs.alive(oddly_named.pid, stat.starttime + 1), "another start time is another process"


def test_stat_fields_are_numbered_as_in_proc_5() -> None:
    fields = procfs.stat_fields(os.getpid())
    assert fields is not None
    # field 4 is ppid, 5 pgrp, 6 session; field N is at index N - 3
    assert [int(fields[n - 3]) for n in (4, 5, 6)] == [os.getppid(), os.getpgrp(), os.getsid(0)]


def test_a_zombie_is_not_alive_and_a_reaped_process_is_gone() -> None:
    child = subprocess.Popen(["true"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: a zombie
    stat = procfs.stat(child.pid)
    assert stat is not None and stat.zombie
    assert not procfs.alive(child.pid)
    child.wait()
    assert procfs.stat(child.pid) is None
    assert procfs.stat_fields(child.pid) is None
    assert child.pid not in procfs.pids()


def test_pids_lists_this_process_and_its_children(oddly_named: subprocess.Popen[bytes]) -> None:
    assert {os.getpid(), oddly_named.pid} <= set(procfs.pids())
    assert oddly_named.pid in procfs.children(os.getpid())
