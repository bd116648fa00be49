"""A suite's saved runs, read back from the state folder for trends and "since the previous run".

A run's **suite** is its label when it has one, else the set of fixture files
it ran (as the Prefect artifacts key a run). ``assay trends SUITE`` selects
runs by a label or by one fixture file they ran; without SUITE, the newest
run's suite. The **previous run** of a run is the newest run that started
before it in the same state folder with the same suite. Runs are never
skipped without a word: an incomplete or unreadable run folder among the
selected ones is named in ``History.notes``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

from fixtures_core.analysis.trends import RunPoint, RunStatuses
from fixtures_core.errors import RunFileError
from fixtures_core.limits import MAX_RUN_BYTES, MAX_RUN_JSON_DEPTH, LimitExceeded, loads_json, read_regular_file
from fixtures_core.parsing.parser import fixture_identity
from fixtures_core.records.rundoc import SCHEMA, RunResult, from_document
from fixtures_core.records.store import Store
from fixtures_core.results import Status

DEFAULT_LAST = 14


@dataclass(frozen=True)
class Suite:
    """What selects a suite's runs: a label, or fixture files (a run matches when it ran ``file``, or
    exactly ``files``)."""

    label: str | None = None
    file: str | None = None
    files: frozenset[str] = frozenset()

    def matches(self, label: object, files: Sequence[str]) -> bool:
        """Whether a run with this label and these fixture files belongs to the suite."""
        if self.label is not None and label == self.label:
            return True
        if self.file is not None:
            return self.file in files
        return self.label is None and not label and frozenset(files) == self.files

    @property
    def shown(self) -> str:
        """The suite in words: ``label 'nightly'``, a fixture file, or the files."""
        if self.file is not None:
            return self.file if self.label in (None, self.file) else f"{self.label} (label or fixture file)"
        if self.label is not None:
            return f"label {self.label!r}"
        return ", ".join(sorted(self.files))


def suite_of(run: RunResult) -> Suite:
    """The suite a run belongs to: its label, else its fixture files."""
    if run.label:
        return Suite(label=run.label)
    return Suite(files=frozenset(fixture.file for fixture in run.fixtures))


@dataclass(frozen=True)
class History:
    """Runs of one suite, oldest first, and what was found beside them that could not be read."""

    suite: Suite
    runs: tuple[RunResult, ...]
    notes: tuple[str, ...] = ()
    complete: bool = True  # fewer runs than asked for were found: none of the suite is older


def suite_runs(store: Store, selector: str | None = None, last: int = DEFAULT_LAST) -> History:
    """The last ``last`` runs of a suite under ``store``, oldest first; ``selector`` is a label or a
    fixture file (None: the newest run's suite). RunFileError when no run matches."""
    suite: Suite | None = _selector(selector) if selector is not None else None
    found: list[RunResult] = []
    notes: list[str] = []
    for path in store.runs():  # newest first
        if len(found) >= last:
            break
        run_id = path.parent.name
        if not path.exists():
            notes.append(f"{run_id}: incomplete (no run.json)")
            continue
        try:
            document = _document(path)
        except RunFileError as exc:
            notes.append(f"{run_id}: unreadable ({exc.reason})")
            continue
        label, files = _identity(document)
        if suite is None:
            suite = Suite(label=str(label)) if label else Suite(files=frozenset(files))
        if suite.matches(label, files):
            found.append(_decoded(path, document))
    if suite is None or not found:
        if selector is not None:
            raise RunFileError(selector, f"no saved run of this suite under {store.root}/runs", role="suite")
        raise RunFileError(f"{store.root}/runs", "no saved run", role=None)
    oldest = found[-1].run_id
    kept = [note for note in notes if note.split(":", 1)[0] >= oldest]  # only those among the window's runs
    return History(suite, tuple(reversed(found)), tuple(reversed(kept)), complete=len(found) < last)


def previous_run(store: Store, run: RunResult) -> RunResult | None:
    """The newest run under ``store`` that started before ``run`` (run ids sort by start) with the same
    suite; None when there is none. Unreadable runs are passed over (the run's own report is no place
    to fail for another run's file)."""
    return next(earlier_runs(store, run), None)


def earlier_runs(store: Store, run: RunResult) -> Iterator[RunResult]:
    """The runs under ``store`` of ``run``'s suite that started before it, newest first, read one by one as
    they are asked for; unreadable ones are passed over, as ``previous_run`` does."""
    for path, document in _earlier_documents(store, run):
        try:
            yield _decoded(path, document)
        except RunFileError:
            continue


def earlier_statuses(store: Store, run: RunResult) -> Iterator[RunStatuses]:
    """``earlier_runs`` as a failure's age reads them: each run's id, start and commit and its rows' statuses,
    straight from the run document (a quarter of the time of decoding it whole)."""
    for _path, document in _earlier_documents(store, run):
        yield _statuses(document)


def _earlier_documents(store: Store, run: RunResult) -> Iterator[tuple[Path, Mapping[str, object]]]:
    suite = suite_of(run)
    for path in store.runs():
        if path.parent.name >= run.run_id or not path.exists():
            continue
        try:
            document = _document(path)
        except RunFileError:
            continue
        label, files = _identity(document)
        if suite.matches(label, files):
            yield path, document


_STATUSES = frozenset(get_args(Status))


def _statuses(document: Mapping[str, object]) -> RunStatuses:
    """A run document's id, label, start, commit and status, and each row's status by fixture file and name."""
    found: dict[tuple[str, str], Status] = {}
    fixtures = document.get("fixtures")
    for fixture in fixtures if isinstance(fixtures, list) else []:
        rows = fixture.get("rows") if isinstance(fixture, Mapping) else None
        for row in rows if isinstance(rows, list) else []:
            status = row.get("status") if isinstance(row, Mapping) else None
            if status in _STATUSES:
                found[(str(row.get("file")), str(row.get("name")))] = cast(Status, status)
    environment = document.get("environment")
    git = environment.get("git") if isinstance(environment, Mapping) else None
    commit = git.get("commit") if isinstance(git, Mapping) else None
    label = document.get("label")
    point = RunPoint(
        run_id=str(document.get("run_id")),
        label=str(label) if label else None,
        started_at=str(document.get("started_at", "")),
        commit=str(commit) if commit else None,
        verdict=str(document.get("status", "")),
    )
    return RunStatuses(point, found)


def _selector(text: str) -> Suite:
    """A label, or a fixture file named as runs name it (relative to its git work tree) when it exists."""
    path = Path(text)
    return Suite(label=text, file=fixture_identity(path) if path.exists() else text)


def _identity(document: Mapping[str, object]) -> tuple[object, list[str]]:
    fixtures = document.get("fixtures")
    files = [str(f.get("file")) for f in fixtures if isinstance(f, Mapping)] if isinstance(fixtures, list) else []
    return document.get("label"), files


def _document(path: Path) -> Mapping[str, object]:
    """A run document's JSON (cached by file identity: a run's reports read its previous run more than once)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise RunFileError(str(path), f"cannot read: {exc.strerror or exc}") from None
    return _read(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _read(path: str, _mtime_ns: int, _size: int) -> Mapping[str, object]:
    try:
        data = read_regular_file(Path(path), MAX_RUN_BYTES, "run document")
        document = loads_json(data.decode("utf-8"), MAX_RUN_JSON_DEPTH)
    except (LimitExceeded, OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise RunFileError(path, f"cannot read: {reason}"[:200]) from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise RunFileError(path, f"not an {SCHEMA} run document")
    return document


def _decoded(path: Path, document: Mapping[str, object]) -> RunResult:
    return from_document(document, str(path))  # it copies what it changes: the cached document stays as read
