"""Margins and ship gates of an A/B suite: per case, each arm's score, the margin, the winner;
per suite, averages, gates (CEL over ``rows`` and ``suite``), known-limit warnings, the verdict.

Rules (seed 04, RUBRIC.md, generalised):

* An arm's score is the mean of its judged samples' totals (the ``score``
  metric of its row); the margin is the first arm of ``compare`` minus the
  second, in points, always the score difference, and the suite averages
  cover every arm's every case (devlyn's harness and seed 04's
  ``summary.json`` have them so).
* An arm is disqualified when a finding of severity ``disqualifier`` was
  found in any of its attempts (a pattern, a forbidden or missing file, too
  many new dependencies, an oracle, a disqualifying outcome), or the judge
  said so. A disqualified arm loses its case whatever its score (seed 04:
  it "overrides score"): the winner is the best arm that was not
  disqualified, and a tie when none is left.
* Each arm's catch rate is the share of the suite's judged cases in which
  the judge reported no critical finding of it; the soft gate on it compares
  with the shipped run's (seed 04: "critical-finding catch-rate decrease vs
  last shipped variant").
* A case with a ``known limit`` range is marked ``known_limit`` for the gates
  (which exclude it by saying so) and warns when its margin is outside the
  range on either side.
* Gates see the cases that ran (SKIP and ERR cases are left out and named).
  A hard gate that is false fails the suite; a soft one warns; a gate that
  cannot be evaluated is an error (it fails closed). A gate that names (in a
  string literal) a case the run did not select is n/a, with the reason.
* In a suite with a hard gate, an arm row's own FAIL (its CEL, exit code) is
  evidence here, not the verdict: a worse arm is what a suite measures
  (``runs.ab.run_status``; without a hard gate it fails the run). ERR anywhere is ERR.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from fixtures_core.analysis.baseline import RunFacts
from fixtures_core.execution.judge import rubric_digest
from fixtures_core.execution.judging import SuiteJudging
from fixtures_core.judgment import ArmScore, Judgment
from fixtures_core.results import CaseResult, MetricValue, RowResult, Status
from fixtures_core.spec import MetricSpec, RowSpec
from fixtures_core.suite import SCORE_METRIC, CaseFacts, JudgeSpec, SuiteSpec
from fixtures_core.verdicts import case as case_verdict
from fixtures_core.verdicts import row as row_verdict
from fixtures_core.verdicts.gates import CaseData, GateInputs, GateResult, evaluate


@dataclass(frozen=True)
class JudgeRecord:
    """Which judge scored a suite, how it was labelled, and what it said it was."""

    command: tuple[str, ...]
    seed: int
    blind: bool
    swap: bool
    axes: tuple[str, ...] = ()
    rubric: str | None = None
    rubric_sha256: str | None = None
    provenance: tuple[str, ...] = ()
    protocol: str = "assay"  # "devlyn": judge.sh's prompt and reply


@dataclass(frozen=True)
class ArmOutcome:
    """One arm of one case.

    score:        mean judge total over the case's judged samples (None without a complete judgment).
    findings:     disqualifier and critical findings of the attempts' checks and of the judge.
    critical:     the judge's critical findings alone (what the catch rate counts).
    verify_score: mean fraction of verification commands that passed.
    duration_ms:  mean wall time of the arm's command over its samples.
    timed_out:    an attempt's arm ran past its own time limit.
    axes_invalid: axis scores the judge gave outside their range (clamped; devlyn's judge protocol).
    disqualified_by: what disqualified it: the rules its attempts broke, the judge's reason.
    result:       how it ended its case (won, lost, tie, disqualified); None without a winner.
    """

    row: str
    status: Status
    score: float | None = None
    axes: Mapping[str, float] = field(default_factory=dict)
    disqualified: bool = False
    findings: tuple[str, ...] = ()
    verify_score: float | None = None
    duration_ms: float | None = None
    baseline_score: float | None = None
    critical: tuple[str, ...] = ()
    baseline_critical: tuple[str, ...] | None = None
    timed_out: bool = False
    axes_invalid: int = 0
    disqualified_by: tuple[str, ...] = ()
    result: CaseResult | None = None


@dataclass(frozen=True)
class CaseOutcome:
    """One table row of a suite across its arms; ``verdict`` is the ship-gate table's column."""

    name: str
    line: int
    status: Status
    verdict: str
    arms: Mapping[str, ArmOutcome]
    margin: float | None = None
    winner: str | None = None
    known_limit: tuple[float, float] | None = None
    baseline_margin: float | None = None
    judgments: tuple[Judgment, ...] = ()
    error: str | None = None
    properties: Mapping[str, object] = field(default_factory=dict)  # what the case's arms share (gates read them)


@dataclass(frozen=True)
class SuiteOutcome:
    """The ship-gate section of one suite in the run document.

    baseline:              the saved run the ``baseline_*`` figures come from.
    rejudged:              the run whose evidence this run re-judged.
    evidence_run:          the run whose folder holds the attempts (this run's own when absent).
    fixtures_run:          the cases that ran (PASS or FAIL: the ones the gates see).
    hard_floor_violations: devlyn's figure of that name (compile-report.py): the cases whose first arm of
                           ``compare`` was disqualified.
    failed_hard_gates:     assay's own count: the hard gates that failed.
    catch_rate:            per arm, the share of judged cases without a critical finding from the judge.
    rotation_candidates:   cases every arm scored above 95 in, in this run and in the shipped one (seed 04:
                           saturated, to be replaced by a harder fixture).
    comparable:            False when the saved run was judged on another rubric, another judge prompt or
                           another fixture set (seed 04 calls the rubric the comparability anchor): its
                           figures are shown, never compared (the gates that read them are not evaluated).
    incomparable:          why it is not comparable (``RUBRIC.md changed``); None when it is.
    arm_models:            per arm, the model it runs (the suite's ``model``, or its provenance command's output).
    baseline_facts:        the saved run's id, label, start and commit (older run documents have none).
    """

    file: str
    verdict: Status
    arms: tuple[str, ...]
    cases: tuple[CaseOutcome, ...]
    compare: tuple[str, str] | None = None
    averages: Mapping[str, float] = field(default_factory=dict)
    margin: float | None = None
    baseline_margin: float | None = None
    baseline: str | None = None
    gates: tuple[GateResult, ...] = ()
    warnings: tuple[str, ...] = ()
    judge: JudgeRecord | None = None
    dry_run: bool = False
    rejudged: str | None = None
    evidence_run: str | None = None
    fixtures_run: int = 0
    hard_floor_violations: int = 0
    failed_hard_gates: int = 0
    margins: Mapping[str, float] = field(default_factory=dict)  # per arm, its mean margin over compare's second
    catch_rate: Mapping[str, float] = field(default_factory=dict)
    baseline_catch_rate: Mapping[str, float] = field(default_factory=dict)
    rotation_candidates: tuple[str, ...] = ()
    comparable: bool = True
    incomparable: str | None = None
    arm_models: Mapping[str, str] = field(default_factory=dict)  # per arm, the model it said it ran
    baseline_facts: RunFacts | None = None


# --- scores into rows -----------------------------------------------------------------


def score_metric(judge: JudgeSpec, file: str) -> MetricSpec:
    """The judge's total as a metric of every arm row: higher is better, in points."""
    return MetricSpec(
        name=SCORE_METRIC,
        extract="(the judge's total)",
        unit="points",
        file=file,
        line=judge.line,
        direction="higher",
        threshold=judge.threshold,
    )


def apply_judgments(
    specs: Sequence[RowSpec], rows: Sequence[RowResult], judgings: Sequence[SuiteJudging]
) -> tuple[list[RowSpec], list[RowResult]]:
    """Each judged arm row gains the ``score`` metric (one value per judged sample); a failed
    judgment makes the case's arm rows ERR, naming the judge's kept output."""
    by_file = {j.file: j for j in judgings}
    results = {row.id: row for row in rows}
    new_specs, new_rows = [], {}
    for spec in specs:
        judging = by_file.get(spec.ab.suite.file) if spec.ab is not None and spec.ab.arm is not None else None
        if judging is None or spec.ab is None or spec.ab.arm is None:
            new_specs.append(spec)
            continue
        new_specs.append(replace(spec, metrics=(*spec.metrics, score_metric(judging.judge, spec.file))))
        row = results.get(spec.id)
        if row is not None:
            mine = {j.sample: j for j in judging.judgments if j.case == spec.ab.case}
            new_rows[spec.id] = _scored(row, spec.ab.arm, mine)
    return new_specs, [new_rows.get(row.id, row) for row in rows]


def _scored(row: RowResult, arm: str, judgments: Mapping[int, Judgment]) -> RowResult:
    samples = []
    for sample in row.samples:
        judgment = judgments.get(sample.index)
        if judgment is None:
            samples.append(sample)
        elif judgment.error is not None:
            value = MetricValue("error", error=f"sample {sample.index}: {judgment.error}")
            samples.append(replace(sample, metrics={**sample.metrics, SCORE_METRIC: value}))
        else:
            value = MetricValue("pass", value=judgment.scores[arm].total)
            samples.append(replace(sample, metrics={**sample.metrics, SCORE_METRIC: value}))
    failed = next((j for j in judgments.values() if j.error is not None), None)
    scored = replace(row, samples=tuple(samples))
    return row_verdict.judged(scored, f"sample {failed.sample}: {failed.error}" if failed is not None else None)


# --- outcomes ------------------------------------------------------------------------


def suite_outcome(
    suite: SuiteSpec,
    specs: Sequence[RowSpec],
    rows: Sequence[RowResult],
    judging: SuiteJudging | None,
    baseline: SuiteOutcome | None = None,
    baseline_name: str | None = None,
    dry_run: bool = False,
) -> tuple[SuiteOutcome, dict[str, RowResult]]:
    """Cases, margins, averages, gates and warnings of one suite of a finalized run; and its arm rows,
    each with how it ended its case (``verdicts.row.with_case``), by row id."""
    results = {row.id: row for row in rows}
    members = [s for s in specs if s.ab is not None and s.ab.suite.file == suite.file and s.id in results]
    arms = tuple(a.name for a in suite.arms)
    pair = suite.pair
    by_case: dict[str, list[RowSpec]] = {}
    for spec in members:
        assert spec.ab is not None
        by_case.setdefault(spec.ab.case, []).append(spec)
    incomparable = _incomparable(suite, judging, baseline) if not dry_run else None
    # a saved run judged otherwise is shown, never compared: not with this run's cases either
    previous = {c.name: c for c in baseline.cases} if baseline is not None and incomparable is None else {}
    judgments = judging.judgments if judging is not None else ()
    arm_rows: dict[str, RowResult] = {}
    cases = []
    for case, found in by_case.items():
        judged, ended = _case(
            case, found, results, [j for j in judgments if j.case == case], pair, previous.get(case), dry_run
        )
        cases.append(judged)
        arm_rows.update(ended)
    scores = {arm: _mean([c.arms[arm].score for c in cases if arm in c.arms]) for arm in arms}
    averages = {arm: score for arm, score in scores.items() if score is not None}
    outcome = SuiteOutcome(
        file=members[0].fixture_id or members[0].file if members else suite.file,
        verdict=case_verdict.suite_verdict([c.status for c in cases], ()),  # its gates come next
        arms=arms,
        cases=tuple(cases),
        compare=pair,
        averages=averages,
        margin=_mean([c.margin for c in cases]),
        baseline_margin=baseline.margin if baseline is not None and incomparable is None else None,
        baseline=baseline_name if baseline is not None else None,
        dry_run=dry_run,
        fixtures_run=sum(c.status in ("PASS", "FAIL") for c in cases),
        margins=arm_margins(cases, arms, pair),
        catch_rate=catch_rates(cases, arms),
        baseline_catch_rate=dict(baseline.catch_rate) if baseline is not None and incomparable is None else {},
        rotation_candidates=_saturated(cases, previous),
        comparable=incomparable is None,
        incomparable=incomparable,
    )
    facts = {f.name: f for f in suite.case_facts}
    inputs = gate_inputs(outcome, [facts.get(case, CaseFacts(case)) for case in suite.cases if case not in by_case])
    gates = tuple(evaluate(gate, inputs) for gate in suite.gates)
    warnings = [f"not comparable with {baseline_name}: {incomparable}"] if incomparable is not None else []
    retired = dict.fromkeys(spec.ab.case for spec in members if spec.ab is not None and spec.ab.retired)
    warnings += [f"{case}: a retired fixture (fixtures/retired/), replayed as its id was given" for case in retired]
    warnings += [w for case in cases if (w := _known_limit_warning(case)) is not None]
    warnings += [f"soft gate '{g.name}' warned" for g in gates if g.severity == "soft" and g.status == "fail"]
    warnings += [
        f"{name}: every arm scored above {SATURATED:g} here and in {baseline_name}: saturated, a rotation candidate"
        for name in outcome.rotation_candidates
    ]
    warnings += [
        f"{case.name}: the judge disagreed with itself on sample {j.sample} when the order was swapped (a tie)"
        for case in cases
        for j in case.judgments
        if j.disagreement
    ]
    verdict = case_verdict.suite_verdict([c.status for c in cases], [(g.severity, g.status) for g in gates])
    failed = sum(g.severity == "hard" and g.status == "fail" for g in gates)
    done = replace(
        outcome,
        gates=gates,
        warnings=tuple(warnings),
        verdict=verdict,
        failed_hard_gates=failed,
        hard_floor_violations=disqualified_first_arms(outcome),
    )
    return done, arm_rows


def disqualified_first_arms(outcome: SuiteOutcome) -> int:
    """devlyn's ``hard_floor_violations`` (compile-report.py): the cases whose first arm of ``compare`` (its
    variant) was disqualified."""
    if outcome.compare is None:
        return 0
    first = outcome.compare[0]
    return sum(1 for case in outcome.cases if first in case.arms and case.arms[first].disqualified)


def gate_inputs(outcome: SuiteOutcome, unrun: Sequence[CaseFacts] = ()) -> GateInputs:
    """What the gates of a suite read (``verdicts.gates``): its cases, and those of its file it did not run."""
    first = outcome.compare[0] if outcome.compare is not None else None
    cases = [_case_data(case, first) for case in outcome.cases]
    left_out = [_left_out_value(facts) for facts in unrun]
    return GateInputs(
        gate_context(outcome), cases, [f.name for f in unrun], outcome.dry_run, left_out, outcome.incomparable
    )


def _left_out_value(facts: CaseFacts) -> dict[str, object]:
    """A case this run did not run as a gate's CEL sees it before it runs: no status, arms or margin."""
    properties = _gate_properties(facts.properties)
    return {"name": facts.name, "known_limit": facts.known_limit, "arms": {}, "properties": properties}


def _case_data(case: CaseOutcome, first: str | None) -> CaseData:
    """What the gates must know of a case beyond its CEL value: whether it has data, and whether the arm
    the gates protect (the first of ``compare``) was disqualified (its margin then says nothing)."""
    arm = case.arms.get(first) if first is not None else None
    disqualified = {first: "; ".join(arm.disqualified_by)} if first is not None and arm and arm.disqualified else {}
    return CaseData(case.name, case.status, case.error, disqualified)


SATURATED = 95.0  # seed 04: "both arms > 95 for two consecutive shipped versions"


def arm_margins(cases: Sequence[CaseOutcome], arms: Sequence[str], pair: tuple[str, str] | None) -> dict[str, float]:
    """Per arm, the mean of its score minus the second arm of ``compare`` over the cases both were scored in
    (devlyn's ``margins_avg``: ``variant_over_bare``, ``solo_over_bare``)."""
    if pair is None:
        return {}
    margins = {}
    for arm in arms:
        if arm == pair[1]:
            continue
        found = _mean([_difference(c, arm, pair[1]) for c in cases])
        if found is not None:
            margins[arm] = found
    return margins


def _difference(case: CaseOutcome, arm: str, other: str) -> float | None:
    mine, theirs = case.arms.get(arm), case.arms.get(other)
    if mine is None or theirs is None or mine.score is None or theirs.score is None:
        return None
    return mine.score - theirs.score


def _incomparable(suite: SuiteSpec, judging: SuiteJudging | None, baseline: SuiteOutcome | None) -> str | None:
    """Why the saved run cannot be compared with this one (seed 04: the rubric is the comparability anchor;
    "changing it invalidates comparability"), or None: another rubric, another judge prompt (protocol), or
    another fixture set."""
    if baseline is None:
        return None
    reasons = []
    then = baseline.judge
    if judging is not None and then is not None:
        now = rubric_digest(judging.judge)
        if now is not None and then.rubric_sha256 is not None and now != then.rubric_sha256:
            name = Path(judging.judge.rubric or "rubric").name
            reasons.append(f"{name} changed: sha256 {then.rubric_sha256[:12]} then, {now[:12]} now")
        if judging.judge.protocol != then.protocol:
            reasons.append(f"the judge's prompt changed: {then.protocol}'s then, {judging.judge.protocol}'s now")
    before, now_cases = {c.name for c in baseline.cases}, set(suite.cases)
    if before and now_cases and before != now_cases:
        added, removed = sorted(now_cases - before), sorted(before - now_cases)
        told = [f"added {', '.join(added)}"] * bool(added) + [f"removed {', '.join(removed)}"] * bool(removed)
        reasons.append(f"the fixture set changed: {'; '.join(told)}")
    return "; ".join(reasons) or None


def catch_rates(cases: Sequence[CaseOutcome], arms: Sequence[str]) -> dict[str, float]:
    """Per arm, the share of its judged cases without a critical finding from the judge."""
    rates = {}
    for arm in arms:
        judged = [c.arms[arm] for c in cases if arm in c.arms and c.arms[arm].score is not None]
        if judged:
            rates[arm] = sum(not a.critical for a in judged) / len(judged)
    return rates


def _saturated(cases: Sequence[CaseOutcome], previous: Mapping[str, CaseOutcome]) -> tuple[str, ...]:
    """Cases every arm scored above ``SATURATED`` in, here and in the saved run."""

    def above(case: CaseOutcome) -> bool:
        scores = [a.score for a in case.arms.values()]
        return len(scores) > 1 and all(score is not None and score > SATURATED for score in scores)

    return tuple(c.name for c in cases if above(c) and c.name in previous and above(previous[c.name]))


def _case(
    name: str,
    specs: Sequence[RowSpec],
    results: Mapping[str, RowResult],
    judgments: Sequence[Judgment],
    pair: tuple[str, str] | None,
    previous: CaseOutcome | None,
    dry_run: bool,
) -> tuple[CaseOutcome, dict[str, RowResult]]:
    """One case across its arms, and its arm rows with how each ended the case."""
    first = specs[0]
    assert first.ab is not None
    found = {}
    for spec in specs:
        assert spec.ab is not None
        found[spec.ab.arm or spec.name] = (spec, _arm(results[spec.id], spec.ab.arm or spec.name, judgments, previous))
    failed_judgment = next((j for j in judgments if j.error is not None), None)
    disqualified = {key: arm.disqualified for key, (_spec, arm) in found.items()}
    winner = case_verdict.winner(judgments, disqualified) if judgments else None
    ended: dict[str, RowResult] = {}
    arms: dict[str, ArmOutcome] = {}
    for key, (spec, arm) in found.items():
        result = None if dry_run else case_verdict.arm_result(key, arm.disqualified, winner)
        row = row_verdict.with_case(results[spec.id], result, arm.disqualified_by)
        ended[spec.id] = row
        arms[key] = replace(arm, status=row.status, result=result)
    status = case_verdict.case_status([a.status for a in arms.values()], failed_judgment is not None)
    margin = None
    compared = [arms[arm] for arm in pair or () if arm in arms]
    if pair is not None and len(compared) == 2:
        first_score, second_score = compared[0].score, compared[1].score
        if first_score is not None and second_score is not None:
            margin = first_score - second_score
    first_arm = arms.get(pair[0]) if pair is not None else next(iter(arms.values()))
    outside = _outside(first.ab.known_limit, margin) if first.ab.known_limit is not None else None
    # A dry run's case is ready when every arm prepared its workspace (its samples, SKIP, hold the attempts).
    prepared = dry_run and all(results[s.id].samples for s in specs)
    verdict = case_verdict.case_verdict(
        status,
        (first_arm.status, first_arm.disqualified) if first_arm is not None else None,
        winner,
        pair,
        outside,
        prepared,
    )
    case = CaseOutcome(
        name=name,
        line=first.ab.case_line,
        status=status,
        verdict=verdict,
        arms=arms,
        margin=margin,
        winner=winner,
        known_limit=first.ab.known_limit,
        baseline_margin=previous.margin if previous is not None else None,
        judgments=tuple(judgments),
        properties=_gate_properties(first.ab.shared),
        error=failed_judgment.error if failed_judgment is not None else _first_error(results, specs),
    )
    return case, ended


def _gate_properties(shared: Mapping[str, object]) -> dict[str, object]:
    """The case's shared properties a gate may read (``r.properties.category``): its scalars."""
    return {k: v for k, v in shared.items() if isinstance(v, (str, int, float, bool))}


def _first_error(results: Mapping[str, RowResult], specs: Sequence[RowSpec]) -> str | None:
    return next((results[s.id].error for s in specs if results[s.id].error), None)


def _arm(row: RowResult, arm: str, judgments: Sequence[Judgment], previous: CaseOutcome | None) -> ArmOutcome:
    metric = row.metrics.get(SCORE_METRIC)
    score = metric.value if metric is not None and metric.status in ("pass", "fail") else None
    scored = [j.scores[arm] for j in judgments if arm in j.scores]
    attempts = [s.attempt for s in row.samples if s.attempt is not None]
    findings = [f.describe() for a in attempts for f in a.findings if f.severity in ("disqualifier", "critical")]
    critical = list(dict.fromkeys(text for s in scored for text in s.findings))
    axes_names = list(dict.fromkeys(axis for s in scored for axis in s.axes))
    before = previous.arms.get(arm) if previous is not None else None
    broken = [f.describe() for a in attempts for f in a.findings if f.severity == "disqualifier"]
    said = [why for s in scored if s.disqualifier and (why := _judge_said(s, broken))]
    return ArmOutcome(
        row=row.name,
        status=row.status,
        score=score,
        axes={axis: value for axis in axes_names if (value := _mean([s.axes.get(axis) for s in scored])) is not None},
        disqualified=any(a.disqualified for a in attempts) or any(s.disqualifier for s in scored),
        findings=tuple(dict.fromkeys(findings + critical)),
        verify_score=_mean([a.verify_score for a in attempts]),
        duration_ms=_mean([s.duration_ms for s in row.samples]),
        baseline_score=before.score if before is not None else None,
        critical=tuple(critical),
        baseline_critical=before.critical if before is not None else None,
        timed_out=any(a.arm_timed_out for a in attempts),
        axes_invalid=sum(s.axes_invalid for s in scored),
        disqualified_by=tuple(dict.fromkeys([*broken, *said])),
    )


def _judge_said(score: ArmScore, known: Sequence[str]) -> str | None:
    """Why the judge disqualified an arm: its reason, else its disqualifier findings the rules did not
    already name; None when the rules said it all."""
    if score.disqualifier_reason:
        return f"the judge: {score.disqualifier_reason}"
    found = [f for f in score.findings if f.startswith("disqualifier") and f not in known]
    if found:
        return "the judge: " + "; ".join(found)
    return None if known else "the judge disqualified it"


def _outside(known_limit: tuple[float, float], margin: float | None) -> bool:
    """The case's margin lies outside its known-limit range."""
    if margin is None:
        return False
    low, high = known_limit
    return margin < low or margin > high


def _known_limit_warning(case: CaseOutcome) -> str | None:
    if case.known_limit is None or not _outside(case.known_limit, case.margin):
        return None
    assert case.known_limit is not None and case.margin is not None
    low, high = case.known_limit
    why = (
        "too good: it may no longer be a known limit"
        if case.margin > high
        else "too bad: a regression elsewhere may show here"
    )
    return f"{case.name}: margin {case.margin:+.1f} is outside its known-limit range [{low:g}, {high:g}] ({why})"


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return math.fsum(present) / len(present) if present else None


# --- gates -----------------------------------------------------------------------------


def gate_context(outcome: SuiteOutcome) -> dict[str, object]:
    """What a gate's CEL sees: ``rows`` (the cases that ran) and ``suite``."""
    rows = [_row_value(case) for case in outcome.cases if case.status in ("PASS", "FAIL")]
    suite: dict[str, object] = {
        "average": dict(outcome.averages),
        "rows": len(rows),
        "cases": len(outcome.cases),
        "catch_rate": dict(outcome.catch_rate),
        "margins": dict(outcome.margins),
        "fixtures_run": outcome.fixtures_run,
    }
    if outcome.margin is not None:
        suite["margin"] = outcome.margin
    if outcome.baseline_margin is not None:
        suite["baseline_margin"] = outcome.baseline_margin
    if outcome.baseline_catch_rate:
        suite["baseline_catch_rate"] = dict(outcome.baseline_catch_rate)
    return {"rows": rows, "suite": suite}


def _row_value(case: CaseOutcome) -> dict[str, object]:
    value: dict[str, object] = {
        "name": case.name,
        "status": case.status,
        "known_limit": case.known_limit is not None,
        "arms": {arm: _arm_value(outcome) for arm, outcome in case.arms.items()},
        "properties": dict(case.properties),
    }
    optional = {"margin": case.margin, "winner": case.winner, "baseline_margin": case.baseline_margin}
    value.update({k: v for k, v in optional.items() if v is not None})
    if case.known_limit is not None:
        value["known_limit_range"] = list(case.known_limit)
    return value


def _arm_value(arm: ArmOutcome) -> dict[str, object]:
    value: dict[str, object] = {
        "status": arm.status,
        "disqualified": arm.disqualified,
        "findings": list(arm.findings),
        "critical": list(arm.critical),
        "axes": dict(arm.axes),
        "axes_invalid": arm.axes_invalid,
        "timed_out": arm.timed_out,
    }
    optional = {
        "score": arm.score,
        "verify_score": arm.verify_score,
        "duration_ms": arm.duration_ms,
        "baseline_score": arm.baseline_score,
        "baseline_critical": list(arm.baseline_critical) if arm.baseline_critical is not None else None,
    }
    value.update({k: v for k, v in optional.items() if v is not None})
    return value
