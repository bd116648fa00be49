"""Re-judge a stored A/B run: the judge and the gates again, on the evidence on disk, no arm re-run.

The suite's judge and gates are read from the fixture files as they are now
(``--judge`` replaces the judge), the rows from the stored run's evidence
(``evidence/*.jsonl``, the raw rows before any judge scored them) and the
attempts from its folder. The result is a new run whose suites name the run
they re-judged. It runs no sample, so it writes no evidence of its own: each
of its rows names the evidence file it was judged from, relative to the new
run's folder like any row's (``../RUN/evidence/ROW.jsonl``, RUN being the
run whose evidence was read, its folder a sibling of the new one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from fixtures_core.errors import UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.records.evidence import raw_rows
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.records.store import new_run_id
from fixtures_core.runs.close import Rejudging, complete
from fixtures_core.runs.options import WORKDIR, RunOptions, paths_read_from, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder
from fixtures_core.text import excerpt


@dataclass(frozen=True)
class Rejudged:
    """The new run, and what changed since the run it re-judged (fixture files)."""

    run: RunResult
    warnings: tuple[str, ...] = ()


def rejudge(reference: str, options: RunOptions, containment: Containment | None = None) -> Rejudged:
    """Re-judge run ``reference`` (whatever ``Store.resolve_run`` takes) with ``options``' judge, seed and
    baseline."""
    store = store_for(options)
    run_file = store.resolve_run(reference)
    original = load_run(run_file)
    judged = [suite for suite in original.suites if not suite.dry_run]
    if not original.suites:
        raise UsageError(f"run {original.run_id} has no A/B suite to re-judge")
    if not judged:
        raise UsageError(f"run {original.run_id} is a dry run: no arm ran, there is nothing to judge")
    evidence_run = judged[0].evidence_run or original.run_id
    seed = options.seed
    if seed is None:
        seed = next((s.judge.seed for s in judged if s.judge is not None), None)
    recorded = Recorded(run_file, original.options)
    options = replace(
        options,
        paths=paths_read_from(recorded.texts("paths"), original.options.get(WORKDIR)),
        filter=recorded.globs("filter"),
        repeat=recorded.count("repeat"),
        k=options.k if options.k is not None else recorded.count("k"),
        group_by=options.group_by or recorded.texts("group_by"),
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
    recorder = Recorder(store, new_run_id(), planned.matrix, evidence_run=evidence_run)
    rows = [evidence[spec.id] for spec in planned.matrix.rows]
    run = complete(
        recorder,
        options,
        rows,
        baseline=planned.baseline,
        containment=containment,
        rejudging=Rejudging(original.run_id, evidence_run),
    )
    workdir = original.options.get(WORKDIR)
    before = {Path(paths_read_from([f.file], workdir)[0]).as_posix(): f.sha256 for f in original.fixtures}
    warnings = tuple(
        f"fixture {f.file} changed since run {original.run_id}: its judge and gates are read as they are now"
        for f in run.fixtures
        if before.get(f.file) not in (None, f.sha256)
    )
    return Rejudged(run, warnings)


@dataclass(frozen=True)
class Recorded:
    """The options a run file recorded, read back; a value of the wrong type is a UsageError naming
    the file and the option (an edited or damaged run file), never an option silently dropped."""

    run_file: Path
    options: Mapping[str, object]

    def texts(self, name: str) -> tuple[str, ...]:
        value = self.options.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._wrong(name, "a list of strings", value)
        return tuple(value)

    def globs(self, name: str) -> tuple[str, ...]:
        """A list of strings, or one string (how run files recorded one ``--filter``)."""
        value = self.options.get(name, [])
        if isinstance(value, str):
            return (value,)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self._wrong(name, "a string or a list of strings", value)
        return tuple(value)

    def flag(self, name: str) -> bool:
        value = self.options.get(name, False)
        if not isinstance(value, bool):
            raise self._wrong(name, "true or false", value)
        return value

    def count(self, name: str) -> int | None:
        value = self.options.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self._wrong(name, "a whole number >= 1", value)
        return value

    def _wrong(self, name: str, expected: str, value: object) -> UsageError:
        return UsageError(
            f"{self.run_file}: recorded option '{name}' must be {expected}, got {excerpt(repr(value), 300)}: "
            "the run file was edited or is damaged"
        )
