"""Standard output and error that never change assay's exit code.

The exit code is the verdict's (0, 1 or 2), whatever happens to the streams a
report is written to: closed before assay started (``>&-``, ``2>&-``), a reader
gone (``| head -1``: a broken pipe), a full disk (``>/dev/full``). A write that
fails is recorded and the stream goes to ``/dev/null`` from then on, so no
later write (a progress line, the interpreter's last flush) fails again; the
command goes on and returns its own exit code, and says once on stderr what
happened to stdout.

Only the standard library is imported here: ``fill_closed`` runs before the
slow imports of a command-line start.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from typing import TextIO

_NAMES = {0: "standard input", 1: "standard output", 2: "standard error"}
_found_closed: list[int] = []  # what ``fill_closed`` found closed at start-up


def fill_closed() -> tuple[int, ...]:
    """Put ``/dev/null`` on each of descriptors 0, 1 and 2 that is closed; the ones that were.

    A closed descriptor would otherwise be the next file assay opens, and a
    line meant for stderr would land in, say, a run document.
    """
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            closed.append(fd)
    _found_closed[:] = closed
    return tuple(closed)


class GuardedStream(io.TextIOBase):
    """A text stream whose writes never raise: the first failure is recorded (``failure``) and the
    descriptor goes to ``/dev/null`` (what was buffered is dropped there, and so is what follows)."""

    def __init__(self, stream: TextIO | None, fd: int, failure: str | None = None) -> None:
        super().__init__()
        self._stream = stream
        self._fd = fd
        self.failure = failure  # why the stream took nothing: "closed", "broken pipe", "full"

    @property
    def wrapped(self) -> TextIO | None:
        return self._stream

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self._stream, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        if self.failure is not None or self._stream is None:
            return False
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._fd

    def write(self, text: str) -> int:
        if self.failure is None and self._stream is not None:
            try:
                return self._stream.write(text)
            except (OSError, ValueError) as exc:
                self._failed(exc)
        return len(text)

    def flush(self) -> None:
        if self.failure is None and self._stream is not None:
            try:
                self._stream.flush()
            except (OSError, ValueError) as exc:
                self._failed(exc)

    def __getattr__(self, name: str) -> object:  # what a library may look for (``buffer``, ``mode``)
        return getattr(self._stream, name)

    def _failed(self, exc: Exception) -> None:
        self.failure = _failure_of(exc)
        with contextlib.suppress(OSError):
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._fd)
            os.close(null)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()  # type: ignore[union-attr] # what was buffered goes to /dev/null now


def _failure_of(exc: Exception) -> str:
    if isinstance(exc, BrokenPipeError) or getattr(exc, "errno", None) in (errno.EPIPE, errno.ECONNRESET):
        return "broken pipe"
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return "full"
    if isinstance(exc, ValueError) or getattr(exc, "errno", None) == errno.EBADF:
        return "closed"
    return os.strerror(exc.errno) if isinstance(exc, OSError) and exc.errno else str(exc)


@contextlib.contextmanager
def guarded(keep: bool = False) -> Iterator[tuple[GuardedStream, GuardedStream]]:
    """``sys.stdout`` and ``sys.stderr`` as ``GuardedStream``s for the span of a command; given back
    afterwards unless ``keep`` (the process ends after it). A descriptor ``fill_closed`` found closed
    counts as failed from the start."""
    previous = sys.stdout, sys.stderr
    closed = tuple(_found_closed)
    streams = (_guard(sys.stdout, 1, closed), _guard(sys.stderr, 2, closed))
    sys.stdout, sys.stderr = streams
    try:
        yield streams
    finally:
        for stream in streams:
            stream.flush()
        if not keep:
            sys.stdout, sys.stderr = previous


def _guard(stream: TextIO | None, fd: int, closed: tuple[int, ...]) -> GuardedStream:
    if isinstance(stream, GuardedStream):
        return stream
    if stream is None:  # the interpreter found the descriptor closed at start-up (now /dev/null)
        return GuardedStream(None, fd, "closed")
    return GuardedStream(stream, fd, "closed" if fd in closed else None)


def failure_line(stream: GuardedStream, fd: int = 1) -> str | None:
    """One line saying what happened to the stream, or None when every write went through."""
    if stream.failure is None:
        return None
    name = _NAMES[fd]
    if stream.failure == "broken pipe":
        return f"{name} was closed (broken pipe)"
    if stream.failure == "full":
        return f"{name} is full: nothing more could be written"
    if stream.failure == "closed":
        return f"{name} was closed"
    return f"could not write {name} ({stream.failure})"
