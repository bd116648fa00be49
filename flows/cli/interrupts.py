"""SIGINT, SIGTERM and SIGHUP for the life of one assay command: an interrupt always ends in exit 2.

The phases of a command, and what a signal does in each:

* **start-up** (the imports, before ``main`` runs): exit 2 at once with one
  line; nothing has started. ``flows.cli.start_up`` covers it, from assay's
  first module on (it also says what comes before that).
* **before the run** (planning: parsing, validating, loading a baseline):
  raise ``Interrupted``; the command prints one line and exits 2.
* **while the run is open** (samples, finalize): the first signal stops
  every sample gracefully (SIGTERM, a short grace, SIGKILL) and the run
  closes as ERR "interrupted"; a second one kills every sample at once and
  ends the command (``Interrupted``), still exit 2, the run closed from its
  evidence. Once the rows are done (``Containment.closing``) a second one
  kills what still runs (a judge) and lets the run's document be written.
* **after the run was recorded** (the report): the run is recorded again as
  ERR "interrupted" and the command exits 2.
* **exiting** (after ``main`` returned, in interpreter shutdown): exit 2 at once.

Only the standard library is imported here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fixtures_core.execution.containment import Containment

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """An interrupt that ends the command (exit 2).

    A BaseException, so that no ``except Exception`` swallows it; and not a
    KeyboardInterrupt, which typer turns into a return value of 130 that a
    caller could take for success.
    """

    def __init__(self, signal_name: str, phase: str) -> None:
        self.signal_name = signal_name
        self.phase = phase  # "before", "running" (a second signal) or "after" the run
        super().__init__(signal_name)

    @property
    def message(self) -> str:
        """The one line the command prints for it."""
        how = {
            "before": "before the run started; nothing ran",
            "running": "again: every sample was killed at once",
            "after": "while reporting; the run is recorded as ERR",
        }[self.phase]
        return f"interrupted by {self.signal_name} {how}"


def say(line: str) -> None:
    """One line on stderr, written directly: safe in a signal handler and with a closed terminal."""
    with contextlib.suppress(OSError):
        os.write(2, (line + "\n").encode("utf-8", "replace"))


def exit_now(line: str | None = None, code: int = 2) -> None:
    """Flush what was printed and leave at once, without interpreter shutdown."""
    if line:
        say(line)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class InterruptGuard:
    """The signal handlers of one command; ``running`` marks the span in which a run is open."""

    def __init__(self, on_exit: Callable[[str], str | None] | None = None) -> None:
        self.received: list[str] = []
        self._on_exit = on_exit  # after the command returned: records what must be, gives the one line
        self._containment: Containment | None = None
        self._phase = "before"
        self._previous: dict[int, Any] = {}
        self._exiting = False
        self._returned = False
        self.stopped_at_once = False  # a second signal ended a run: threads of it may still be running

    @property
    def interrupted(self) -> bool:
        return bool(self.received)

    def install(self) -> None:
        """Take over SIGINT, SIGTERM and SIGHUP (only the main thread can)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        """Give the handlers back (a command run inside another program)."""
        for signum, handler in self._previous.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(signum, handler)
        self._previous.clear()

    def returned(self) -> None:
        """The command returned its exit code: from now on a signal is recorded (the command will exit
        2; the hook records its run again as ERR) and said in one line, never raised: nothing could catch it."""
        self._returned = True

    def exiting(self) -> None:
        """The command is done; from now on any interrupt exits 2 at once."""
        self._exiting = True

    @contextlib.contextmanager
    def running(self, containment: Containment) -> Iterator[None]:
        """A run is open: signals stop its samples (see the module docstring)."""
        self._containment, self._phase = containment, "running"
        try:
            yield
        finally:
            self._containment, self._phase = None, "after"

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        self.received.append(name)
        if self._exiting or self._returned:
            line = None
            with contextlib.suppress(Exception):
                line = self._on_exit(name) if self._on_exit is not None else None
            if len(self.received) == 1:  # the first signal: say it, even with no run to record again
                line = line or f"error: interrupted by {name} while exiting"
            if self._exiting:
                exit_now(line)
            if line:
                say(line)
            return
        containment = self._containment
        if containment is None:
            raise Interrupted(name, self._phase)
        if len(self.received) == 1:
            say(f"assay: {name}: stopping samples (again to stop at once)")
            containment.cancel()
            return
        containment.cancel(at_once=True)
        self.stopped_at_once = True
        if containment.closing.is_set():  # the rows are done: let the run's document be written
            return
        raise Interrupted(name, "running")
