"""The rows of a run in flight, so that each row task ends in its final state.

A row's verdict can depend on other rows: a metric compared with a baseline
row fails the row only once that row's aggregate is known. Row tasks post
their raw results on the board; a row whose metrics compare with other rows
waits there for them, then finalizes itself together with them (the same
domain function the run's end uses, on the rows it needs), so its task can
end Failed for a regression instead of Completed.

Rows are submitted baselines first, to one first-in, first-out pool: a row
only ever waits for rows that were taken from the queue before it, so the
waiting never starves the pool.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence

from fixtures_core.analysis.finalize import finalize_rows
from fixtures_core.results import RowResult
from fixtures_core.spec import RowSpec
from fixtures_core.verdicts import row as row_verdict


def baselines_first(rows: Sequence[RowSpec]) -> list[RowSpec]:
    """The rows in their order, except that a row comes after the rows it compares with."""
    by_name = {row.name: row for row in rows}
    ordered: list[RowSpec] = []
    placed: set[str] = set()

    def place(row: RowSpec, trail: frozenset[str]) -> None:
        if row.id in placed:
            return
        for name in sorted(row.compared_baselines()):
            baseline = by_name.get(name)
            if baseline is not None and baseline.id not in trail:  # a cycle places each row once
                place(baseline, trail | {row.id})
        placed.add(row.id)
        ordered.append(row)

    for row in rows:
        place(row, frozenset({row.id}))
    return ordered


class RowBoard:
    """Raw row results as they finish, for the rows that compare with them."""

    def __init__(self, order: Sequence[RowSpec]) -> None:
        self._position = {row.id: i for i, row in enumerate(order)}
        self._by_name = {row.name: row for row in order}
        self._posted: dict[str, RowResult] = {}
        self._changed = threading.Condition()

    def posted(self, row_id: str) -> RowResult | None:
        """The raw result of a row, once posted."""
        with self._changed:
            return self._posted.get(row_id)

    def post(self, row: RowResult) -> None:
        with self._changed:
            self._posted[row.id] = row
            self._changed.notify_all()

    def final(self, spec: RowSpec, raw: RowResult, k: int | None, stop: threading.Event) -> RowResult:
        """``raw`` finalized with the rows it compares with (once they are posted); as far as it
        can be when ``stop`` is set first. The run's end finalizes every row again, for the record."""
        if spec.ab is not None:  # an A/B arm: its verdict needs the judge, at the end of the run (the flow run
            return row_verdict.dry_run_skipped(raw)  # shows it); a dry run's arm ran nothing
        needed = [row for row in self._baselines(spec) if self._position[row.id] < self._position[spec.id]]
        posted = self._wait([row.id for row in needed], stop)
        specs = [row for row in needed if row.id in posted] + [spec]
        results = [posted[row.id] for row in needed if row.id in posted] + [raw]
        return next(row for row in finalize_rows(specs, results, k) if row.id == spec.id)

    def _baselines(self, spec: RowSpec) -> Iterable[RowSpec]:
        return (self._by_name[name] for name in sorted(spec.compared_baselines()) if name in self._by_name)

    def _wait(self, ids: list[str], stop: threading.Event) -> dict[str, RowResult]:
        with self._changed:
            while not all(i in self._posted for i in ids) and not stop.is_set():
                self._changed.wait(timeout=0.2)  # short waits: a cancelled run stops waiting
            return {i: self._posted[i] for i in ids if i in self._posted}
