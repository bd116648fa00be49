"""Recheck a stored run: the fixture files' checks as they are now, on the samples the run stored,
and no sample command started (``assay recheck RUN [FIXTURE...]``).

The rows are planned from the fixture files as they are now (the run's own, or those given), each
matched by file and name with the run's raw rows (``evidence/*.jsonl``, read back by
``records.evidence``) and checked again by ``execution.recheck_rows``; the run then closes as any
run does (``runs.close``: metrics, thresholds, baseline rows, pass rates, ``--baseline``), into a new
run whose document names its source (``rechecked``). It runs no sample, so it writes no evidence of
its own: its rows name the source run's evidence files (``../RUN/evidence/ROW.jsonl``).

Everything that can be wrong with the input is found before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from fixtures_core.errors import RunFileError, UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.recheck_rows import recheck_row
from fixtures_core.records.evidence import raw_rows
from fixtures_core.records.resume import STARTED, read_started
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.records.store import Store, new_run_id
from fixtures_core.results import RowResult
from fixtures_core.runs.close import complete
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import Plan, plan
from fixtures_core.runs.recorder import Recorder
from fixtures_core.runs.rejudge import Recorded


@dataclass(frozen=True)
class Rechecked:
    """The new run."""

    run: RunResult


@dataclass(frozen=True)
class PreparedRecheck:
    """A recheck whose input was all found sound, nothing written yet: the new run's id, its options and
    plan, and its rows as checked again (``close_recheck`` finalizes and writes them)."""

    run_id: str
    source: str
    options: RunOptions
    planned: Plan
    rows: tuple[RowResult, ...]


def recheck(reference: str, options: RunOptions, containment: Containment | None = None) -> Rechecked:
    """Recheck run ``reference`` (whatever ``Store.resolve_run`` takes) with the fixture files
    ``options.paths`` (none: the run's own) as they are now; ``options``' baseline and reports."""
    return Rechecked(close_recheck(prepare_recheck(reference, options), containment))


def prepare_recheck(reference: str, options: RunOptions) -> PreparedRecheck:
    """Read and check everything a recheck needs and check the stored rows again; AssayError (one line,
    naming the file) for any input that is wrong, before anything is written."""
    store = store_for(options)
    run_file = store.resolve_run(reference)
    source = load_run(run_file)
    _check_source(store, run_file, source)
    recorded = Recorded(run_file, source.options)
    options = replace(
        options,
        paths=options.paths or recorded.texts("paths"),
        filter=recorded.globs("filter"),
        repeat=recorded.count("repeat"),
        k=options.k if options.k is not None else recorded.count("k"),
        group_by=options.group_by or recorded.texts("group_by"),
        adaptive=recorded.flag("adaptive"),
        recheck=source.run_id,
    )
    if not options.paths:
        raise UsageError(f"run {source.run_id} does not record its fixture paths: name the fixture files")
    planned = plan(options)
    broken = next((spec.error for spec in planned.matrix.rows if spec.error is not None), None)
    if broken is not None:  # a fixture that does not parse checks nothing: say where, write nothing
        raise UsageError(broken)
    if any(spec.ab is not None for spec in planned.matrix.rows):
        raise UsageError("recheck checks matrix rows: an A/B suite is re-judged with `assay rejudge RUN`")
    run_dir = store.run_dir(source.run_id)
    produced = read_started(run_dir / STARTED).produced if (run_dir / STARTED).is_file() else {}
    stored = _stored_rows(run_dir, source)
    rows = tuple(
        recheck_row(spec, stored.get(spec.id), produced.get(spec.id), source.run_id) for spec in planned.matrix.rows
    )
    return PreparedRecheck(new_run_id(), source.run_id, options, planned, rows)


def close_recheck(prepared: PreparedRecheck, containment: Containment | None = None) -> RunResult:
    """Finalize the rechecked rows and write the new run and its reports (``runs.close``)."""
    store = store_for(prepared.options)
    recorder = Recorder(store, prepared.run_id, prepared.planned.matrix, evidence_run=prepared.source)
    return complete(
        recorder, prepared.options, prepared.rows, baseline=prepared.planned.baseline, containment=containment
    )


def _check_source(store: Store, run_file: Path, source: RunResult) -> None:
    """A run whose samples can be checked again: one of this state folder that ran its samples."""
    if source.rechecked is not None:
        raise UsageError(
            f"{run_file}: run {source.run_id} is itself a recheck of {source.rechecked}, which holds the samples: "
            f"recheck {source.rechecked}"
        )
    if source.suites:
        raise UsageError(f"{run_file}: run {source.run_id} has A/B suites: re-judge it with `assay rejudge`")
    if source.dry_run:
        raise UsageError(f"{run_file}: run {source.run_id} is a dry run: no sample ran, there is nothing to check")
    if not (store.run_dir(source.run_id) / "evidence").is_dir():
        raise UsageError(
            f"{run_file}: run {source.run_id} has no folder with its samples under {store.root}/runs "
            "(give --out the state folder it ran in)"
        )


def _stored_rows(run_dir: Path, source: RunResult) -> dict[str, RowResult]:
    """The source run's raw rows with every sample it stored, each checked against its run document: a
    row the document has and the evidence lacks, or whose samples differ, was cut short or edited."""
    found = raw_rows(run_dir)
    for row in source.rows:
        raw = found.get(row.id)
        where = run_dir / (row.evidence or "evidence")
        if raw is None:
            if row.samples or row.evidence:
                raise RunFileError(
                    str(where), f"no finished row '{row.name}' in the evidence: cut short or edited", role=None
                )
            continue
        if [s.index for s in raw.samples] != [s.index for s in row.samples] or [s.status for s in raw.samples] != [
            s.status for s in row.samples
        ]:
            raise RunFileError(
                str(where),
                f"the samples of row '{row.name}' differ from the run document's: cut short or edited",
                role=None,
            )
    return found
