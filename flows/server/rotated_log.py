"""A size-bounded log file with a few older generations, written by a process that never reopens it.

The Prefect server writes its output straight into the file (appending), so a crashed or killed
supervisor can never make the server's writes fail. To stay bounded, the file is copied to ``NAME.1`` and
emptied once it passes its size (as logrotate's ``copytruncate``): older copies move to ``NAME.2`` ..
``NAME.G``, and the oldest is dropped. Lines the server writes between the last copy and the emptying,
microseconds apart, are lost. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

NOTE_MARK = " assay supervisor: "
STARTED_NOTE = "the Prefect server runs: pid"  # the supervisor's note as it starts a server (flows.server.supervisor)
_TAIL_BYTES = 16384
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit)\b[^:]*: ")  # a traceback's last line


@dataclass(frozen=True)
class RotatedLog:
    """The log at ``path``: at most ``max_bytes`` (give or take a line) plus ``generations`` older copies."""

    path: Path
    max_bytes: int
    generations: int = 3

    def generation(self, number: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{number}")

    def open_append(self) -> int:
        """A descriptor that appends to the log (created 0600: it may hold flow-run parameters)."""
        return os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def note(self, message: str) -> None:
        """Append one line of the supervisor's own, with the date; a full disk loses the line, nothing else."""
        line = f"{datetime.now().astimezone().isoformat(timespec='seconds')}{NOTE_MARK}{message}\n"
        with contextlib.suppress(OSError):
            descriptor = self.open_append()
            try:
                os.write(descriptor, line.encode("utf-8", "replace"))
            finally:
                os.close(descriptor)

    def rotate_if_full(self) -> bool:
        """Move the log to its first generation once it passed ``max_bytes``; True when it did."""
        try:
            if self.path.stat().st_size < self.max_bytes:
                return False
            for number in range(self.generations - 1, 0, -1):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(self.generation(number), self.generation(number + 1))
            self._copy_then_empty()
        except OSError:
            return False  # tried again at the next look; a full disk must not stop the supervisor
        self.note(f"the log passed {self.max_bytes} bytes: its earlier lines are in {self.generation(1).name}")
        return True

    def _copy_then_empty(self) -> None:
        draft = self.generation(1).with_name(f".{self.generation(1).name}.draft")
        descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with open(self.path, "rb") as source, os.fdopen(descriptor, "wb") as copy:
            shutil.copyfileobj(source, copy)
            while os.fstat(source.fileno()).st_size > source.tell():  # written during the copy: take it too
                shutil.copyfileobj(source, copy)
            os.truncate(self.path, 0)
        os.replace(draft, self.generation(1))

    def last_output_line(self) -> str | None:
        """What the server said last (never one of the supervisor's notes), for a one-line error: since its
        latest start, the last line of a traceback (``package.SomeError: message``) if it wrote one, else its
        last line."""
        try:
            with open(self.path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
                tail = log.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return None
        starts = [n for n, line in enumerate(tail) if NOTE_MARK in line and STARTED_NOTE in line]
        lines = [line.strip() for line in tail[starts[-1] if starts else 0 :] if line.strip() and NOTE_MARK not in line]
        raised = [line for line in lines if _EXCEPTION_LINE.match(line)]
        said = raised or lines
        return said[-1] if said else None
