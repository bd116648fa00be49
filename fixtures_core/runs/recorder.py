"""A run's evidence, written as it is produced: each sample, then each row's raw result.

An engine (the local thread pool, or the Prefect flow) only decides where ``rows.run_row``
executes; every engine runs its rows through ``run_recorded_row``."""

from __future__ import annotations

import os
import shutil
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from fixtures_core.errors import AssayError, UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import Resumed, SamplePool
from fixtures_core.execution.rows import RunSettings, SampleRunner, crashed_row, run_row
from fixtures_core.files import repair_torn_tail
from fixtures_core.records.lock import RunLock
from fixtures_core.records.resume import write_started
from fixtures_core.records.rundoc import DaskCluster, RunResult, utc_now
from fixtures_core.records.shareable import shareable_row, shareable_sample
from fixtures_core.records.store import Store
from fixtures_core.reports.progress import ProgressListener
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import Plan
from fixtures_core.spec import Matrix, RowSpec


@dataclass
class Recorder:
    """Writes a run's evidence as it is produced (each sample, then each row's raw result)
    and tells a listener (the progress display) after each write."""

    store: Store
    run_id: str
    matrix: Matrix
    started_at: str = field(default_factory=utc_now)
    listener: ProgressListener | None = None
    resumed: Resumed | None = None  # what a resumed run already has (its evidence is written)
    evidence_run: str | None = None  # a re-judged run's: the run whose evidence its rows were read from
    dask: DaskCluster | None = None  # the Dask cluster the run's samples run on, once it is ready

    def __post_init__(self) -> None:
        self._index = {row.id: i for i, row in enumerate(self.matrix.rows)}
        self._lock: RunLock | None = None
        self._closing_lock = threading.Lock()
        self._closer: int | None = None
        self._closed_event = threading.Event()
        self._closed_run: RunResult | None = None
        if self.evidence_run is None:  # a re-judged run runs no sample: it has no evidence of its own
            self.store.prepare_evidence(self.run_id)
            self._lock = RunLock(self.store.run_dir(self.run_id))
            running = self._lock.acquire()
            if running is not None:
                raise UsageError(f"run {self.run_id} is still running (pid {running}): wait for it, or stop it")
            if self.resumed is not None:  # a line torn by the crash (a full disk) would swallow the next one
                for index, row in enumerate(self.matrix.rows):
                    path = self.store.evidence_file(self.run_id, index, row.name)
                    if path.is_file():
                        repair_torn_tail(path)

    def release(self) -> None:
        """The run is closed: another process may resume it (its lock is let go)."""
        if self._lock is not None:
            self._lock.release()

    def reserve_close(self) -> bool:
        """Make the calling thread the one that closes the run (writes its document); False when
        another thread already is. The first wins: two closes would write two different answers."""
        with self._closing_lock:
            if self._closer is None:
                self._closer = threading.get_ident()
            return self._closer == threading.get_ident()

    def closed(self, run: RunResult) -> None:
        """The run's document is written: those waiting for it get it."""
        self._closed_run = run
        self._closed_event.set()

    def wait_closed(self, timeout: float | None = None) -> RunResult | None:
        """The run as the thread that closes it recorded it (None when it did not within ``timeout``)."""
        self._closed_event.wait(timeout)
        return self._closed_run

    def on_row_start(self, row: RowSpec) -> None:
        if self.listener is None:
            return
        self.listener.row_started(row)
        if self.resumed is not None:  # the samples a resumed run kept count as done
            kept = self.resumed.rows[row.id].samples if row.id in self.resumed.rows else ()
            for sample in kept or self.resumed.samples.get(row.id, ()):
                self.listener.sample_finished(row, sample)

    def on_sample(self, row: RowSpec, sample: SampleResult) -> SampleResult:
        """Write a finished sample's evidence; return what its row keeps in memory: the form run.json keeps
        (``shareable_sample``), as the whole output is on disk now. An A/B arm's sample stays whole: its
        judge reads the output."""
        self.store.write_sample(self.run_id, self._index[row.id], row.name, sample)
        if self.listener is not None:
            self.listener.sample_finished(row, sample)
        return sample if row.ab is not None else shareable_sample(sample)

    def on_row(self, row: RowResult) -> None:
        """A row's samples are done; its metrics and comparisons come at finalize."""
        if self.resumed is None or self.resumed.rows.get(row.id) is not row:  # a kept row is on disk already
            self.store.write_row(self.run_id, self._index[row.id], row)
        if self.listener is not None:
            self.listener.row_finished(row)

    def shareable(self, row: RowResult) -> RowResult:
        """``row`` as the run document keeps it: shareable samples, and the evidence file of its raw output."""
        return replace(shareable_row(row), evidence=self._evidence_of(row))

    def _evidence_of(self, row: RowResult) -> str | None:
        """Where a row's raw output is, relative to the run's folder (None when nothing was written).

        A re-judged run's rows point into the run they were read from, whose folder is a sibling of
        this one: ``../RUN/evidence/ROW.jsonl`` (``row.evidence`` is relative to that run's folder).
        """
        if self.evidence_run is None:
            path = self.store.evidence_file(self.run_id, self._index[row.id], row.name)
        elif row.evidence is not None:
            path = self.store.run_dir(self.evidence_run) / row.evidence
        else:
            return None
        return Path(os.path.relpath(path, self.store.run_dir(self.run_id))).as_posix() if path.is_file() else None


def run_recorded_row(
    row: RowSpec,
    settings: RunSettings,
    containment: Containment,
    recorder: Recorder,
    pool: SamplePool | None = None,
    sample_runner: SampleRunner | None = None,
) -> RowResult:
    """Run one row and record its raw result; every engine runs its rows through here.

    Anything that raises on the way (a bug, an evidence write that fails) makes the row ERR
    (``crashed_row``): a row whose raw result is not on disk is not reported as it ran, and
    the run goes on with its other rows.
    """
    try:
        recorder.on_row_start(row)
        result = run_row(row, settings, containment, sample_runner, recorder.on_sample, pool)
        recorder.on_row(result)
    except Exception as exc:
        return crashed_row(row, exc)
    return result


def open_run(options: RunOptions, run_id: str, planned: Plan, listener: ProgressListener | None = None) -> Recorder:
    """The recorder of a run that starts now (recording its options for ``--resume``), or that resumes."""
    store = store_for(options)
    if planned.resumed is not None:
        return Recorder(store, run_id, planned.matrix, planned.started_at or utc_now(), listener, planned.resumed)
    recorder: Recorder | None = None
    try:
        recorder = Recorder(store, run_id, planned.matrix, listener=listener)
        write_started(store, run_id, recorder.started_at, options.recorded(), planned.matrix)
    except OSError as exc:  # a full disk, most often: leave no folder that looks like a run to resume
        if recorder is not None:
            recorder.release()
        shutil.rmtree(store.run_dir(run_id), ignore_errors=True)
        where = exc.filename or store.run_dir(run_id)
        raise AssayError(
            f"{where}: {exc.strerror or exc}: the run could not start (nothing ran; its folder "
            f"{store.run_dir(run_id)} was removed)"
        ) from None
    return recorder
