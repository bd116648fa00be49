"""Executing one sample: deadlines, cancellation, capped capture, and what it leaves running.

Real subprocesses only. Nothing here asserts on how long something took: a
timeout is proven by its status and by the process group being dead
afterwards, a deadline that was not needed by ``timed_out`` staying False.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from fixtures_core.execution.containment import ContainedSample, Containment
from fixtures_core.execution.sampling import execute
from tests.processes import gone_soon, is_gone

MIB = 1024 * 1024


def read_pid(path: Path) -> int:
    return int(path.read_text().strip())


def wait_for_file(path: Path) -> None:
    for _ in range(500):
        if path.exists() and path.read_text().strip():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def pid_files(tmp_path: Path) -> Iterator[list[Path]]:
    """Files holding pids of processes a test started; whatever still runs is killed at teardown."""
    files: list[Path] = []
    yield files
    for path in files:
        if path.exists() and path.read_text().strip():
            pid = read_pid(path)
            if not is_gone(pid):
                os.kill(pid, 9)


def bash(script: str) -> list[str]:
    return ["bash", "-c", script]


def soon(seconds: float = 20.0) -> float:
    return time.monotonic() + seconds


# --- exit codes and streams -------------------------------------------------------------


def test_captures_exit_code_and_both_streams() -> None:
    result = execute(bash("echo out; echo err >&2; exit 3"), deadline=soon())
    assert result.exit_code == 3
    assert result.stdout == b"out\n"
    assert result.stderr == b"err\n"
    assert (result.timed_out, result.cancelled, result.truncated, result.error) == (False, False, False, None)
    assert result.duration_ms > 0


def test_env_and_cwd_are_passed(tmp_path: Path) -> None:
    result = execute(bash('echo "$ASSAY_X"; pwd'), deadline=soon(), cwd=str(tmp_path), env={"ASSAY_X": "hello"})
    assert result.stdout.decode().splitlines() == ["hello", str(tmp_path)]


def test_stdin_is_empty() -> None:
    result = execute([sys.executable, "-c", "import sys; print(repr(sys.stdin.read()))"], deadline=soon())
    assert result.stdout == b"''\n"


def test_stdin_bytes_of_any_size_reach_the_contained_command(containment: Containment) -> None:
    # 4 MiB: far beyond a pipe's buffer, so feeding it must not block the reading of stdout.
    script = "import os, sys; print(len(sys.stdin.buffer.read()), os.environ['ASSAY_SAMPLE_ID'])"
    result = execute([sys.executable, "-c", script], deadline=soon(), stdin=b"x" * (4 * MIB), containment=containment)
    size, token = result.stdout.decode().split()
    assert (result.exit_code, size) == (0, str(4 * MIB))
    assert token.startswith(containment.token)


def test_killed_by_a_signal_reports_the_negative_signal() -> None:
    result = execute(bash("kill -TERM $$"), deadline=soon())
    assert result.exit_code == -15
    assert not result.timed_out and not result.cancelled


def test_missing_program_is_an_error_not_an_exception() -> None:
    result = execute(["assay-no-such-program-xyz"], deadline=soon())
    assert result.exit_code is None
    assert result.error == "cannot start 'assay-no-such-program-xyz': No such file or directory"


def test_missing_cwd_is_named_in_the_error(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    result = execute(["true"], deadline=soon(), cwd=missing)
    assert result.exit_code is None
    assert result.error is not None and f"in cwd {missing!r}" in result.error


# --- capture cap ---------------------------------------------------------------------------

_PATTERN = "bytes(range(256))"  # 256 distinct bytes, so the kept head can be checked exactly


def test_output_beyond_the_cap_keeps_exactly_the_head() -> None:
    # 3 MiB = 256 bytes x 12288; the first MiB is the same pattern x 4096.
    script = f"import sys; sys.stdout.buffer.write({_PATTERN} * 12288)"
    result = execute([sys.executable, "-c", script], deadline=soon(), capture_limit=MIB)
    assert result.exit_code == 0
    assert len(result.stdout) == MIB
    assert result.stdout == bytes(range(256)) * 4096
    assert result.truncated is True


def test_output_of_exactly_the_cap_is_not_truncated() -> None:
    result = execute([sys.executable, "-c", "print('x' * 999)"], deadline=soon(), capture_limit=1000)
    assert len(result.stdout) == 1000
    assert result.truncated is False


def test_one_byte_over_the_cap_is_truncated() -> None:
    result = execute([sys.executable, "-c", "print('x' * 1000)"], deadline=soon(), capture_limit=1000)
    assert result.stdout == b"x" * 1000
    assert result.truncated is True


def test_large_stdout_and_stderr_together_do_not_deadlock() -> None:
    # Interleaved 64 KiB writes to both pipes, 3 MiB each: reading only one pipe
    # would block the writer on the other one as soon as its 64 KiB buffer fills.
    script = (
        "import sys\n"
        "chunk = b'o' * 65536\n"
        "for _ in range(48):\n"
        "    sys.stdout.buffer.write(chunk); sys.stdout.flush()\n"
        "    sys.stderr.buffer.write(chunk.replace(b'o', b'e')); sys.stderr.flush()\n"
    )
    result = execute([sys.executable, "-c", script], deadline=soon(30), capture_limit=MIB)
    assert result.exit_code == 0 and not result.timed_out  # a deadlock would end at the deadline
    assert result.stdout == b"o" * MIB
    assert result.stderr == b"e" * MIB
    assert result.truncated is True


# --- the deadline ------------------------------------------------------------------------


def test_deadline_kills_the_whole_group(tmp_path: Path, pid_files: list[Path]) -> None:
    leader, child = tmp_path / "leader.pid", tmp_path / "child.pid"
    pid_files += [leader, child]
    script = f"echo $$ > {shlex.quote(str(leader))}; sleep 60 & echo $! > {shlex.quote(str(child))}; wait"
    result = execute(bash(script), deadline=soon(1))
    assert result.timed_out is True
    assert result.exit_code is None
    assert result.error is None
    assert gone_soon(read_pid(leader))
    assert gone_soon(read_pid(child))


def test_deadline_holds_when_the_command_closed_its_pipes(tmp_path: Path, pid_files: list[Path]) -> None:
    # The pipes reach EOF at once, but the leader keeps running: the wait must still end at the deadline.
    leader = tmp_path / "leader.pid"
    pid_files.append(leader)
    result = execute(bash(f"exec >/dev/null 2>&1; echo $$ > {shlex.quote(str(leader))}; sleep 30"), deadline=soon(1))
    assert result.timed_out is True  # a wait that ignored the deadline would see `sleep 30` exit 0
    assert result.exit_code is None
    assert gone_soon(read_pid(leader))


def test_a_deadline_already_past_still_reports_a_timeout() -> None:
    result = execute(bash("sleep 30"), deadline=time.monotonic() - 1)
    assert result.timed_out is True and result.exit_code is None


def test_background_writer_left_by_a_finished_leader_is_killed(tmp_path: Path, pid_files: list[Path]) -> None:
    # The leader exits at once; its background child keeps the pipe busy forever.
    # The sample has finished (exit 0): it must not wait for, or be blamed for, the deadline.
    child = tmp_path / "child.pid"
    pid_files.append(child)
    script = f"(while :; do echo spam; done) & echo $! > {shlex.quote(str(child))}; exit 0"
    result = execute(bash(script), deadline=soon(5))
    assert result.timed_out is False
    assert result.exit_code == 0
    assert result.stdout.startswith(b"spam\n")
    assert gone_soon(read_pid(child))


def test_quiet_background_child_is_reaped_after_the_leader_exits(tmp_path: Path, pid_files: list[Path]) -> None:
    child = tmp_path / "child.pid"
    pid_files.append(child)
    result = execute(
        bash(f"sleep 60 >/dev/null 2>&1 & echo $! > {shlex.quote(str(child))}; echo done"), deadline=soon()
    )
    assert result.exit_code == 0 and result.stdout == b"done\n"
    assert gone_soon(read_pid(child))


def test_process_outside_the_group_holding_a_pipe_does_not_hold_the_sample(
    tmp_path: Path, pid_files: list[Path]
) -> None:
    # A daemon started in its own session (setsid) escapes the group kill and keeps stdout open
    # longer than the deadline: a sample held by it would end as a timeout.
    escaped = tmp_path / "escaped.pid"
    pid_files.append(escaped)
    script = (
        "import subprocess\n"
        "p = subprocess.Popen(['sleep', '600'], start_new_session=True)\n"
        f"open({str(escaped)!r}, 'w').write(str(p.pid))\n"
        "print('started', flush=True)\n"
    )
    result = execute([sys.executable, "-c", script], deadline=soon(30))
    assert result.timed_out is False  # it ended when the leader did, not at the deadline
    assert result.exit_code == 0
    assert result.stdout == b"started\n"
    assert gone_soon(read_pid(escaped)), "the daemon was stopped with its sample"


# --- cancellation ----------------------------------------------------------------------------


def test_cancel_before_start_runs_nothing(tmp_path: Path) -> None:
    containment = Containment()
    containment.cancel()
    touched = tmp_path / "ran"
    result = execute(["touch", str(touched)], deadline=soon(), containment=containment)
    assert result.cancelled is True
    assert result.error == "cancelled before start"
    assert result.exit_code is None
    assert not touched.exists()


def test_cancel_kills_a_running_sample_and_its_children(tmp_path: Path, pid_files: list[Path]) -> None:
    leader, child, marker = tmp_path / "leader.pid", tmp_path / "child.pid", tmp_path / "started"
    pid_files += [leader, child]
    script = (
        f"echo $$ > {shlex.quote(str(leader))}; sleep 60 & echo $! > {shlex.quote(str(child))};"
        f" echo yes > {shlex.quote(str(marker))}; wait"
    )
    box: dict[str, object] = {}
    with Containment() as containment:
        worker = threading.Thread(
            target=lambda: box.update(result=execute(bash(script), deadline=soon(60), containment=containment))
        )
        worker.start()
        wait_for_file(marker)
        containment.cancel()
        worker.join(timeout=20)
    assert not worker.is_alive()
    result = box["result"]
    assert getattr(result, "cancelled", None) is True
    assert getattr(result, "timed_out", None) is False
    assert getattr(result, "exit_code", 0) is None
    assert gone_soon(read_pid(leader))
    assert gone_soon(read_pid(child))


class CancelDuringStart(Containment):
    """A cancel() that lands after execute() checked for cancellation, while the leader starts."""

    def start(self, argv: Sequence[str], **options: Any) -> ContainedSample:
        self.cancel()
        return super().start(argv, **options)


def test_cancel_racing_with_start_still_stops_the_new_sample() -> None:
    with CancelDuringStart() as containment:
        result = execute(bash("sleep 30"), deadline=soon(5), containment=containment)
    assert result.cancelled is True
    assert result.timed_out is False


def test_samples_are_forgotten_when_they_end() -> None:
    with Containment() as containment:
        execute(bash("exit 0"), deadline=soon(), containment=containment)
        assert containment._live == {}
        containment.cancel()  # nothing left to stop; must not raise
