"""Who is running a run: an exclusive ``flock`` on ``running.lock`` in its folder.

The kernel drops the lock when its holder dies, SIGKILL included, so a lock
that is held always means a live process: ``--resume`` refuses that run
("still running, pid N") instead of running its samples twice, and
``history`` tells a running run from a killed one. The file keeps the
holder's pid for those messages. A lock file that is a symlink, a FIFO or a
device was planted (``planted``): ``acquire`` refuses it without opening it
for writing, and ``holder`` reads it as nobody's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from fixtures_core.errors import StateError
from fixtures_core.records.planted import open_own

LOCK_FILE = "running.lock"


class RunLock:
    """The lock of one run folder, held by this process from ``acquire`` until ``release`` (or its exit)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / LOCK_FILE
        self._handle: IO[str] | None = None

    def acquire(self) -> int | None:
        """Take the lock; None when taken, else the pid of the live process that holds it."""
        descriptor = open_own(self.path, os.O_RDWR | os.O_CREAT)
        handle = os.fdopen(descriptor, "r+", encoding="utf-8")  # held open for the run's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holding = _pid_in(handle) or -1
            handle.close()
            return holding
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._handle = handle
        return None

    def release(self) -> None:
        """Let go of the lock (the run closed)."""
        if self._handle is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def holder(folder: Path) -> int | None:
    """The pid of the live process running the run in ``folder``, or None when nobody runs it."""
    try:
        descriptor = open_own(folder / LOCK_FILE, os.O_RDONLY)
    except (OSError, StateError):  # none, or planted: assay's own lock is a regular file
        return None
    with os.fdopen(descriptor, encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _pid_in(handle) or -1
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def _pid_in(handle: IO[str]) -> int | None:
    try:
        handle.seek(0)
        text = handle.read(32).strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() else None
