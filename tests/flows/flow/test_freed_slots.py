"""Waiting samples of one process hear of freed slots through one looker, oldest first, and only when every
limit they wait for has a slot; the looker reads only the limits waited for, and nothing while nobody waits.

The limits' free slots come from a table the test sets (what the server's GET would say).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Mapping

import pytest

from flows.flow.freed_slots import JITTER, LOOK_MAX_S, LOOK_MIN_S, FreedSlots
from tests.polling import until


class Server:
    """Free slots per limit, as a look would read them; records what each look asked for. A slot freed
    ``once`` is seen by one look only (a waiter took it right after)."""

    def __init__(self) -> None:
        self.free: dict[str, int] = {}
        self.once: dict[str, int] = {}
        self.asked: list[list[str]] = []
        self.lock = threading.Lock()

    def read(self, names: list[str]) -> Mapping[str, int]:
        with self.lock:
            self.asked.append(list(names))
            seen = {name: self.free[name] + self.once.pop(name, 0) for name in names if name in self.free}
            return seen


@pytest.fixture
def server() -> Server:
    return Server()


@pytest.fixture
def slots(server: Server) -> Iterator[FreedSlots]:
    freed = FreedSlots(server.read, random.Random(1))
    yield freed
    freed.close()


class Wait(threading.Thread):
    """A waiting sample: ``woken`` is what ``FreedSlots.wait`` returned."""

    def __init__(self, slots: FreedSlots, caps: list[str], timeout: float = 60.0) -> None:
        super().__init__(daemon=True)
        self.slots, self.caps, self.timeout = slots, caps, timeout
        self.stop = threading.Event()
        self.woken: bool | None = None

    def run(self) -> None:
        self.woken = self.slots.wait(self.caps, self.timeout, self.stop.is_set, 0.05)


def started(wait: Wait, slots: FreedSlots) -> Wait:
    wait.start()
    assert until(lambda: slots.looks > 0)  # it waits: the looker has looked for it
    return wait


def test_one_free_slot_wakes_the_oldest_waiter_only(server: Server, slots: FreedSlots) -> None:
    server.free["assay:provider=a"] = 0
    first = started(Wait(slots, ["assay:provider=a"]), slots)
    second = Wait(slots, ["assay:provider=a"])
    second.start()
    looked = slots.looks
    assert until(lambda: slots.looks > looked + 1)  # both wait through at least one whole look
    with server.lock:
        server.once["assay:provider=a"] = 1
    first.join(timeout=30)
    assert first.woken is True
    looked = slots.looks
    assert until(lambda: slots.looks > looked + 1)  # the slot is the first's now: the second sees none
    assert second.is_alive()
    second.stop.set()
    second.join(timeout=30)
    assert second.woken is False


def test_a_waiter_of_two_limits_wakes_only_when_both_have_a_slot(server: Server, slots: FreedSlots) -> None:
    server.free.update({"assay:provider=a": 1, "assay:model=x": 0})
    both = started(Wait(slots, ["assay:model=x", "assay:provider=a"]), slots)
    looked = slots.looks
    assert until(lambda: slots.looks > looked + 1)
    assert both.is_alive()
    server.free["assay:model=x"] = 1
    both.join(timeout=30)
    assert both.woken is True


def test_the_looker_reads_only_what_is_waited_for_and_nothing_when_nobody_waits(
    server: Server, slots: FreedSlots
) -> None:
    server.free.update({"assay:provider=a": 0, "assay:provider=b": 0})
    waiting = started(Wait(slots, ["assay:provider=a"]), slots)
    assert all(asked == ["assay:provider=a"] for asked in server.asked)
    waiting.stop.set()
    waiting.join(timeout=30)
    assert waiting.woken is False
    quiet = slots.looks
    idle = threading.Event()
    idle.wait(5 * LOOK_MAX_S)  # (not a timing assertion: a look now would be a bug whenever it came)
    assert slots.looks <= quiet + 1  # at most the look that was under way as the waiter left


def test_a_wait_ends_without_a_slot_when_its_time_is_up(server: Server, slots: FreedSlots) -> None:
    server.free["assay:provider=a"] = 0
    waiting = Wait(slots, ["assay:provider=a"], timeout=0.3)
    waiting.start()
    waiting.join(timeout=30)
    assert waiting.woken is False


def test_a_closed_run_wakes_nobody_and_stops_looking(server: Server) -> None:
    server.free["assay:provider=a"] = 0
    freed = FreedSlots(server.read)
    waiting = started(Wait(freed, ["assay:provider=a"]), freed)
    freed.close()
    waiting.join(timeout=30)
    assert waiting.woken is False


def test_the_pause_between_looks_follows_the_server_within_its_bounds(slots: FreedSlots) -> None:
    # A quick server (1 ms): the shortest pause; 0.1 s: twice that; a slow one (1 s): the longest; all with jitter.
    for took, base in ((0.001, LOOK_MIN_S), (0.1, 0.2), (1.0, LOOK_MAX_S)):
        pauses = [slots.pause(took) for _ in range(200)]
        assert base * (1 - JITTER) <= min(pauses) and max(pauses) <= base * (1 + JITTER), (took, pauses)
    assert slots.longest_pause() == pytest.approx(LOOK_MIN_S * (1 + JITTER))  # no look yet: a quick server
