"""Run one sample's process: own process group, a deadline, capped capture.

The process runs in a new session so that a timeout or a cancellation can
kill everything it started. Output beyond the cap is read and dropped (the
head is kept), so a chatty command can neither block nor exhaust memory.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

DEFAULT_CAPTURE_LIMIT = 1024 * 1024
_CHUNK = 65536
_POLL_S = 0.25
_GRACE_S = 2.0  # how long to read after the group is killed


@dataclass(frozen=True)
class Execution:
    """What a process did: exit code, captured streams, time, and why it stopped."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_ms: float
    truncated: bool = False
    timed_out: bool = False
    cancelled: bool = False
    error: str | None = None


class ProcessGroups:
    """The live process groups of a run, so that cancellation can kill them all."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self.cancelled = threading.Event()

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def cancel(self) -> None:
        """Mark the run cancelled and kill every live group."""
        self.cancelled.set()
        with self._lock:
            groups = list(self._groups)
        for pgid in groups:
            kill_group(pgid)


def kill_group(pgid: int) -> None:
    """SIGKILL a whole process group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def execute(
    argv: Sequence[str],
    *,
    deadline: float,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    groups: ProcessGroups | None = None,
    stdin: bytes | None = None,
) -> Execution:
    """Run ``argv`` until it exits or ``deadline`` (time.monotonic) passes; ``stdin`` is its input."""
    started = time.monotonic()
    if groups is not None and groups.cancelled.is_set():
        return Execution(None, b"", b"", 0.0, cancelled=True, error="cancelled before start")
    try:
        with _input(stdin) as source:  # a file, not a pipe: a large input can never block the reader below
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=source,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
    except OSError as exc:
        return Execution(None, b"", b"", _ms_since(started), error=_start_error(argv, cwd, exc))
    if groups is not None:
        groups.add(process.pid)
        if groups.cancelled.is_set():  # cancel() ran between the check above and add()
            kill_group(process.pid)
    try:
        stdout, stderr, truncated, timed_out = _drain(process, deadline, capture_limit)
        exit_code, timed_out = _wait(process, deadline, timed_out)
    finally:
        kill_group(process.pid)  # reap anything the command left running in its group
        if groups is not None:
            groups.discard(process.pid)
    cancelled = groups is not None and groups.cancelled.is_set() and exit_code < 0
    return Execution(
        exit_code=None if (timed_out or cancelled) else exit_code,
        stdout=stdout,
        stderr=stderr,
        duration_ms=_ms_since(started),
        truncated=truncated,
        timed_out=timed_out,
        cancelled=cancelled,
    )


@contextlib.contextmanager
def _input(data: bytes | None) -> Iterator[int | IO[bytes]]:
    if data is None:
        yield subprocess.DEVNULL
        return
    with tempfile.TemporaryFile() as handle:
        handle.write(data)
        handle.seek(0)
        yield handle


def _start_error(argv: Sequence[str], cwd: str | None, exc: OSError) -> str:
    if cwd is not None and exc.filename == cwd:
        return f"cannot start {argv[0]!r} in cwd {cwd!r}: {exc.strerror}"
    return f"cannot start {argv[0]!r}: {exc.strerror}"


def _wait(process: subprocess.Popen[bytes], deadline: float, timed_out: bool) -> tuple[int, bool]:
    """Wait for the leader, which may outlive its pipes (``exec >&-``), up to the deadline."""
    if timed_out:
        return process.wait(), True
    try:
        return process.wait(timeout=max(deadline - time.monotonic(), 0.0)), False
    except subprocess.TimeoutExpired:
        kill_group(process.pid)
        return process.wait(), True


def _drain(process: subprocess.Popen[bytes], deadline: float, limit: int) -> tuple[bytes, bytes, bool, bool]:
    """Read both pipes to EOF, keeping at most ``limit`` bytes of each.

    The group is killed when the deadline passes or once the leader has
    exited; after that, reading stops within ``_GRACE_S`` even if a process
    that left the group (``setsid``) still holds a pipe open.
    """
    assert process.stdout is not None and process.stderr is not None
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    truncated = timed_out = False
    give_up = math.inf  # set when the group has been killed
    leader_gone_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for pipe in (process.stdout, process.stderr):
            selector.register(pipe.fileno(), selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= give_up:
                break
            if give_up == math.inf and now >= deadline:
                timed_out = True
                kill_group(process.pid)
                give_up = now + _GRACE_S  # keep draining what the killed group left in the pipes
                continue
            wake = give_up if give_up != math.inf else deadline
            events = selector.select(timeout=min(wake - now, _POLL_S))
            if give_up == math.inf and process.poll() is not None:
                # The leader exited; descendants still hold the pipes. Give them a quiet
                # moment (or _POLL_S if they keep writing), then kill the group.
                leader_gone_at = leader_gone_at if leader_gone_at is not None else time.monotonic()
                if not events or time.monotonic() - leader_gone_at >= _POLL_S:
                    kill_group(process.pid)
                    give_up = time.monotonic() + _GRACE_S
            for key, _mask in events:
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                    continue
                buffer = kept[key.fd]
                room = limit - len(buffer)
                if room > 0:
                    buffer += chunk[:room]
                if len(chunk) > room:
                    truncated = True
    process.stdout.close()
    process.stderr.close()
    return bytes(kept[out_fd]), bytes(kept[err_fd]), truncated, timed_out


def _ms_since(started: float) -> float:
    return (time.monotonic() - started) * 1000.0
