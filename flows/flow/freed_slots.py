"""Hearing that a slot of a Prefect global concurrency limit came free, for the samples of this process that wait.

Prefect queues nobody for a global concurrency limit: a sample that wants a
slot asks (an increment) and is told 423 Locked, and asks again later. Asking
often is not free: every refused increment is a write on the server (its
``denied_slots``), and on SQLite a write waits for every other. So a waiting
sample does not ask again until a slot looks free, and one thread per process
(``FreedSlots``) looks for all of them: while anyone waits, it reads each
limit waited for (a GET, which writes nothing) and wakes as many waiters as
slots are free, oldest first; each woken waiter asks once.

The pause between two looks follows the server: ``LOOK_FACTOR`` times what
a look takes (smoothed), between ``LOOK_MIN_S`` and ``LOOK_MAX_S``, with jitter so
that processes do not look in step. A quick server is looked at about ten
times a second by each waiting process (one GET per limit waited for, a few
milliseconds of the server's time each); a slow or busy one less often, down
to twice a second.
"""

from __future__ import annotations

import contextvars
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

LOOK_MIN_S = 0.1
LOOK_MAX_S = 0.5
LOOK_FACTOR = 2.0  # a look waits at least twice as long as the last ones took: a slow server is asked less
JITTER = 0.25  # each pause is its length times a factor in [1 - JITTER, 1 + JITTER]
_SMOOTHING = 0.3  # weight of the latest look in the answer time: one slow answer does not slow the looks much

# Reads the free slots of some limits: name -> limit minus slots in use (a limit it could not read is left out).
FreeSlots = Callable[[list[str]], Mapping[str, int]]


@dataclass(eq=False)
class _Waiter:
    caps: tuple[str, ...]
    woken: bool = False


class FreedSlots:
    """Waiting samples of one process, woken when a slot of every limit they wait for looks free."""

    def __init__(self, read_free: FreeSlots, rng: random.Random | None = None) -> None:
        self._read_free = read_free
        self._rng = rng or random.Random()  # jitter only: no figure depends on it
        self._changed = threading.Condition()
        self._waiters: list[_Waiter] = []
        self._closed = threading.Event()
        self._looker: threading.Thread | None = None
        self.looks = 0  # how many times the limits were read (what this process cost the server)
        self.answer_s = 0.0  # how long the server takes to answer a look, smoothed (0 before the first)

    def wait(self, caps: Iterable[str], timeout: float, stop: Callable[[], bool], every: float) -> bool:
        """Until a slot of every limit of ``caps`` looks free (True: ask for it now); False once ``timeout``
        passed or ``stop()`` (asked every ``every`` seconds) says so."""
        waiter = _Waiter(tuple(caps))
        until = time.monotonic() + timeout
        with self._changed:
            self._waiters.append(waiter)
            self._start_looking()
            self._changed.notify_all()  # the looker may be idle
            try:
                while not (waiter.woken or self._closed.is_set() or stop()):
                    left = until - time.monotonic()
                    if left <= 0:
                        break
                    self._changed.wait(min(every, left))
                return waiter.woken
            finally:
                self._waiters.remove(waiter)

    def close(self) -> None:
        self._closed.set()
        with self._changed:
            self._changed.notify_all()
        if self._looker is not None:
            self._looker.join()

    def _start_looking(self) -> None:
        if self._looker is None:
            # The caller's context goes along: its Prefect settings say which API to read.
            context = contextvars.copy_context()
            self._looker = threading.Thread(target=context.run, args=(self._look,), name="assay-freed-slots",
                                            daemon=True)  # fmt: skip
            self._looker.start()

    def _wake(self, free: dict[str, int]) -> None:
        """Wake waiters, oldest first, as long as every limit each waits for has a free slot left for it."""
        for waiter in self._waiters:
            if not waiter.woken and all(free.get(cap, 0) > 0 for cap in waiter.caps):
                waiter.woken = True
                for cap in waiter.caps:
                    free[cap] -= 1
        self._changed.notify_all()

    def _waited_for(self) -> list[str]:
        return sorted({cap for waiter in self._waiters if not waiter.woken for cap in waiter.caps})

    def _look(self) -> None:
        while not self._closed.is_set():
            with self._changed:
                idle = not self._waited_for()
                self._changed.wait_for(lambda: self._closed.is_set() or bool(self._waited_for()))
            if idle:  # a waiter was just refused: a slot is no sooner free than at the next look
                self._closed.wait(self.pause(self.answer_s))
            with self._changed:
                names = self._waited_for()
            if self._closed.is_set():
                return
            if not names:
                continue
            began = time.monotonic()
            try:
                free = dict(self._read_free(names))
            except Exception:  # noqa: BLE001 - a busy server: the waiters still ask now and then on their own
                free = {}
            took = time.monotonic() - began
            self.answer_s = took if not self.looks else (1 - _SMOOTHING) * self.answer_s + _SMOOTHING * took
            self.looks += 1
            with self._changed:
                self._wake(free)
            self._closed.wait(self.pause(self.answer_s))

    def pause(self, took: float) -> float:
        """How long to wait before the next look at a server that answers in ``took`` seconds."""
        return _base_pause(took) * self._rng.uniform(1 - JITTER, 1 + JITTER)

    def longest_pause(self) -> float:
        """The longest a looker waits between two looks at this server (by this process's looks so far): how
        long a slot must stay free for every waiting process to see it."""
        return _base_pause(self.answer_s) * (1 + JITTER)


def _base_pause(took: float) -> float:
    return min(LOOK_MAX_S, max(LOOK_MIN_S, LOOK_FACTOR * took))
