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
stop reasons every second.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.concurrency.sync import concurrency, rate_limit
from prefect.exceptions import ObjectAlreadyExists, ObjectNotFound

from fixtures_core.execution.slots import LimitKey
from fixtures_core.spec import Limit

_BANNED = str.maketrans({ch: "_" for ch in "/%&><"})  # characters Prefect refuses in names
_WAIT_S = 1.0  # one try at the server's slots; between tries, the row's stop reasons are looked at


def limit_name(key: LimitKey, rate: bool = False) -> str:
    """``assay:provider=cli``: the global concurrency limit of one limited value (``:rate`` for its rate)."""
    text = f"{key[0]}={key[1]}"
    safe = text.translate(_BANNED)
    if safe != text:  # two values must never share a limit
        safe += "-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return f"assay:{safe}{':rate' if rate else ''}"


class GlobalLimits:
    """The Prefect-side ``Gate`` of a run's sample pool."""

    def __init__(
        self,
        limits: Iterable[Limit],
        keys: Iterable[LimitKey],
        logger: logging.Logger | logging.LoggerAdapter[Any] | None = None,
    ) -> None:
        self._caps = {limit.property: limit.concurrency for limit in limits if limit.concurrency is not None}
        self._rates = {limit.property: limit.rate for limit in limits if limit.rate is not None}
        self._logger = logger
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
        with contextlib.ExitStack() as held:
            if caps:
                enter = lambda: held.enter_context(concurrency(caps, timeout_seconds=_WAIT_S, strict=True))  # noqa: E731
                if not _keep_trying(enter, give_up):
                    yield False
                    return
            yield True

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
