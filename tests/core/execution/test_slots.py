"""The run's sample slots: capacity, rank order, caps per limited value, rates.

Threads really wait on the slots; the rate's clock is a fake one the test moves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from fixtures_core.execution.slots import TIME_RAN_OUT, Lease, SampleSlots, key_value
from fixtures_core.spec import Limit, Rate


def never() -> str | None:
    return None


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def wait_for(condition: Callable[[], bool]) -> None:
    """Wait (up to 10 s, a bound that only fails the test) until another thread made ``condition`` true."""
    done = threading.Event()
    for _ in range(1000):
        if condition():
            return
        done.wait(0.01)
    raise AssertionError("the condition never held")


def test_capacity_bounds_the_leases_and_a_release_frees_one() -> None:
    slots = SampleSlots(2)
    first = slots.acquire((0, 0), (), never)
    second = slots.acquire((0, 1), (), never)
    assert isinstance(first, Lease) and isinstance(second, Lease)
    assert slots.in_flight() == 2
    # A third request cannot be granted: with a deadline already passed it says the time ran out.
    assert slots.acquire((0, 2), (), never, until=0.0) == TIME_RAN_OUT
    slots.release(first)
    assert isinstance(slots.acquire((0, 2), (), never), Lease)


def test_a_freed_slot_goes_to_the_lowest_rank_waiting() -> None:
    slots = SampleSlots(1)
    held = slots.acquire((0, 0), (), never)
    assert isinstance(held, Lease)
    granted: list[tuple[int, int]] = []
    lock = threading.Lock()

    def request(rank: tuple[int, int]) -> None:
        lease = slots.acquire(rank, (), never)
        assert isinstance(lease, Lease)
        with lock:
            granted.append(rank)
        slots.release(lease)

    # The later row (rank 3) asks first; the earlier row (rank 1) must still be served first.
    threads = [threading.Thread(target=request, args=(rank,)) for rank in [(3, 0), (1, 5), (1, 2)]]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(slots._waiting) == 3)
    slots.release(held)
    for thread in threads:
        thread.join(10)
    assert granted == [(1, 2), (1, 5), (3, 0)]


def test_a_cap_holds_per_value_and_lets_other_values_pass() -> None:
    slots = SampleSlots(4, [Limit("provider", concurrency=1)])
    a = slots.keys({"provider": "a", "model": "x"})
    b = slots.keys({"provider": "b"})
    assert a == (("provider", "a"),)
    held = slots.acquire((0, 0), a, never)
    assert isinstance(held, Lease)
    assert slots.acquire((0, 1), a, never, until=0.0) == TIME_RAN_OUT  # provider a is at its cap
    other = slots.acquire((1, 0), b, never)  # provider b is not, though it ranks later
    assert isinstance(other, Lease)
    slots.release(held)
    assert isinstance(slots.acquire((0, 1), a, never), Lease)


def test_a_request_held_back_by_its_cap_lets_the_next_rank_go() -> None:
    slots = SampleSlots(2, [Limit("provider", concurrency=1)])
    held = slots.acquire((0, 0), (("provider", "a"),), never)
    assert isinstance(held, Lease)
    result: list[object] = []
    blocked = threading.Thread(target=lambda: result.append(slots.acquire((0, 1), (("provider", "a"),), never)))
    blocked.start()
    wait_for(lambda: len(slots._waiting) == 1)
    assert isinstance(slots.acquire((5, 0), (("provider", "b"),), never), Lease)
    slots.release(held)
    blocked.join(10)
    assert isinstance(result[0], Lease)


def test_a_waiting_request_gives_up_with_the_reason_it_is_given() -> None:
    slots = SampleSlots(1)
    held = slots.acquire((0, 0), (), never)
    assert isinstance(held, Lease)
    reason: list[str | None] = [None]
    answer: list[object] = []
    waiter = threading.Thread(target=lambda: answer.append(slots.acquire((0, 1), (), lambda: reason[0])))
    waiter.start()
    wait_for(lambda: len(slots._waiting) == 1)
    reason[0] = "budget exhausted: cost_usd 5 spent of 5 (--budget)"
    slots.wake()
    waiter.join(10)
    assert answer == ["budget exhausted: cost_usd 5 spent of 5 (--budget)"]
    assert slots.in_flight() == 1  # giving up took nothing


def test_a_rate_grants_count_starts_per_period_then_one_per_refill() -> None:
    clock = FakeClock()
    slots = SampleSlots(10, [Limit("provider", rate=Rate(2, 60.0))], clock=clock)
    key = (("provider", "a"),)
    for index in range(2):
        lease = slots.acquire((0, index), key, never)
        assert isinstance(lease, Lease)
        slots.release(lease)
    assert slots.acquire((0, 2), key, never, until=0.0) == TIME_RAN_OUT  # both tokens spent
    clock.now = 29.0  # a token refills every 30 s: not yet, so the request waits (and then gives up)
    asked = iter([None, "gave up"])
    assert slots.acquire((0, 2), key, lambda: next(asked)) == "gave up"
    clock.now = 30.0
    assert isinstance(slots.acquire((0, 2), key, never), Lease)


def test_values_are_keys_as_text_or_compact_json() -> None:
    assert key_value("claude") == "claude"
    assert key_value(2) == "2"
    assert key_value({"b": 1, "a": [1, 2]}) == '{"a":[1,2],"b":1}'


def test_a_pool_needs_at_least_one_slot() -> None:
    with pytest.raises(ValueError, match="capacity must be >= 1"):
        SampleSlots(0)
