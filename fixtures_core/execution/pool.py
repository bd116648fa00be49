"""What the rows of one run share while they run.

The sample slots (``slots``), the threads in-flight samples run on, the
budgets (``spending``, ``sample_budget``), an outside limiter (``Gate``: the Prefect engine's
global concurrency limits), each row's rank, and, when a run is resumed,
what it already has.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

from fixtures_core.execution.sample_budget import SampleBudget
from fixtures_core.execution.slots import LimitKey, SampleSlots
from fixtures_core.execution.spending import Spending
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import Limit, RowSpec


class Gate(Protocol):
    """A limiter outside this process that a sample passes before it starts (held while it runs)."""

    def hold(
        self, keys: tuple[LimitKey, ...], give_up: Callable[[], str | None]
    ) -> contextlib.AbstractContextManager[bool]:
        """Hold ``keys``' limits for the sample; the context yields False when ``give_up`` said why not first."""
        ...


@dataclass(frozen=True)
class Resumed:
    """What a resumed run already has: rows that finished (kept whole) and the finished samples of the others."""

    rows: Mapping[str, RowResult] = field(default_factory=dict)
    samples: Mapping[str, tuple[SampleResult, ...]] = field(default_factory=dict)


@dataclass
class SamplePool:
    """The slots, threads, budgets and limits the rows of one run share."""

    slots: SampleSlots
    executor: Executor
    spending: Spending = field(default_factory=Spending)
    gate: Gate | None = None
    ranks: Mapping[str, int] = field(default_factory=dict)
    resumed: Resumed = field(default_factory=Resumed)
    budget: SampleBudget | None = None  # the run's sample budget, shared by its budgeted adaptive rows

    def rank(self, row: RowSpec) -> int:
        """The row's place in the run: freed slots go to the lowest first."""
        return self.ranks.get(row.id, 0)


@contextlib.contextmanager
def sample_pool(
    capacity: int,
    limits: Sequence[Limit] = (),
    spending: Spending | None = None,
    gate: Gate | None = None,
    order: Sequence[RowSpec] = (),
    resumed: Resumed | None = None,
    budget: SampleBudget | None = None,
) -> Iterator[SamplePool]:
    """A pool of ``capacity`` sample slots (and as many threads), ranked in ``order``; closed afterwards."""
    with ThreadPoolExecutor(max_workers=capacity, thread_name_prefix="assay-sample") as executor:
        yield SamplePool(
            slots=SampleSlots(capacity, limits),
            executor=executor,
            spending=spending or Spending(),
            gate=gate,
            ranks={row.id: rank for rank, row in enumerate(order)},
            resumed=resumed or Resumed(),
            budget=budget,
        )
