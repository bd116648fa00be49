"""Resuming a run that was interrupted or killed, from what it left on disk.

When a run starts it writes ``started.json`` beside its evidence: its
options and the digest of every fixture file. ``assay run --resume RUN``
reads it back, checks that the fixture files did not change, and reads the
run's evidence (``evidence/<row>.jsonl``, written as each sample finished):

* a row that finished (its raw result is there) is kept whole, unless the
  interrupt ended it (cancelled samples, an orchestration failure);
* of any other row, every finished sample is kept; a sample the interrupt
  cancelled, or one in flight when the run was killed, runs again.

The resumed run keeps the run id, its folder and its evidence files (new
lines are appended; readers take the last line of each sample), and ends
with one complete ``run.json``.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from fixtures_core.errors import RunFileError, StateError, UsageError
from fixtures_core.execution.pool import Resumed
from fixtures_core.execution.produced import produced_by
from fixtures_core.files import STATE_FOLDER_RULE, own_file_refusal
from fixtures_core.limits import MAX_RUN_JSON_DEPTH, loads_json, read_regular_file
from fixtures_core.records.evidence import read_evidence
from fixtures_core.records.lock import holder
from fixtures_core.records.planted import check_folder, is_real_folder
from fixtures_core.records.rundoc import load_run, write_json_atomic
from fixtures_core.records.store import Store
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import Matrix

STARTED = "started.json"
STARTED_SCHEMA = "assay.started/v1"
_MAX_STARTED_BYTES = 16 * 1024 * 1024
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # a folder name under runs/, never a path


@dataclass(frozen=True)
class Started:
    """What a run recorded when it started."""

    run_id: str
    started_at: str
    options: dict[str, object]
    fixtures: dict[str, str]  # file (as run documents name it) -> sha256
    # row id -> what produced its samples (``execution.produced``); empty in a record made before it was kept
    produced: dict[str, dict[str, str]] = field(default_factory=dict)
    path: str = STARTED  # the record itself, for messages about its fields


def write_started(store: Store, run_id: str, started_at: str, options: dict[str, object], matrix: Matrix) -> None:
    """Record a run's options and fixture digests as it starts (``--resume`` reads them back)."""
    document = {
        "schema": STARTED_SCHEMA,
        "run_id": run_id,
        "started_at": started_at,
        "options": options,
        "fixtures": {f.identity or f.path: f.sha256 for f in matrix.files},
        "produced": {row.id: produced_by(row) for row in matrix.rows},
    }
    write_json_atomic(store.run_dir(run_id) / STARTED, document, own=True)


def resolve_started(store: Store, reference: str) -> Path:
    """The ``started.json`` of a run: a run id, the run's folder (or a file in it), or ``latest``
    (the newest run folder, finished or not)."""
    given = Path(reference)
    candidates = [given / STARTED, given.parent / STARTED] if given.exists() else []
    if reference == "latest":
        check_folder(store.root / "runs")
        folders = sorted(p for p in (store.root / "runs").glob("*") if is_real_folder(p) and (p / STARTED).is_file())
        candidates += [folders[-1] / STARTED] if folders else []
    candidates.append(store.run_dir(reference) / STARTED)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise UsageError(
        f"--resume {reference}: no run with a {STARTED} there or under {store.root}/runs "
        "(give a run id from `assay history`, its folder, or latest)"
    )


def find_started(store: Store, reference: str) -> Started:
    """The start record of a run of this state folder (``--resume REFERENCE``); a record that is
    not one, or names another folder's run, is refused: a resumed run writes only into its own folder."""
    path = resolve_started(store, reference)
    started = read_started(path)
    if not _RUN_ID.fullmatch(started.run_id):
        raise RunFileError(str(path), f"start record with an invalid run id {started.run_id!r}", role=None)
    run_dir = store.run_dir(started.run_id)
    for folder in (store.root / "runs", run_dir, *(run_dir / name for name in ("evidence", "attempts", "judge"))):
        check_folder(folder)  # a symlinked run folder would lead the resumed run's writes elsewhere
    if path.parent.resolve() != store.run_dir(started.run_id).resolve():
        raise UsageError(
            f"--resume {reference}: run {started.run_id} is not in the state folder {store.root} "
            "(give --out the folder it ran with)"
        )
    return started


def read_started(path: Path) -> Started:
    """A run's start record; RunFileError when it is not one."""
    try:
        document = loads_json(read_regular_file(path, _MAX_STARTED_BYTES, STARTED).decode("utf-8"), MAX_RUN_JSON_DEPTH)
    except (OSError, ValueError) as exc:
        raise RunFileError(str(path), f"unreadable start record: {exc}", role=None) from None
    if not isinstance(document, dict) or document.get("schema") != STARTED_SCHEMA:
        raise RunFileError(str(path), f"not an {STARTED_SCHEMA} start record", role=None)
    options, fixtures = document.get("options"), document.get("fixtures")
    if not isinstance(options, dict) or not isinstance(fixtures, dict):
        raise RunFileError(str(path), "start record without options or fixtures", role=None)
    produced = document.get("produced", {})
    if not isinstance(produced, dict) or not all(
        isinstance(parts, dict) and all(isinstance(v, str) for v in parts.values()) for parts in produced.values()
    ):
        raise RunFileError(str(path), "start record whose 'produced' is not row -> part -> digest", role=None)
    return Started(str(document.get("run_id")), str(document.get("started_at")), options, fixtures, produced, str(path))


def check_resumable(store: Store, started: Started) -> None:
    """A run that closed cleanly has nothing to resume: only an incomplete or interrupted one does, and
    only once no process runs it any more."""
    running = holder(store.run_dir(started.run_id))
    if running is not None:
        raise UsageError(
            f"--resume {started.run_id}: the run is still running (pid {running}); wait for it, or stop it first"
        )
    run_file = store.run_file(started.run_id)
    if not run_file.is_file():
        return
    try:
        run = load_run(run_file)
    except RunFileError:
        return  # a torn run.json: the evidence decides
    if run.stopped != "cancelled":
        raise UsageError(
            f"--resume {started.run_id}: the run finished ({run.status}{': ' + run.error if run.error else ''}); "
            "only an interrupted or killed run can be resumed"
        )


def check_fixtures(started: Started, matrix: Matrix) -> None:
    """The fixture files must be the ones the run started with: a resumed run never mixes two versions."""
    now = {f.identity or f.path: f.sha256 for f in matrix.files}
    unrecorded = sorted(set(now) - set(started.fixtures))
    if unrecorded:
        raise UsageError(
            f"--resume {started.run_id}: its start record holds no digest of fixture {unrecorded[0]} (it was edited): "
            "resuming could mix two versions of it; start a new run"
        )
    for file, digest in started.fixtures.items():
        if now.get(file) != digest:
            raise UsageError(
                f"--resume {started.run_id}: fixture {file} changed since the run started (or is gone): "
                "resuming would mix two versions of it; start a new run"
            )


def resumed_rows(store: Store, run_id: str, matrix: Matrix) -> Resumed:
    """What the run's evidence already holds: the rows that finished, and the finished samples of the others."""
    rows: dict[str, RowResult] = {}
    samples: dict[str, tuple[SampleResult, ...]] = {}
    for index, spec in enumerate(matrix.rows):
        path = store.evidence_file(run_id, index, spec.name)
        if not os.path.lexists(path):
            continue
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode):  # a FIFO would hang the appends; a symlink, lead them away
            raise RunFileError(
                str(path), "evidence that is not a regular file (a FIFO, a folder, a symlink): refused", role=None
            )
        if info.st_nlink > 1:  # the appends would land in its other name too (``open_own`` checks again)
            raise StateError(str(path), f"{own_file_refusal(info)}: {STATE_FOLDER_RULE}")
        found, raw = read_evidence(path)
        beyond = [i for i in found if not 0 <= i < spec.most_samples]  # a budgeted row's extras go past repeat
        if beyond:
            raise RunFileError(
                str(path), f"sample index {beyond[0]} outside the row's {spec.most_samples} samples", role=None
            )
        if raw is not None and not _ended_by_interrupt(raw):
            rows[spec.id] = replace(raw, samples=tuple(found[i] for i in sorted(found)))
            continue
        samples[spec.id] = tuple(found[i] for i in sorted(found) if not _cancelled(found[i]))
    return Resumed(rows, samples)


def _cancelled(sample: SampleResult) -> bool:
    return sample.stopped == "cancelled"


def _ended_by_interrupt(row: RowResult) -> bool:
    """A row the interrupt stopped (or an orchestration failure ended) did not finish on its own."""
    return row.stopped in ("cancelled", "crashed")
