"""Run one sample's process: contained, under a deadline, with capped capture.

The sample's processes are contained (``containment``): a timeout, a
cancellation or the end of the sample stops every one of them, gracefully
first. Output beyond the cap is read and dropped (the head is kept), so a
chatty command can neither block nor exhaust memory.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from fixtures_core.execution.containment import ContainedSample, Containment
from fixtures_core.results import Stop

DEFAULT_CAPTURE_LIMIT = 1024 * 1024
_CHUNK = 65536
_POLL_S = 0.25
_TICK_S = 0.02  # while stopping: how often to look whether the sample's processes are gone
_DRAIN_AFTER_KILL_S = 2.0  # how long to read after SIGKILL (something out of reach may hold a pipe)


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

    @property
    def stopped(self) -> Stop | None:
        """Why the process was stopped before it finished: its deadline passed, or it was cancelled."""
        return "timeout" if self.timed_out else "cancelled" if self.cancelled else None


def execute(
    argv: Sequence[str],
    *,
    deadline: float,
    cwd: str | None = None,
    env: Mapping[str, str] | None = None,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    containment: Containment | None = None,
    stdin: bytes | None = None,
) -> Execution:
    """Run ``argv`` until it exits or ``deadline`` (time.monotonic) passes; ``stdin`` is its input.

    Every process it starts is stopped before this returns (``containment``:
    the run's; without one, a private one for this call).
    """
    if containment is None:
        with Containment() as own:
            return execute(
                argv, deadline=deadline, cwd=cwd, env=env, capture_limit=capture_limit, containment=own, stdin=stdin
            )
    started = time.monotonic()
    if containment.cancelled.is_set():
        return Execution(None, b"", b"", 0.0, cancelled=True, error="cancelled before start")
    try:
        with _input(stdin) as source:  # a file, not a pipe: a large input can never block the reader below
            sample = containment.start(argv, cwd=cwd, env=env, stdin=source)
    except OSError as exc:
        return Execution(None, b"", b"", ms_since(started), error=_start_error(argv, cwd, exc))
    try:
        stdout, stderr, truncated, stopped = _supervise(sample, deadline, capture_limit, containment)
    finally:
        if sample.remaining():  # only when supervising was itself interrupted
            sample.kill_and_wait()
        exit_code = sample.finish()
    interrupted = stopped in ("timeout", "cancelled")
    return Execution(
        exit_code=None if interrupted else exit_code,
        stdout=stdout,
        stderr=stderr,
        duration_ms=ms_since(started),
        truncated=truncated,
        timed_out=stopped == "timeout",
        cancelled=stopped == "cancelled",
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


def _supervise(
    sample: ContainedSample, deadline: float, limit: int, containment: Containment
) -> tuple[bytes, bytes, bool, str | None]:
    """Read both pipes (at most ``limit`` bytes kept of each) while the sample runs, and stop it.

    The sample is stopped (SIGTERM, grace, SIGKILL) when the deadline passes
    (``"timeout"``), when the run is cancelled (``"cancelled"``), or once its
    leader has exited: what it left running gets a quiet moment (``_POLL_S``)
    to finish writing, then is stopped too (``None``: the sample ended by
    itself). After SIGKILL, reading stops within ``_DRAIN_AFTER_KILL_S`` even
    if something out of reach still holds a pipe open.
    """
    popen = sample.popen
    assert popen.stdout is not None and popen.stderr is not None
    out_fd, err_fd = popen.stdout.fileno(), popen.stderr.fileno()
    kept = {out_fd: bytearray(), err_fd: bytearray()}
    truncated = False
    stopped: str | None = None
    kill_at = give_up = math.inf  # set when stopping starts (SIGTERM sent) and when SIGKILL is sent
    leader_gone_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for fd in (out_fd, err_fd):
            selector.register(fd, selectors.EVENT_READ, "pipe")
        if sample.leader_fd is not None:
            selector.register(sample.leader_fd, selectors.EVENT_READ, "leader")
        events: list[tuple[selectors.SelectorKey, int]] = []
        while True:
            now = time.monotonic()
            pipes_open = any(key.data == "pipe" for key in selector.get_map().values())
            if kill_at == math.inf:  # running
                if containment.cancelled.is_set():  # first: cancel()'s SIGTERM may be why the leader exited
                    stopped, kill_at = "cancelled", _begin_stop(sample, containment, now)
                elif sample.leader_exited():
                    # What it left holding the pipes gets one more round of reading, then a quiet one.
                    noticed_before = leader_gone_at is not None
                    leader_gone_at = now if leader_gone_at is None else leader_gone_at
                    if not pipes_open or noticed_before and (not events or now - leader_gone_at >= _POLL_S):
                        kill_at = _begin_stop(sample, containment, now)
                elif now >= deadline:
                    stopped, kill_at = "timeout", _begin_stop(sample, containment, now)
            if give_up == math.inf and kill_at != math.inf:  # stopping gracefully
                if now >= kill_at or containment.stopped_at_once.is_set() or not sample.remaining():
                    sample.kill_and_wait()
                    give_up = time.monotonic() + _DRAIN_AFTER_KILL_S
                else:
                    sample.terminate()  # processes that appeared since get theirs too
            if give_up != math.inf and (not pipes_open or time.monotonic() >= give_up):
                break
            if kill_at == math.inf:
                timeout = min(deadline - time.monotonic(), _POLL_S)
            else:
                timeout = min((kill_at if give_up == math.inf else give_up) - time.monotonic(), _TICK_S)
            events = selector.select(timeout=max(timeout, 0.0))
            for key, _mask in events:
                if key.data == "leader":
                    selector.unregister(key.fd)  # stays readable once the leader exited
                    continue
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
    return bytes(kept[out_fd]), bytes(kept[err_fd]), truncated, stopped


def _begin_stop(sample: ContainedSample, containment: Containment, now: float) -> float:
    """Send SIGTERM, unless nothing is left or a second interrupt wants SIGKILL at once; return when SIGKILL is due."""
    if containment.stopped_at_once.is_set() or not sample.remaining():
        return now
    sample.terminate()
    return now + containment.grace_s


def ms_since(started: float) -> float:
    """Milliseconds elapsed since ``started``, a ``time.monotonic()`` reading."""
    return (time.monotonic() - started) * 1000.0
