"""Judge every case of every A/B suite in a run, once all its arms have finished.

A case's arms are separate logical rows (they may run on different workers),
so judging waits for the whole run: sample i of every arm is judged together.
A sample index where an arm errored or did not run is not judged (that arm's
row is ERR already).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.judge import (
    JudgeCall,
    JudgeSettings,
    judge_all,
    judge_command,
    provenance_of,
    rubric_text,
)
from fixtures_core.judgment import Judgment
from fixtures_core.parsing.builtins import suite_template_values
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import RowSpec
from fixtures_core.suite import JudgeSpec, SuiteSpec


@dataclass(frozen=True)
class SuiteJudging:
    """What judging one suite gave: its judgments, the seed that labelled them, the judge's provenance."""

    file: str
    judge: JudgeSpec
    seed: int
    judgments: tuple[Judgment, ...]
    provenance: str | None = None
    command: tuple[str, ...] | None = None  # the judge's command as run, templates expanded (None: it differs per case)


def suites_of(specs: Sequence[RowSpec]) -> list[SuiteSpec]:
    """The suites of these rows, in file order."""
    found: dict[str, SuiteSpec] = {}
    for spec in specs:
        if spec.ab is not None:
            found.setdefault(spec.ab.suite.file, spec.ab.suite)
    return list(found.values())


def new_seed() -> int:
    """A fresh labelling seed, recorded in the run so that it can be reproduced."""
    return random.SystemRandom().randrange(2**32)


def judge_suite(
    suite: SuiteSpec,
    specs: Sequence[RowSpec],
    rows: Sequence[RowResult],
    settings: JudgeSettings,
    containment: Containment,
) -> SuiteJudging:
    """Judge every case of ``suite`` whose arms all ran a sample."""
    assert suite.judge is not None
    judge = suite.judge
    results = {row.id: row for row in rows}
    members = [spec for spec in specs if spec.ab is not None and spec.ab.suite.file == suite.file]
    calls: dict[str, JudgeCall] = {}
    samples: dict[str, dict[int, dict[str, SampleResult]]] = {}
    rubric = rubric_text(judge)
    for case, arms in _cases(members).items():
        first = next(iter(arms.values()))
        assert first.ab is not None
        values = suite_template_values(first.ab.shared, case, first.source_dir)
        calls[case] = JudgeCall(
            judge, judge_command(judge, values), case, first.ab.shared, first.source_dir, rubric, first.ab.checks
        )
        ran = {arm: results[spec.id] for arm, spec in arms.items() if spec.id in results}
        # An arm without a result (it crashed, or was never run) leaves no pair to compare: not judged.
        samples[case] = _complete_samples(ran) if len(ran) == len(arms) else {}
    cwd = next((spec.source_dir for spec in members), ".")
    judgments = judge_all(calls, samples, settings, containment)
    commands = {call.argv for call in calls.values()}
    command = commands.pop() if len(commands) == 1 else None
    provenance = provenance_of(judge, cwd, containment)
    return SuiteJudging(suite.file, judge, settings.seed, tuple(judgments), provenance, command)


def _cases(members: Sequence[RowSpec]) -> dict[str, dict[str, RowSpec]]:
    """Case -> arm -> row spec, in file order."""
    cases: dict[str, dict[str, RowSpec]] = defaultdict(dict)
    for spec in members:
        assert spec.ab is not None
        if spec.ab.arm is not None:
            cases[spec.ab.case][spec.ab.arm] = spec
    return dict(cases)


def _complete_samples(arms: Mapping[str, RowResult]) -> dict[int, dict[str, SampleResult]]:
    """Sample index -> arm -> sample, for indices where every arm has a sample that did not error."""
    if not arms or any(row.status == "SKIP" for row in arms.values()):
        return {}
    by_index: dict[int, dict[str, SampleResult]] = defaultdict(dict)
    for arm, row in arms.items():
        for sample in row.samples:
            if sample.status != "ERR":
                by_index[sample.index][arm] = sample
    return {index: found for index, found in sorted(by_index.items()) if len(found) == len(arms)}
