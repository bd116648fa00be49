"""Backtest a check: recheck each of the last N stored runs of a label with the fixture files as they
are now (``assay recheck --label L --last N``), and find the nights on which the new check changes a
row's answer. Nothing is written to the state folder: each night's recheck closes in a scratch
folder (its report is what is printed), so the history keeps only the nights that ran.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace

from fixtures_core.errors import AssayError, UsageError
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.reports import status_words
from fixtures_core.results import Status
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.recheck import close_recheck, prepare_recheck


@dataclass(frozen=True)
class Night:
    """One stored run, its answer then, and now (None when it could not be rechecked: ``refused`` says why)."""

    number: int  # 1 for the oldest of the nights
    run_id: str
    started_at: str
    then: RunResult
    now: RunResult | None
    refused: str | None = None


@dataclass(frozen=True)
class Flip:
    """A row whose status the new check changes on some nights: each night's number, then and now."""

    name: str
    changes: tuple[tuple[int, Status, Status], ...]


@dataclass(frozen=True)
class Backtest:
    label: str
    nights: tuple[Night, ...]
    flips: tuple[Flip, ...]


def backtest(label: str, last: int, options: RunOptions) -> Backtest:
    """Recheck the ``last`` newest finished runs labelled ``label`` (not rechecks) with ``options``' fixture
    files (none: each run's own) as they are now."""
    if last < 1:
        raise UsageError(f"--last must be at least 1, got {last}")
    store = store_for(options)
    found: list[RunResult] = []
    for run_file in store.runs():
        if len(found) == last:
            break
        if not run_file.is_file():
            continue
        try:
            run = load_run(run_file)
        except AssayError:
            continue  # an unreadable run is no night of this label we can tell
        if run.label == label and run.rechecked is None:
            found.append(run)
    if not found:
        raise UsageError(f"--label {label}: no stored run with this label under {store.root}/runs")
    ordered = sorted(found, key=lambda run: (run.started_at, run.run_id))
    with tempfile.TemporaryDirectory(prefix="assay-backtest-") as scratch:
        nights = tuple(_night(number, run, options, scratch) for number, run in enumerate(ordered, 1))
    return Backtest(label, nights, _flips(nights))


def _night(number: int, run: RunResult, options: RunOptions, scratch: str) -> Night:
    try:
        prepared = prepare_recheck(run.run_id, replace(options, label=None))
    except AssayError as exc:
        return Night(number, run.run_id, run.started_at, run, None, str(exc))
    # Reports go nowhere and the new run into the scratch folder: a backtest leaves the history as it was.
    quiet = replace(prepared.options, out=scratch, html=None, junit=None, summary=None, frame=None)
    now = close_recheck(replace(prepared, options=quiet))
    return Night(number, run.run_id, run.started_at, run, now)


def _flips(nights: tuple[Night, ...]) -> tuple[Flip, ...]:
    changes: dict[str, list[tuple[int, Status, Status]]] = {}
    order: list[str] = []
    for night in nights:
        if night.now is None:
            continue
        then = {row.name: row.status for row in night.then.rows}
        for row in night.now.rows:
            if row.name not in order:
                order.append(row.name)
            before = then.get(row.name)
            if before is not None and before != row.status:
                changes.setdefault(row.name, []).append((night.number, before, row.status))
    return tuple(Flip(name, tuple(changes[name])) for name in order if name in changes)


def backtest_lines(found: Backtest) -> list[str]:
    """What a backtest prints: each night's verdict then and now, then each row whose answer changes."""
    nights = found.nights
    runs = f"its last {len(nights)} runs" if len(nights) > 1 else "its one run"
    lines = [f"backtest of '{found.label}': the fixture files as they are now, on {runs}"]
    for night in nights:
        then = status_words.verdict(night.then.verdict).word
        now = status_words.verdict(night.now.verdict).word if night.now is not None else "not rechecked"
        why = f": {night.refused}" if night.refused else ""
        lines.append(f"  night {night.number:>2}  {night.run_id}  then {then}  now {now}{why}")
    rechecked = sum(1 for night in nights if night.now is not None)
    if not found.flips:
        lines.append(f"no row's answer changes on any of the {rechecked} nights rechecked")
    for flip in found.flips:
        by_status: dict[str, list[int]] = {}
        for number, _then, now in flip.changes:
            by_status.setdefault(now, []).append(number)
        for now, numbers in by_status.items():
            named = ", ".join(str(n) for n in numbers)
            lines.append(
                f"'{flip.name}': {status_words.would_have(now)} on {len(numbers)} of {rechecked} nights: runs {named}"
            )
    return lines
