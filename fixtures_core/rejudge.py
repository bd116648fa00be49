"""Re-judge a stored A/B run: the judge and the gates again, on the evidence on disk, no arm re-run.

The suite's judge and gates are read from the fixture files as they are now
(``--judge`` replaces the judge), the rows from the stored run's evidence
(``evidence/*.jsonl``, the raw rows before any judge scored them) and the
attempts from its folder. The result is a new run whose suites name the run
they re-judged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from fixtures_core.errors import UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.records.evidence import raw_rows
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.records.store import new_run_id
from fixtures_core.runner import Recorder, Rejudging, RunOptions, complete, plan, store_for


@dataclass(frozen=True)
class Rejudged:
    """The new run, and what changed since the run it re-judged (fixture files)."""

    run: RunResult
    warnings: tuple[str, ...] = ()


def rejudge(reference: str, options: RunOptions, containment: Containment | None = None) -> Rejudged:
    """Re-judge run ``reference`` (a run file, run id or ``latest``) with ``options``' judge, seed and baseline."""
    store = store_for(options)
    original = load_run(store.resolve_run(reference))
    judged = [suite for suite in original.suites if not suite.dry_run]
    if not original.suites:
        raise UsageError(f"run {original.run_id} has no A/B suite to re-judge")
    if not judged:
        raise UsageError(f"run {original.run_id} is a dry run: no arm ran, there is nothing to judge")
    evidence_run = judged[0].evidence_run or original.run_id
    seed = options.seed
    if seed is None:
        seed = next((s.judge.seed for s in judged if s.judge is not None), None)
    recorded = original.options
    options = replace(
        options,
        paths=tuple(str(p) for p in _list(recorded.get("paths"))),
        filter=_text(recorded.get("filter")),
        repeat=_number(recorded.get("repeat")),
        k=options.k if options.k is not None else _number(recorded.get("k")),
        group_by=options.group_by or tuple(str(g) for g in _list(recorded.get("group_by"))),
        seed=seed,
        rejudge=original.run_id,
    )
    if not options.paths:
        raise UsageError(f"run {original.run_id} does not record its fixture paths")
    planned = plan(options)
    evidence = raw_rows(store.run_dir(evidence_run))
    missing = [spec.name for spec in planned.matrix.rows if spec.id not in evidence]
    if missing:
        raise UsageError(
            f"run {evidence_run} has no evidence of row(s) {', '.join(missing[:5])}: "
            "the fixture gained rows since, or the run did not finish them"
        )
    recorder = Recorder(store, new_run_id(), planned.matrix)
    rows = [evidence[spec.id] for spec in planned.matrix.rows]
    run = complete(
        recorder,
        options,
        rows,
        baseline=planned.baseline,
        containment=containment,
        rejudging=Rejudging(original.run_id, evidence_run),
    )
    before = {f.file: f.sha256 for f in original.fixtures}
    warnings = tuple(
        f"fixture {f.file} changed since run {original.run_id}: its judge and gates are read as they are now"
        for f in run.fixtures
        if before.get(f.file) not in (None, f.sha256)
    )
    return Rejudged(run, warnings)


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else []


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
