"""Showing a run's progress on stderr while it runs; stdout stays the report's alone.

On a terminal, a rich live panel (redrawn in place, gone when the run ends);
elsewhere (CI logs), one plain line every ``interval`` seconds, and none for
a run shorter than that.
"""

from __future__ import annotations

import threading
from enum import StrEnum
from types import TracebackType

from rich.console import Console
from rich.live import Live

from fixtures_core.reports.progress import Progress, live_view, plain_line

DEFAULT_INTERVAL_S = 30.0


class Mode(StrEnum):
    """How progress is shown: ``auto`` is live on a terminal and plain elsewhere."""

    AUTO = "auto"
    LIVE = "live"
    PLAIN = "plain"
    OFF = "off"


class ProgressDisplay:
    """A context manager that shows ``progress`` on ``console`` for as long as it is open."""

    def __init__(
        self, progress: Progress, console: Console, mode: Mode = Mode.AUTO, interval: float = DEFAULT_INTERVAL_S
    ) -> None:
        self.progress = progress
        self.console = console
        self.mode = (Mode.LIVE if console.is_terminal else Mode.PLAIN) if mode == Mode.AUTO else mode
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None

    def __enter__(self) -> ProgressDisplay:
        if self.mode == Mode.LIVE:
            self._live = Live(
                get_renderable=lambda: live_view(self.progress.snapshot()),
                console=self.console,
                refresh_per_second=4,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        elif self.mode == Mode.PLAIN:
            self._thread = threading.Thread(target=self._lines, name="assay-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._live is not None:
            self._live.stop()

    def _lines(self) -> None:
        while not self._stop.wait(self.interval):
            self.console.print(plain_line(self.progress.snapshot()), markup=False, highlight=False, soft_wrap=True)
