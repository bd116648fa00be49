"""The A/B stage of closing a run, the same for every engine: judge, score, gate, report.

``runs.close.complete`` calls ``judge_run`` on the raw rows (every arm of every
case has finished by then), finalizes the scored rows, then ``suite_outcomes``
gives each suite's ship-gate section and each arm row how it ended its case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from fixtures_core.analysis.baseline import RunFacts
from fixtures_core.analysis.shipgate import (
    JudgeRecord,
    SuiteOutcome,
    apply_judgments,
    suite_outcome,
)
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.judge import JudgeSettings, command_provenance, rubric_digest
from fixtures_core.execution.judging import SuiteJudging, judge_suite, new_seed, suites_of
from fixtures_core.files import write_text_atomic
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.shareable import shareable_suite
from fixtures_core.reports import markdown
from fixtures_core.results import RowResult
from fixtures_core.spec import RowSpec
from fixtures_core.suite import SuiteSpec

REPORT = "report.md"


@dataclass(frozen=True)
class Judged:
    """Rows after judging: specs with the score metric, rows with their scores, the judgings, and per
    suite file the model each arm said it ran (``arms.ARM.model``, or its ``provenance`` command's output)."""

    specs: list[RowSpec]
    rows: list[RowResult]
    judgings: list[SuiteJudging]
    models: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgingDirs:
    """Where judging reads attempts and writes its files, and which run it belongs to."""

    run_dir: Path
    evidence_dir: Path
    run_id: str


def judge_run(
    specs: Sequence[RowSpec],
    rows: Sequence[RowResult],
    dirs: JudgingDirs,
    containment: Containment,
    parallel: int,
    seed: int | None = None,
    skip: bool = False,
) -> Judged:
    """Judge every suite with a judge (``skip`` for a dry run or an interrupted run)."""
    judgings = []
    models = {suite.file: arm_models(suite, specs, containment) for suite in suites_of(specs)} if not skip else {}
    if not skip:
        for suite in suites_of(specs):
            if suite.judge is None:
                continue
            labelling = seed if seed is not None else suite.judge.seed if suite.judge.seed is not None else new_seed()
            settings = JudgeSettings(dirs.run_dir, dirs.evidence_dir, labelling, dirs.run_id, parallel)
            judgings.append(judge_suite(suite, specs, rows, settings, containment))
    scored_specs, scored_rows = apply_judgments(specs, rows, judgings)
    return Judged(scored_specs, scored_rows, judgings, models)


def arm_models(suite: SuiteSpec, specs: Sequence[RowSpec], containment: Containment) -> dict[str, str]:
    """The model each arm of ``suite`` runs: its ``model``, else what its ``provenance`` command printed."""
    cwd = next((s.source_dir for s in specs if s.ab is not None and s.ab.suite.file == suite.file), ".")
    found = {}
    for arm in suite.arms:
        model = arm.model or command_provenance(arm.provenance, cwd, containment)
        if model:
            found[arm.name] = model
    return found


def suite_outcomes(
    judged: Judged,
    finished: Sequence[RowResult],
    baseline: tuple[str, RunResult] | None = None,
    dry_run: bool = False,
    rejudged: str | None = None,
    evidence_run: str | None = None,
) -> tuple[tuple[SuiteOutcome, ...], list[RowResult]]:
    """The ship-gate section of every suite of the run, in file order; and the rows, each arm row with
    how it ended its case (``verdicts.row.with_case``)."""
    outcomes = []
    ended: dict[str, RowResult] = {}
    for suite in suites_of(judged.specs):
        judging = next((j for j in judged.judgings if j.file == suite.file), None)
        member = next(s for s in judged.specs if s.ab is not None and s.ab.suite.file == suite.file)
        identity = member.fixture_id or member.file
        previous = next((s for s in baseline[1].suites if s.file == identity), None) if baseline else None
        name = baseline[0] if baseline is not None and previous is not None else None
        outcome, arm_rows = suite_outcome(suite, judged.specs, finished, judging, previous, name, dry_run)
        ended.update(arm_rows)
        facts = RunFacts.of(baseline[1]) if baseline is not None and previous is not None else None
        outcome = replace(outcome, arm_models=dict(judged.models.get(suite.file, {})), baseline_facts=facts)
        outcome = _with_record(outcome, judging, rejudged, evidence_run)
        outcomes.append(shareable_suite(outcome))  # a judge's rationale cut as run.json cuts evidence
    return tuple(outcomes), [ended.get(row.id, row) for row in finished]


def _with_record(
    outcome: SuiteOutcome, judging: SuiteJudging | None, rejudged: str | None, evidence_run: str | None
) -> SuiteOutcome:
    record = None
    if judging is not None:
        judge = judging.judge
        reported = [j.provenance for j in judging.judgments if j.provenance]
        record = JudgeRecord(
            command=judging.command or judge.command,  # as it ran: ``{{ .sourceDir }}`` expanded
            seed=judging.seed,
            blind=judge.blind,
            swap=judge.swap,
            axes=judge.axes,
            rubric=judge.rubric,
            rubric_sha256=rubric_digest(judge),
            provenance=tuple(dict.fromkeys([*reported, *([judging.provenance] if judging.provenance else [])])),
            protocol=judge.protocol,
        )
    return replace(outcome, judge=record, rejudged=rejudged, evidence_run=evidence_run)


def write_report(run_dir: Path, run: RunResult) -> None:
    """``report.md`` beside ``run.json`` for a run with suites: the run's one Markdown summary
    (the same as ``--summary`` and the Prefect artifact), ship-gate report included."""
    if run.suites:
        write_text_atomic(run_dir / REPORT, markdown.render(run, (run_dir / "run.json").resolve()))
