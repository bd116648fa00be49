"""The run's sample budget (``sampling: {budget: fixed}``, ``--sample-budget N``): the samples that
adaptive rows leave when they stop early go to the rows still undecided, past their max.

Every budgeted row holds a reservation of the samples it may still take up to its max (its k) until
it stops, or reaches its own stop point (its max, or a curtailment: the fixed-k answer is settled).
A sample is counted spent when it is granted, before it starts. A sample is left over when

    total - spent - reserved >= 1

and only a left-over sample is granted past a row's stop point. Every reservation stays covered, so
the rows get their max and the run never spends more than ``total``.

A row at its stop point and still undecided waits for a left-over sample; they go one at a time to
the waiting row whose sequential test is least decided (``sequential.progress``, lowest first; the
earlier row on a tie). A row waits only while rows that have begun still hold reservations (they may
still stop early and leave samples): rows not begun yet need a row thread that a waiting row would
hold, so with rows still to begin it takes only what is left over now. Once nothing can be left
over, the waiting rows stop: the budget is spent.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping, Sequence

from fixtures_core.spec import RowSpec

SPENT = "the sample budget had no sample left for it"  # why a waiting row got no (more) extra samples
_POLL_S = 0.1  # a waiting row looks at its give-up reasons this often


class SampleBudget:
    """The samples a run's budgeted rows may take, and who takes the left-over ones; thread-safe.

    total: the most samples the budgeted rows take together (``budget_total``).
    rows:  the budgeted rows, in the run's order (ties go to the earlier).
    kept:  samples a resumed run already has, per row id (they count as spent).
    done:  rows a resumed run kept whole (they hold no reservation).
    """

    def __init__(
        self, total: int, rows: Sequence[RowSpec], kept: Mapping[str, int] | None = None, done: Collection[str] = ()
    ) -> None:
        kept = kept or {}
        self.total = total
        self._rank = {row.id: rank for rank, row in enumerate(rows)}
        self._spent = sum(kept.get(row.id, 0) for row in rows)
        self._reserved = {row.id: max(row.repeat - kept.get(row.id, 0), 0) for row in rows if row.id not in done}
        self._begun: set[str] = set(done)
        self._waiting: dict[str, tuple[float, int]] = {}
        self._changed = threading.Condition()

    def covers(self, row: RowSpec) -> bool:
        """The row shares this budget."""
        return row.id in self._rank

    @property
    def spent(self) -> int:
        """Samples granted so far (a resumed run's kept ones included)."""
        with self._changed:
            return self._spent

    def begin(self, row: RowSpec) -> None:
        """The row has begun (it holds a row thread): rows may wait for what it leaves."""
        with self._changed:
            self._begun.add(row.id)
            self._changed.notify_all()

    def take(self, row: RowSpec) -> None:
        """One of the row's reserved samples starts."""
        with self._changed:
            if self._reserved.get(row.id, 0) < 1:
                raise RuntimeError(f"row {row.name!r} has no reserved sample left")  # a bug of the caller
            self._reserved[row.id] -= 1
            self._spent += 1

    def release(self, row: RowSpec) -> None:
        """The row takes no more of its reserved samples (it stopped, or reached its stop point):
        what it leaves is left over for the others."""
        with self._changed:
            if self._reserved.get(row.id):
                self._reserved[row.id] = 0
                self._changed.notify_all()

    def finish(self, row: RowSpec) -> None:
        """The row is done, however it ended: it holds nothing any more."""
        with self._changed:
            self._begun.add(row.id)
            self._reserved[row.id] = 0
            self._changed.notify_all()

    def refund(self, row: RowSpec) -> None:
        """An extra sample granted to the row did not start (its row stopped first)."""
        with self._changed:
            self._spent -= 1
            self._changed.notify_all()

    def extra(self, row: RowSpec, progress: float, give_up: Callable[[], str | None]) -> str | None:
        """Wait for a left-over sample for ``row`` (its ``sequential.progress``): None once granted
        (counted spent), else why not: ``give_up()``'s reason, or ``SPENT``."""
        with self._changed:
            self._waiting[row.id] = (progress, self._rank[row.id])
            try:
                while True:
                    reason = give_up()
                    if reason is not None:
                        return reason
                    left = self.total - self._spent - sum(self._reserved.values())
                    if left >= 1 and min(self._waiting, key=self._waiting.__getitem__) == row.id:
                        self._spent += 1
                        return None
                    if left < 1 and not self._may_leave():
                        return SPENT
                    self._changed.wait(_POLL_S)
            finally:
                del self._waiting[row.id]
                self._changed.notify_all()

    def _may_leave(self) -> bool:
        """Samples may still be left over for a waiting row: rows hold reservations, and every one of
        them has begun (it runs, and may stop early; a row not begun needs a thread a waiter holds)."""
        holders = [row_id for row_id, reserved in self._reserved.items() if reserved > 0]
        return bool(holders) and all(row_id in self._begun for row_id in holders)


def budget_total(given: str | None, rows: Sequence[RowSpec]) -> int | None:
    """The run's sample budget: ``--sample-budget N``, or (``fixed``, or rows that say ``budget:
    fixed``) what fixed k spends on the budgeted rows: the sum of their max. None without one."""
    budgeted = [row for row in rows if row.budgeted]
    if not budgeted:
        return None
    if given is not None and given != "fixed":
        return int(given)
    return sum(row.repeat for row in budgeted)
