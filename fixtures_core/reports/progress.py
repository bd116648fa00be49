"""Progress of a run in flight: what engines report, what a display shows.

Engines call the three hooks of ``ProgressListener`` as rows start and samples
and rows finish (through ``runs.recorder.Recorder``); ``Progress`` counts them and
hands out snapshots, which ``plain_line`` and ``live_view`` turn into text.
Nothing here writes to a terminal: ``flows.cli.progress`` decides where and how
often, and never on stdout, which carries the report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import Matrix, RowSpec
from fixtures_core.text import visible


class ProgressListener(Protocol):
    """What an engine tells about a run while it runs (every hook may be called from any thread)."""

    def row_started(self, row: RowSpec) -> None: ...

    def sample_finished(self, row: RowSpec, sample: SampleResult) -> None: ...

    def row_finished(self, row: RowResult) -> None: ...

    def waiting(self, waiter: object, text: str | None) -> None:
        """What ``waiter`` (a sample, the rows) waits for outside this process (``waiting for
        provider=claude (2 of 2 held)``); None once it got it. Waiters come and go independently."""
        ...


@dataclass(frozen=True)
class InFlight:
    """A row that has started and not finished: its samples done out of its repeat."""

    name: str
    done: int
    repeat: int


@dataclass(frozen=True)
class Snapshot:
    """The counts of a run at one moment. ``eta_s`` is None until a sample has finished."""

    rows_total: int
    rows_done: int
    samples_total: int
    samples_done: int
    samples_failed: int
    samples_errored: int
    elapsed_s: float
    eta_s: float | None
    in_flight: tuple[InFlight, ...]
    waiting: str | None = None


class Progress:
    """Counts rows and samples of one run as the engine reports them; thread-safe."""

    def __init__(self, matrix: Matrix, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._lock = threading.Lock()
        self._rows_total = len(matrix.rows)
        self._planned = {row.id: row.repeat for row in matrix.rows if not row.skip}  # a skip command decides later
        self._samples_total = sum(self._planned.values())
        self._rows_done = self._samples_done = self._failed = self._errored = 0
        self._running: dict[str, InFlight] = {}
        self._waits: dict[object, str] = {}  # by waiter, the latest last

    def row_started(self, row: RowSpec) -> None:
        if row.skip:
            return
        with self._lock:
            self._running[row.id] = InFlight(row.name, 0, row.repeat)

    def sample_finished(self, row: RowSpec, sample: SampleResult) -> None:
        with self._lock:
            self._samples_done += 1
            self._failed += sample.status == "FAIL"
            self._errored += sample.status == "ERR"
            current = self._running.get(row.id, InFlight(row.name, 0, row.repeat))
            self._running[row.id] = InFlight(current.name, current.done + 1, current.repeat)

    def row_finished(self, row: RowResult) -> None:
        with self._lock:
            self._rows_done += 1
            self._running.pop(row.id, None)
            # A row that stopped early (ERR, budget, cancel, a skip command) runs no more samples.
            self._samples_total -= self._planned.pop(row.id, 0) - len(row.samples)

    def waiting(self, waiter: object, text: str | None) -> None:
        with self._lock:
            self._waits.pop(waiter, None)
            if text is not None:
                self._waits[waiter] = text

    def snapshot(self) -> Snapshot:
        with self._lock:
            elapsed = self._clock() - self._started
            # A budgeted row may take samples past its max, beyond what was planned for it.
            done, total = self._samples_done, max(self._samples_total, self._samples_done)
            eta = elapsed / done * (total - done) if done else None
            return Snapshot(
                rows_total=self._rows_total,
                rows_done=self._rows_done,
                samples_total=total,
                samples_done=done,
                samples_failed=self._failed,
                samples_errored=self._errored,
                elapsed_s=elapsed,
                eta_s=eta,
                in_flight=tuple(self._running.values()),
                waiting=next(reversed(self._waits.values()), None),  # the latest wait still on
            )


def clock_text(seconds: float | None) -> str:
    """``1:02:03``, ``2:03`` or ``0:05``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _in_flight_text(snapshot: Snapshot, limit: int) -> str:
    shown = [f"{visible(r.name)} ({r.done}/{r.repeat})" for r in snapshot.in_flight[:limit]]
    more = len(snapshot.in_flight) - limit
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def plain_line(snapshot: Snapshot) -> str:
    """One line for logs (CI): counts, failures, elapsed and ETA, the rows in flight."""
    s = snapshot
    line = (
        f"assay: {s.samples_done}/{s.samples_total} samples, {s.rows_done}/{s.rows_total} rows done, "
        f"{s.samples_failed} failed, {s.samples_errored} errored; elapsed {clock_text(s.elapsed_s)}, "
        f"eta {clock_text(s.eta_s)}"
    )
    running = _in_flight_text(s, limit=5)
    line += f"; running {running}" if running else ""
    return line + (f"; {visible(s.waiting)}" if s.waiting else "")


def live_view(snapshot: Snapshot) -> RenderableType:
    """The terminal panel: a bar of samples, the counts, and the rows in flight."""
    s = snapshot
    grid = Table.grid(padding=(0, 1))
    grid.add_row(
        Text("assay", style="bold"),
        ProgressBar(total=max(s.samples_total, 1), completed=s.samples_done, width=30),
        Text(f"{s.samples_done}/{s.samples_total} samples  {s.rows_done}/{s.rows_total} rows"),
    )
    failures = Text(f"{s.samples_failed} failed", style="red" if s.samples_failed else "dim")
    failures.append(f"  {s.samples_errored} errored", style="magenta" if s.samples_errored else "dim")
    failures.append(f"  elapsed {clock_text(s.elapsed_s)}  eta {clock_text(s.eta_s)}", style="")
    parts: list[RenderableType] = [grid, failures]
    running = _in_flight_text(s, limit=8)
    if running:
        parts.append(Text(f"running {running}", style="dim", overflow="ellipsis", no_wrap=True))
    if s.waiting:
        parts.append(Text(visible(s.waiting), style="yellow", overflow="ellipsis", no_wrap=True))
    return Group(*parts)
