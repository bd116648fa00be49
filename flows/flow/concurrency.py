"""``limits`` on the Prefect engine: Prefect's global concurrency limits, one per limited value.

A fixture's ``limits: {provider: 2}`` holds within one process through the
run's own slots (``fixtures_core.execution.slots``). Across processes (two
flow runs, two workers taking shards of one nightly matrix) it holds through
the Prefect server: each limited value gets a global concurrency limit named
``assay:PROPERTY=VALUE`` (a rate, ``assay:PROPERTY=VALUE:rate``, with slot
decay), created when a run first needs it and left on the server, where the
UI lists it (Concurrency) with its slots in use. A limit that already exists
keeps the value set on the server (a team may tune it there); a run whose
fixture says otherwise logs both. Runs that start together may create one
limit at once: one creation wins, and the others read it back (a conflict, or
a server error on it, is never the run's error).

A sample takes its slots just before it starts and gives them back when it
ends. A sample that finds every slot held says what it waits for ("waiting for
provider=claude (2 of 2 held)") and asks again as soon as a slot looks free
(``flows.flow.freed_slots``: within a fraction of a second); meanwhile it
looks at the row's stop reasons (its time budget among them) every quarter
second. Processes take turns: once a process gave back a slot, its own next
sample of that limit waits as long as other processes' waiters take to look
at the limit (``FreedSlots.longest_pause``: 0.125 s on a quick server, at
most 0.625 s) before it asks. Otherwise it would always win (it asks at once,
they look now and then), and another process's samples would wait for all
of its samples, their rows' budgets running out meanwhile.

The increments and releases here do not wait out Prefect's client back-off
on a busy server (503, or a lost connection: two seconds, then four): a
refused increment waits for the next free slot like a locked one, and a
release is tried again at once, a few times.

Slots are held through leases that this process renews while the sample
runs, so a run that dies stops renewing; the lease guard (``flows.server.lease_guard``)
gives a dead run's leases back at once rather than when they expire.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from uuid import UUID

import httpx
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.client.schemas.responses import GlobalConcurrencyLimitResponse
from prefect.concurrency.sync import rate_limit
from prefect.context import SettingsContext, get_settings_context
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound, PrefectHTTPStatusError

from fixtures_core.execution.slots import LimitKey
from fixtures_core.spec import Limit
from flows.flow.freed_slots import FreedSlots
from flows.server.lease_guard import LeaseGuard

_BANNED = str.maketrans({ch: "_" for ch in "/%&><"})  # characters Prefect refuses in names
_RATE_WAIT_S = 1.0  # one try at a rate's tokens (Prefect's own wait); between tries, the row's stop reasons
_STOP_LOOK_S = 0.25  # a waiting sample looks at its row's stop reasons this often
_UNHEARD_S = 5.0  # a waiting sample asks again after this long even when no slot looked free
_RELEASE_PAUSES_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # a release the server refused (503) is tried again
_CREATE_PAUSES_S = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0)  # a creation the server failed on: ~16 s of tries
_BUSY = frozenset({423, 503})  # every slot is held; the server is busy (SQLite: "database is locked")
LEASE_S = 60.0  # the shortest lease the server grants
RENEW_S = 15.0  # renewed this often while held: three renewals may fail before a lease lapses


def limit_name(key: LimitKey, rate: bool = False) -> str:
    """``assay:provider=cli``: the global concurrency limit of one limited value (``:rate`` for its rate)."""
    text = f"{key[0]}={key[1]}"
    safe = text.translate(_BANNED)
    if safe != text:  # two values must never share a limit
        safe += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"assay:{safe}{':rate' if rate else ''}"


class GlobalLimits:
    """The Prefect-side ``Gate`` of a run's sample pool.

    ``on_wait`` hears what a sample (the waiter, its first argument) waits for (``provider=claude
    (2 of 2 held)``), and None once it got its slot; ``guard`` learns every lease held, to give them
    back should the run die.
    """

    def __init__(
        self,
        limits: Iterable[Limit],
        keys: Iterable[LimitKey],
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
        on_wait: Callable[[object, str | None], None] | None = None,
        guard: LeaseGuard | None = None,
    ) -> None:
        self._caps = {limit.property: limit.concurrency for limit in limits if limit.concurrency is not None}
        self._rates = {limit.property: limit.rate for limit in limits if limit.rate is not None}
        self._logger = logger
        self._on_wait = on_wait
        self._guard = guard
        self._held: dict[UUID, list[str]] = {}  # each lease held, and the limits it holds a slot of
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._closed = threading.Event()
        self._no_retries = _without_retries()
        # One client for the run's calls, from every thread (httpx's client is thread-safe): a new client per
        # call costs a connection and its settings, tenths of a second on a busy machine, at every handover.
        self._client = get_client(sync_client=True)
        self._client.__enter__()
        self._freed = FreedSlots(self._read_free)
        self._turn_at: dict[str, float] = {}  # when this process may ask again for a limit it gave a slot back of
        try:
            self._ensure(sorted(set(keys)))
        except BaseException:
            self._client.__exit__(None, None, None)
            raise

    def names(self, keys: Iterable[LimitKey]) -> tuple[list[str], list[str]]:
        """The concurrency limits and the rate limits of these values."""
        keys = list(keys)
        caps = [limit_name(key) for key in keys if key[0] in self._caps]
        rates = [limit_name(key, rate=True) for key in keys if key[0] in self._rates]
        return caps, rates

    @contextlib.contextmanager
    def hold(self, keys: tuple[LimitKey, ...], give_up: Callable[[], str | None]) -> Iterator[bool]:
        """Take a slot of every limit of ``keys`` (and a token of every rate) for one sample."""
        caps, rates = self.names(keys)
        if rates and not _keep_trying(lambda: rate_limit(rates, timeout_seconds=_RATE_WAIT_S, strict=True), give_up):
            yield False
            return
        if not caps:
            yield True
            return
        lease = self._acquire(caps, give_up)
        if lease is None:
            yield False
            return
        try:
            yield True
        finally:
            self._release(lease)

    def close(self) -> None:
        """Stop renewing (every sample has given its lease back) and let the guard go."""
        self._closed.set()
        self._freed.close()
        if self._renewer is not None:
            self._renewer.join()
        self._client.__exit__(None, None, None)
        if self._guard is not None:
            self._guard.close()

    @property
    def looks(self) -> int:
        """How many times this run read the limits it waited for."""
        return self._freed.looks

    def _acquire(self, caps: list[str], give_up: Callable[[], str | None]) -> UUID | None:
        """A lease on one slot of each of ``caps``; None when ``give_up`` said why not first."""
        waiting = False
        waiter = object()  # this sample's wait: another sample's slot must not clear what it shows
        try:
            self._wait_for_turn(caps, give_up)
            while give_up() is None:
                lease = self._try(caps)
                if lease is not None:
                    self._keep(lease, caps)
                    return lease
                if not waiting:
                    waiting = True
                    self._say_waiting(caps, waiter)
                self._wait_for_free(caps, give_up)
            return None
        finally:
            if waiting and self._on_wait is not None:
                self._on_wait(waiter, None)

    def _try(self, caps: list[str]) -> UUID | None:
        """Ask once for a slot of each of ``caps``: the lease, or None when one is held (or the server is busy)."""
        with self._no_retries():
            try:
                response = self._client.increment_concurrency_slots_with_lease(
                    names=caps, slots=1, mode="concurrency", lease_duration=LEASE_S
                )
            except PrefectHTTPStatusError as exc:
                if exc.response.status_code in _BUSY:
                    return None
                raise
            except httpx.TransportError:  # a granted lease whose answer was lost is repossessed when it expires
                return None
        return UUID(response.json()["lease_id"])

    def _wait_for_free(self, caps: list[str], give_up: Callable[[], str | None]) -> None:
        """Until a slot of every one of ``caps`` looks free, ``give_up`` has a reason, or ``_UNHEARD_S`` passed."""
        self._freed.wait(caps, _UNHEARD_S, lambda: self._closed.is_set() or give_up() is not None, _STOP_LOOK_S)

    def _wait_for_turn(self, caps: list[str], give_up: Callable[[], str | None]) -> None:
        """A moment after this process gave back a slot of one of ``caps``: the other processes' turn (see the
        module's docstring). It lasts as long as their waiters take to look at the limit on this server."""
        with self._lock:
            turn_at = max((self._turn_at.get(cap, 0.0) for cap in caps), default=0.0)
        while give_up() is None and not self._closed.is_set():
            left = turn_at - time.monotonic()
            if left <= 0:
                return
            self._closed.wait(min(left, _STOP_LOOK_S))

    def _read_free(self, names: list[str]) -> Mapping[str, int]:
        """The free slots of each of these limits (the looker's read: one GET each, no write)."""
        free = {}
        with self._no_retries():
            for name in names:
                with contextlib.suppress(PrefectHTTPStatusError, httpx.TransportError):
                    found = self._client.read_global_concurrency_limit_by_name(name)
                    free[name] = found.limit - found.active_slots if found.active else 1
        return free

    def _say_waiting(self, caps: list[str], waiter: object) -> None:
        parts = []
        for name in caps:
            with contextlib.suppress(Exception):
                found = self._client.read_global_concurrency_limit_by_name(name)
                parts.append(f"{name.removeprefix('assay:')} ({found.active_slots} of {found.limit} held)")
        text = "waiting for " + (", ".join(parts) or ", ".join(caps))
        if self._logger is not None:
            self._logger.info(text)
        if self._on_wait is not None:
            self._on_wait(waiter, text)

    def _keep(self, lease: UUID, caps: list[str]) -> None:
        with self._lock:
            self._held[lease] = caps
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="assay-leases", daemon=True)
                self._renewer.start()
        if self._guard is not None:
            self._guard.hold(lease)

    def _release(self, lease: UUID) -> None:
        """Give the lease back (a busy server is asked again at once, a few times); a release that never got
        through stays with the lease guard and the lease's expiry."""
        with self._lock:
            caps = self._held.pop(lease, [])
        with self._no_retries():
            for pause in (*_RELEASE_PAUSES_S, None):
                try:
                    self._client.release_concurrency_slots_with_lease(lease)
                    break
                except (PrefectHTTPStatusError, httpx.TransportError) as exc:
                    if not _worth_another_try(exc) or pause is None:
                        raise
                time.sleep(pause)
        if self._guard is not None:
            self._guard.free(lease)
        turn_at = time.monotonic() + self._freed.longest_pause()
        with self._lock:
            self._turn_at.update(dict.fromkeys(caps, turn_at))

    def _renew(self) -> None:
        """Renew every lease held, well before it would lapse, until the run closes."""
        while not self._closed.wait(RENEW_S):
            with self._lock:
                held = sorted(self._held)
            if not held:
                continue
            for lease in held:
                try:
                    self._client.renew_concurrency_lease(lease_id=lease, lease_duration=LEASE_S)
                except Exception as exc:  # the next renewal may still make it; the lease lasts LEASE_S
                    if self._logger is not None:
                        self._logger.warning(f"could not renew a concurrency slot's lease: {exc}")

    def _ensure(self, keys: list[LimitKey]) -> None:
        wanted = {limit_name(k): (self._caps[k[0]], 0.0) for k in keys if k[0] in self._caps}
        for key in keys:
            rate = self._rates.get(key[0])
            if rate is not None:
                wanted[limit_name(key, rate=True)] = (rate.count, rate.count / rate.per_s)
        if not wanted:
            return
        for name, (limit, decay) in wanted.items():
            create = GlobalConcurrencyLimitCreate(name=name, limit=limit, slot_decay_per_second=decay)
            found = ensure_limit(self._client, create)
            if found.limit != limit and self._logger is not None:
                self._logger.warning(
                    f"global concurrency limit {name} allows {found.limit} on the server; this run's fixtures "
                    f"say {limit}: each process keeps to {limit}, all of them together to {found.limit}"
                )


def ensure_limit(
    client: SyncPrefectClient, wanted: GlobalConcurrencyLimitCreate, pauses: Iterable[float] = _CREATE_PAUSES_S
) -> GlobalConcurrencyLimitResponse:
    """The global concurrency limit ``wanted.name`` as the server has it, created as ``wanted`` when missing.

    Runs that start together create it at once, and all but one creation fail: 409 from a server that
    says so, a 5xx or a lost connection from one that failed on it (SQLite, PostgreSQL's unique name).
    None of that is an error here: the limit is read again, and created again after a pause (with jitter)
    only while it is still missing. Only a server that keeps failing for ``pauses`` raises (its last error),
    and at once an answer that no try can change (401, 422). An increment of a limit that does not exist
    succeeds holding nothing, so this returns only a limit read back from the server.
    """
    jitter = random.Random()  # spreads the runs' tries apart; no figure depends on it
    for pause in pauses:
        try:
            return client.read_global_concurrency_limit_by_name(wanted.name)
        except ObjectNotFound:
            pass
        except (PrefectHTTPStatusError, httpx.TransportError) as exc:
            if not _worth_another_try(exc):
                raise
            time.sleep(pause * jitter.uniform(0.5, 1.5))
            continue
        try:
            client.create_global_concurrency_limit(wanted)
        except ObjectAlreadyExists:
            continue  # another run created it a moment ago: read it
        except (PrefectHTTPStatusError, httpx.TransportError) as exc:
            if not _worth_another_try(exc):
                raise
            time.sleep(pause * jitter.uniform(0.5, 1.5))  # it may exist now, or not: read again
    return client.read_global_concurrency_limit_by_name(wanted.name)


def _worth_another_try(exc: Exception) -> bool:
    """A lost connection, or a server that failed (5xx): the same request may well succeed a moment later."""
    return not isinstance(exc, PrefectHTTPStatusError) or exc.response.status_code >= 500


def _without_retries() -> Callable[[], contextlib.AbstractContextManager[object]]:
    """A context in which Prefect's client does not retry a busy server (503) on its own: the callers
    here know better than its back-off of seconds. Made once: entering it costs nothing."""
    context = get_settings_context()
    settings = context.settings.copy_with_update(updates={"client.max_retries": 0})

    def enter() -> contextlib.AbstractContextManager[object]:
        return SettingsContext(profile=context.profile, settings=settings)

    return enter


def _keep_trying(attempt: Callable[[], object], give_up: Callable[[], str | None]) -> bool:
    """Call ``attempt`` until it does not time out (True) or ``give_up`` gives a reason (False)."""
    while give_up() is None:
        try:
            attempt()
        except TimeoutError:
            continue
        return True
    return False
