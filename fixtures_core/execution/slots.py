"""The sample slots of a run: how many samples run at once, and which one starts next.

One pool for the whole run (``--concurrency``), filled from every row. A
freed slot goes to the waiting request of lowest rank, ``(row's place in the
run, sample index)``: the row that opened first gets slots first, so a row
that has started never waits behind a row that started after it, and a row
opens only when no open row can use the slot. A request that a cap holds back
lets the next one go.

Caps (``limits``): per value of a limited property, at most N samples in
flight (``provider: 2``), and at most COUNT starts per period (``10/minute``,
a token bucket holding COUNT tokens, refilled evenly). They hold within this
process; the Prefect engine adds Prefect's global concurrency limits, which
hold across processes.
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fixtures_core.spec import Limit, Rate

LimitKey = tuple[str, str]  # (property, value): one value of a limited property
Rank = tuple[int, int]  # (the row's place in the run, the sample index)
TIME_RAN_OUT = "time"  # what ``acquire`` returns when ``until`` passed first
_POLL_S = 0.1  # waiting requests look again this often (a give-up reason, a deadline, a rate's token)


@dataclass(frozen=True)
class Lease:
    """One granted slot, and the limited values it holds."""

    keys: tuple[LimitKey, ...]


def key_value(value: object) -> str:
    """A property value as a limit key: text as is, anything else as compact JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def limit_keys(limited: Iterable[str], properties: Mapping[str, object]) -> tuple[LimitKey, ...]:
    """``(property, value)`` for each limited property a row has, in property order."""
    return tuple((name, key_value(properties[name])) for name in sorted(set(limited)) if name in properties)


class _Bucket:
    """A token bucket: ``rate.count`` tokens, refilled at ``count / per_s`` per second."""

    def __init__(self, rate: Rate, now: float) -> None:
        self.rate = rate
        self.tokens = float(rate.count)
        self.updated = now

    def refill(self, now: float) -> None:
        gained = (now - self.updated) * self.rate.count / self.rate.per_s
        self.tokens = min(float(self.rate.count), self.tokens + gained)
        self.updated = now

    def seconds_to_token(self, now: float) -> float:
        self.refill(now)
        return max(0.0, (1.0 - self.tokens) * self.rate.per_s / self.rate.count)


class SampleSlots:
    """The run's sample slots and the caps per limited value; thread-safe."""

    def __init__(
        self, capacity: int, limits: Sequence[Limit] = (), clock: Callable[[], float] = time.monotonic
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self._clock = clock
        self._caps = {limit.property: limit.concurrency for limit in limits if limit.concurrency is not None}
        self._rates = {limit.property: limit.rate for limit in limits if limit.rate is not None}
        self._changed = threading.Condition()
        self._free = capacity
        self._in_use: Counter[LimitKey] = Counter()
        self._buckets: dict[LimitKey, _Bucket] = {}
        self._waiting: dict[int, tuple[Rank, tuple[LimitKey, ...]]] = {}
        self._tickets = itertools.count()

    @property
    def limited(self) -> frozenset[str]:
        """The properties that have a cap or a rate."""
        return frozenset(self._caps) | frozenset(self._rates)

    def keys(self, properties: Mapping[str, object]) -> tuple[LimitKey, ...]:
        """The limited values of a row: ``(property, value)`` for each limited property it has."""
        return limit_keys(self.limited, properties)

    def in_flight(self) -> int:
        with self._changed:
            return self.capacity - self._free

    def acquire(
        self, rank: Rank, keys: tuple[LimitKey, ...], give_up: Callable[[], str | None], until: float = math.inf
    ) -> Lease | str:
        """Wait for a slot; or return why not: ``give_up()``'s reason, or ``TIME_RAN_OUT`` once ``until``
        (monotonic) passes. Requests are granted lowest ``rank`` first among those their caps allow."""
        with self._changed:
            ticket = next(self._tickets)
            self._waiting[ticket] = (rank, keys)
            granted = False
            try:
                while True:
                    reason = give_up()
                    if reason is not None:
                        return reason
                    now = self._clock()
                    if now >= until:
                        return TIME_RAN_OUT
                    if self._next_grant(now) == ticket:
                        self._take(keys)
                        granted = True
                        return Lease(keys)
                    self._changed.wait(max(0.0, min(_POLL_S, until - now, self._next_token(keys, now))))
            finally:
                del self._waiting[ticket]
                if not granted:
                    self._changed.notify_all()  # a request behind this one may be next now

    def release(self, lease: Lease) -> None:
        """Give a slot back (and the caps it held)."""
        with self._changed:
            self._free += 1
            for key in lease.keys:
                self._in_use[key] -= 1
            self._changed.notify_all()

    def wake(self) -> None:
        """Waiting requests look at their give-up reasons now (a row stopped, a budget ran out)."""
        with self._changed:
            self._changed.notify_all()

    def _next_grant(self, now: float) -> int | None:
        for ticket, (_rank, keys) in sorted(self._waiting.items(), key=lambda item: item[1][0]):
            if self._allows(keys, now):
                return ticket
        return None

    def _allows(self, keys: tuple[LimitKey, ...], now: float) -> bool:
        if self._free < 1:
            return False
        for key in keys:
            cap = self._caps.get(key[0])
            if cap is not None and self._in_use[key] >= cap:
                return False
            if key[0] in self._rates and self._bucket(key, now).seconds_to_token(now) > 0:
                return False
        return True

    def _next_token(self, keys: tuple[LimitKey, ...], now: float) -> float:
        waits = [self._bucket(key, now).seconds_to_token(now) for key in keys if key[0] in self._rates]
        return max(waits, default=_POLL_S) or _POLL_S

    def _take(self, keys: tuple[LimitKey, ...]) -> None:
        self._free -= 1
        for key in keys:
            self._in_use[key] += 1
            if key[0] in self._rates:
                self._buckets[key].tokens -= 1.0

    def _bucket(self, key: LimitKey, now: float) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(self._rates[key[0]], now)
        return bucket
