"""A row's time budget: when it ends, and the one moment an engine may start it again.

The budget starts when the row gets its first slot (``execution.rows``), and
every sample must end by then + the row's ``timeout``. An engine whose samples
run elsewhere (Dask workers) has a way to go before the first sample starts:
a cluster whose workers are still importing their modules takes seconds that
are not the row's. Such an engine restarts the clock when the row's first
sample reaches its worker (``restart``, once): from there the row has its
whole budget. Until then the first deadline bounds the way there too, so a
sample that never gets there does not wait forever.

The clock of the row a sample belongs to is ``current()`` while the sample's
runner runs (``running``): the engine reads it there, the row's own code
keeps it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator


class RowClock:
    """A row's deadline (monotonic) from its budget; thread-safe."""

    def __init__(self, budget_s: float, started: float) -> None:
        self.budget_s = budget_s
        self._lock = threading.Lock()
        self._deadline = started + budget_s
        self._restarted = threading.Event()
        self._claimed = False

    @property
    def deadline(self) -> float:
        with self._lock:
            return self._deadline

    @property
    def restarted(self) -> bool:
        return self._restarted.is_set()

    def extend(self, seconds: float) -> None:
        """Grant ``seconds`` more, counted from now if the budget has run out already."""
        with self._lock:
            self._deadline = max(self._deadline, time.monotonic()) + seconds

    def claim_restart(self) -> bool:
        """True for the first sample that asks: it is the one whose arrival restarts the clock."""
        with self._lock:
            first, self._claimed = not self._claimed, True
            return first

    def restart(self, at: float) -> None:
        """The row's first sample reached where it runs at ``at`` (monotonic): the whole budget from there. Once."""
        with self._lock:
            if self._restarted.is_set():
                return
            self._deadline = max(self._deadline, at + self.budget_s)
            self._restarted.set()

    def wait_restarted(self, timeout: float) -> bool:
        return self._restarted.wait(timeout)


_CURRENT: contextvars.ContextVar[RowClock | None] = contextvars.ContextVar("assay_row_clock", default=None)


@contextlib.contextmanager
def running(clock: RowClock) -> Iterator[None]:
    """The clock of the row whose sample runs in this context."""
    token = _CURRENT.set(clock)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> RowClock | None:
    """The clock of the row whose sample runs here (None outside a sample's runner)."""
    return _CURRENT.get()
