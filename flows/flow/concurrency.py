"""``limits`` on the Prefect engine: Prefect's global concurrency limits, one per limited value.

A fixture's ``limits: {provider: 2}`` holds within one process through the
run's own slots (``fixtures_core.execution.slots``). Across processes (two
flow runs, two workers taking shards of one nightly matrix) it holds through
the Prefect server: each limited value gets a global concurrency limit named
``assay:PROPERTY=VALUE`` (a rate, ``assay:PROPERTY=VALUE:rate``, with slot
decay), created when a run first needs it and left on the server, where the
UI lists it (Concurrency) with its slots in use. A limit that already exists
keeps the value set on the server (a team may tune it there); a run whose
fixture says otherwise logs both. A sample takes its slots just before it
starts and gives them back when it ends; waiting for them looks at the row's
stop reasons (its time budget among them) every second, and says what it
waits for ("waiting for provider=claude (2 of 2 held)").

Slots are held through leases that this process renews while the sample
runs, so a run that dies stops renewing; the lease guard (``flows.server.lease_guard``)
gives a dead run's leases back at once rather than when they expire.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from uuid import UUID

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import rate_limit
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound, PrefectHTTPStatusError

from fixtures_core.execution.slots import LimitKey
from fixtures_core.spec import Limit
from flows.server.lease_guard import LeaseGuard

_BANNED = str.maketrans({ch: "_" for ch in "/%&><"})  # characters Prefect refuses in names
_WAIT_S = 1.0  # one try at the server's slots; between tries, the row's stop reasons are looked at
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
        self._held: set[UUID] = set()
        self._lock = threading.Lock()
        self._renewer: threading.Thread | None = None
        self._closed = threading.Event()
        self._ensure(sorted(set(keys)))

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
        if rates and not _keep_trying(lambda: rate_limit(rates, timeout_seconds=_WAIT_S, strict=True), give_up):
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
        if self._renewer is not None:
            self._renewer.join()
        if self._guard is not None:
            self._guard.close()

    def _acquire(self, caps: list[str], give_up: Callable[[], str | None]) -> UUID | None:
        """A lease on one slot of each of ``caps``; None when ``give_up`` said why not first."""
        waiting = False
        waiter = object()  # this sample's wait: another sample's slot must not clear what it shows
        try:
            while give_up() is None:
                with get_client(sync_client=True) as client:
                    try:
                        response = client.increment_concurrency_slots_with_lease(
                            names=caps, slots=1, mode="concurrency", lease_duration=LEASE_S
                        )
                    except PrefectHTTPStatusError as exc:
                        if exc.response.status_code != 423:  # 423 Locked: every slot is held
                            raise
                        if not waiting:
                            waiting = True
                            self._say_waiting(client, caps, waiter)
                        self._closed.wait(_WAIT_S)
                        continue
                lease = UUID(response.json()["lease_id"])
                self._keep(lease)
                return lease
            return None
        finally:
            if waiting and self._on_wait is not None:
                self._on_wait(waiter, None)

    def _say_waiting(self, client: SyncPrefectClient, caps: list[str], waiter: object) -> None:
        parts = []
        for name in caps:
            with contextlib.suppress(Exception):
                found = client.read_global_concurrency_limit_by_name(name)
                parts.append(f"{name.removeprefix('assay:')} ({found.active_slots} of {found.limit} held)")
        text = "waiting for " + (", ".join(parts) or ", ".join(caps))
        if self._logger is not None:
            self._logger.info(text)
        if self._on_wait is not None:
            self._on_wait(waiter, text)

    def _keep(self, lease: UUID) -> None:
        with self._lock:
            self._held.add(lease)
            if self._renewer is None:
                self._renewer = threading.Thread(target=self._renew, name="assay-leases", daemon=True)
                self._renewer.start()
        if self._guard is not None:
            self._guard.hold(lease)

    def _release(self, lease: UUID) -> None:
        with self._lock:
            self._held.discard(lease)
        with get_client(sync_client=True) as client:
            client.release_concurrency_slots_with_lease(lease)
        if self._guard is not None:
            self._guard.free(lease)

    def _renew(self) -> None:
        """Renew every lease held, well before it would lapse, until the run closes."""
        while not self._closed.wait(RENEW_S):
            with self._lock:
                held = sorted(self._held)
            if not held:
                continue
            with get_client(sync_client=True) as client:
                for lease in held:
                    try:
                        client.renew_concurrency_lease(lease_id=lease, lease_duration=LEASE_S)
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
        with get_client(sync_client=True) as client:
            for name, (limit, decay) in wanted.items():
                try:
                    found = client.read_global_concurrency_limit_by_name(name)
                except ObjectNotFound:
                    create = GlobalConcurrencyLimitCreate(name=name, limit=limit, slot_decay_per_second=decay)
                    with contextlib.suppress(ObjectAlreadyExists):  # another run created it a moment ago
                        client.create_global_concurrency_limit(create)
                    continue
                if found.limit != limit and self._logger is not None:
                    self._logger.warning(
                        f"global concurrency limit {name} allows {found.limit} on the server; this run's fixtures "
                        f"say {limit}: each process keeps to {limit}, all of them together to {found.limit}"
                    )


def _keep_trying(attempt: Callable[[], object], give_up: Callable[[], str | None]) -> bool:
    """Call ``attempt`` until it does not time out (True) or ``give_up`` gives a reason (False)."""
    while give_up() is None:
        try:
            attempt()
        except TimeoutError:
            continue
        return True
    return False
