"""The judge of an A/B suite: any command speaking assay's JSON protocol, called blind.

Protocol (one call per case and sample; two with ``swap: true``):

    stdin   {"row": CASE, "rubric": TEXT, "properties": {...},
             "candidates": {"A": EVIDENCE, "B": EVIDENCE, ...}}
            EVIDENCE = {"diff", "changed_files", "verify": [{"command", "exit_code",
                        "passed", "output"}], "stdout", "stderr", "duration_ms",
                        "findings", "disqualified"}
    stdout  {"scores": {"A": {"axes": {...}, "total": N, "disqualifier": BOOL,
                              "findings": [TEXT, ...]}, "B": {...}},
             "winner": "A" | "B" | "tie", "model": TEXT (optional provenance),
             "rationale": TEXT (optional: why, in the judge's words, naming labels)}

Candidates are labelled by a ``random.Random`` seeded with the run's seed,
the case and the sample, so a seed reproduces every labelling; scores are
mapped back to arms afterwards. With ``swap`` the judge also sees the
reversed order and a disagreement on the winner is recorded as a tie.
Output that is not JSON of this shape is an error for that case, with the
output kept beside the input; never a silent zero.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from fixtures_core.durations import format_duration
from fixtures_core.execution import devlyn_judge
from fixtures_core.execution.attempt import with_kept_output
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.devlyn_evidence import verify_document
from fixtures_core.execution.sampling import execute
from fixtures_core.files import json_text, slug, write_json_atomic, write_text_atomic
from fixtures_core.judgment import TIE, ArmScore, JudgeOutput, JudgeOutputError, Judgment
from fixtures_core.parsing.template import render
from fixtures_core.results import SampleResult
from fixtures_core.suite import CaseChecks, JudgeSpec
from fixtures_core.text import excerpt

JUDGE_FOLDER = "judge"
# Scores are averaged (swap), subtracted (margins) and summed (suite figures): within this bound none of
# those leaves a double's range, so a run document never holds an infinite margin.
MAX_SCORE = 1e15
_EXCERPT = 500
_FENCED_JSON = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL)


@dataclass(frozen=True)
class JudgeCall:
    """What one case's judging needs: the judge, its rendered command, what it is told."""

    spec: JudgeSpec
    argv: tuple[str, ...]
    case: str
    properties: Mapping[str, object]
    cwd: str
    rubric: str = ""
    checks: CaseChecks = field(default_factory=CaseChecks)  # the case's documents and checks (devlyn's protocol)


@dataclass(frozen=True)
class JudgeSettings:
    """Where judging reads and writes, and how it is labelled.

    run_dir:      the folder of the run being written (judge files go under ``judge/``).
    evidence_dir: the folder of the run whose attempts are judged (another run's when re-judging).
    """

    run_dir: Path
    evidence_dir: Path
    seed: int
    run_id: str
    parallel: int = 4


def labels_for(seed: int, case: str, sample: int, arms: Sequence[str], blind: bool) -> dict[str, str]:
    """Label -> arm for one judgment: a seeded random order when blind, else declaration order."""
    order = list(arms)
    if blind:
        random.Random(f"{seed}:{case}:{sample}").shuffle(order)
    return {chr(ord("A") + i): arm for i, arm in enumerate(order)}


def rubric_text(spec: JudgeSpec) -> str:
    """The rubric file's text ('' without one)."""
    return Path(spec.rubric).read_text(encoding="utf-8") if spec.rubric else ""


def rubric_digest(spec: JudgeSpec) -> str | None:
    """sha256 of the rubric file, so a run records which rubric scored it."""
    return hashlib.sha256(Path(spec.rubric).read_bytes()).hexdigest() if spec.rubric else None


def candidate(sample: SampleResult, evidence_dir: Path) -> dict[str, object]:
    """What the judge is told about one arm's sample (EVIDENCE of the protocol)."""
    attempt = with_kept_output(sample.attempt, evidence_dir) if sample.attempt is not None else None
    diff = ""
    if attempt is not None:
        path = evidence_dir / attempt.evidence / "diff.patch"
        diff = path.read_text(encoding="utf-8") if path.is_file() else ""
    return {
        "diff": diff,
        "changed_files": list(attempt.changed_files) if attempt else [],
        "verify": [
            {"command": v.command, "exit_code": v.exit_code, "passed": v.passed, "output": v.output}
            for v in (attempt.verify if attempt else ())
        ],
        "stdout": sample.stdout,
        "stderr": sample.stderr,
        "duration_ms": sample.duration_ms,
        "findings": [f.describe() for f in (attempt.findings if attempt else ())],
        "disqualified": attempt.disqualified if attempt else False,
    }


def devlyn_candidate(sample: SampleResult, evidence_dir: Path, checks: CaseChecks) -> dict[str, object]:
    """What devlyn's judge is told about one arm's sample: its diff and its verify.json."""
    attempt = sample.attempt
    diff = ""
    if attempt is not None:
        path = evidence_dir / attempt.evidence / "diff.patch"
        diff = path.read_text(encoding="utf-8") if path.is_file() else ""
    verify = verify_document(with_kept_output(attempt, evidence_dir), checks) if attempt is not None else {}
    return {"diff": diff, "verify": verify}


def _devlyn_prompt(call: JudgeCall, labels: Mapping[str, str], evidence: Mapping[str, Mapping[str, object]]) -> str:
    documents = call.checks.documents
    spec = _document_text(documents.get("spec"))
    expected = _document_text(documents.get("expected"))
    slots = [
        devlyn_judge.Slot(label, str(evidence[arm]["diff"]), _mapping(evidence[arm]["verify"]))
        for label, arm in labels.items()
    ]
    return devlyn_judge.prompt(call.rubric, spec, expected, slots)


def _devlyn_reply(
    stdout: str, labels: Mapping[str, str], evidence: Mapping[str, Mapping[str, object]], kept: Path
) -> JudgeOutput:
    """The reply read as judge.sh reads it; its judge.json (devlyn's shape) is kept beside the output."""
    shares = {}
    for arm, found in evidence.items():
        share = _mapping(found["verify"]).get("verify_score")
        if isinstance(share, (int, float)):
            shares[arm] = float(share)
    reply = devlyn_judge.parse_reply(stdout, labels, shares)
    write_text_atomic(kept, json_text(reply.document))
    return reply.output


def _document_text(path: str | None) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace") if path else ""


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, dict) else {}


def judge_all(
    calls: Mapping[str, JudgeCall],
    samples: Mapping[str, Mapping[int, Mapping[str, SampleResult]]],
    settings: JudgeSettings,
    containment: Containment,
) -> list[Judgment]:
    """Judge every (case, sample) with all arms present, ``settings.parallel`` at a time, in order."""
    work = [(case, index) for case in calls for index in sorted(samples.get(case, {}))]

    def one(item: tuple[str, int]) -> Judgment:
        case, index = item
        return judge_sample(calls[case], index, samples[case][index], settings, containment)

    with ThreadPoolExecutor(max_workers=max(1, settings.parallel), thread_name_prefix="assay-judge") as pool:
        return list(pool.map(one, work))


def judge_sample(
    call: JudgeCall, index: int, arms: Mapping[str, SampleResult], settings: JudgeSettings, containment: Containment
) -> Judgment:
    """One judgment (two calls with swap), mapped back to arms; its files under ``judge/CASE/SAMPLE``."""
    relative = f"{JUDGE_FOLDER}/{slug(call.case)}/{index}"
    folder = settings.run_dir / relative
    folder.mkdir(parents=True, exist_ok=True)
    evidence = {arm: candidate(sample, settings.evidence_dir) for arm, sample in arms.items()}
    if call.spec.protocol == "devlyn":
        evidence = {arm: devlyn_candidate(sample, settings.evidence_dir, call.checks) for arm, sample in arms.items()}
    labels = labels_for(settings.seed, call.case, index, list(arms), call.spec.blind)
    base = Judgment(case=call.case, sample=index, labels=labels, evidence=relative)
    orders = [("", labels)]
    if call.spec.swap:
        arms_in_order = list(labels.values())
        orders.append(("-swapped", dict(zip(labels, reversed(arms_in_order), strict=True))))
    outcomes = []
    for suffix, order in orders:
        outcome = _call(call, index, order, evidence, folder, suffix, settings, containment)
        if isinstance(outcome, Judgment):
            return _with_base(outcome, base)
        outcomes.append(outcome)
    judgment = _combine(base, outcomes)
    write_json_atomic(folder / "judgment.json", _judgment_document(judgment, settings.seed))
    return judgment


def _with_base(failed: Judgment, base: Judgment) -> Judgment:
    return replace(base, error=failed.error, output=failed.output)


def _call(
    call: JudgeCall,
    index: int,
    labels: Mapping[str, str],
    evidence: Mapping[str, Mapping[str, object]],
    folder: Path,
    suffix: str,
    settings: JudgeSettings,
    containment: Containment,
) -> JudgeOutput | Judgment:
    """Run the judge once on one labelling; its outcome by arm, or a failed Judgment."""
    if call.spec.protocol == "devlyn":
        payload = _devlyn_prompt(call, labels, evidence)
        write_text_atomic(folder / f"input{suffix}.txt", payload)
    else:
        document = {
            "row": call.case,
            "rubric": call.rubric,
            "properties": dict(call.properties),
            "candidates": {label: evidence[arm] for label, arm in labels.items()},
        }
        payload = json_text(document)
        write_text_atomic(folder / f"input{suffix}.json", payload)
    env = {**os.environ, "ASSAY_RUN_ID": settings.run_id, "ASSAY_CASE": call.case, "ASSAY_SAMPLE": str(index)}
    done = execute(
        call.argv,
        deadline=time.monotonic() + call.spec.timeout_s,
        cwd=call.cwd,
        env=env,
        containment=containment,
        stdin=payload.encode("utf-8"),
    )
    stdout = done.stdout.decode("utf-8", "replace")
    stderr = done.stderr.decode("utf-8", "replace")
    output_file = folder / f"output{suffix}.txt"
    write_text_atomic(output_file, stdout)
    if stderr:
        write_text_atomic(folder / f"stderr{suffix}.txt", stderr)
    kept = output_file.relative_to(settings.run_dir).as_posix()
    problem = _process_problem(done.exit_code, done.timed_out, done.cancelled, done.error, call.spec, stderr)
    if problem is None:
        try:
            if call.spec.protocol == "devlyn":
                return _devlyn_reply(stdout, labels, evidence, folder / f"judge{suffix}.json")
            return parse_output(stdout, labels, call.spec.axes)
        except JudgeOutputError as exc:
            problem = f"judge output is not JSON of the judge protocol's shape: {exc}"
    return Judgment(
        case=call.case,
        sample=index,
        labels=labels,
        error=f"{problem} (output kept in {kept})",
        output=excerpt(stdout or stderr, _EXCERPT),
    )


def _process_problem(
    exit_code: int | None, timed_out: bool, cancelled: bool, error: str | None, spec: JudgeSpec, stderr: str
) -> str | None:
    if timed_out:
        return f"judge timed out after {format_duration(spec.timeout_s)}"
    if cancelled:
        return "judge cancelled"
    if error is not None:
        return f"judge: {error}"
    if exit_code != 0:
        tail = excerpt(stderr, 200, lines=2, tail=True).replace("\n", " ")
        return f"judge exited with code {exit_code}" + (f": {tail}" if tail else "")
    return None


def parse_output(text: str, labels: Mapping[str, str], axes: Sequence[str]) -> JudgeOutput:
    """Scores by arm, the winning arm (or "tie"), the judge's provenance and rationale; JudgeOutputError otherwise.

    The whole output must be one JSON object, or hold exactly one fenced ```json block.
    """
    document = _json_object(text)
    scores = document.get("scores")
    if not isinstance(scores, dict):
        raise JudgeOutputError('needs "scores": {LABEL: {...}} for every candidate')
    if set(scores) != set(labels):
        raise JudgeOutputError(f"scores are for {sorted(scores)}, the candidates are {sorted(labels)}")
    by_arm = {labels[label]: _arm_score(label, scores[label], axes) for label in labels}
    winner = document.get("winner")
    if winner != TIE and winner not in labels:
        raise JudgeOutputError(f'"winner" must be one of {sorted(labels)} or "tie", got {winner!r}')
    provenance = document.get("model", document.get("provenance"))
    shown = None if provenance is None else provenance if isinstance(provenance, str) else json.dumps(provenance)
    rationale = document.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        raise JudgeOutputError(f'"rationale" must be text, got {type(rationale).__name__}')
    return JudgeOutput(by_arm, TIE if winner == TIE else labels[str(winner)], shown, rationale or None)


def _json_object(text: str) -> dict[str, object]:
    stripped = text.strip()
    if not stripped:
        raise JudgeOutputError("the output is empty")
    try:
        document = json.loads(stripped)
    except ValueError as exc:
        fenced = _FENCED_JSON.findall(stripped)
        if len(fenced) != 1:
            raise JudgeOutputError(f"not JSON ({exc.args[0] if exc.args else exc})") from None
        try:
            document = json.loads(fenced[0])
        except ValueError as inner:
            raise JudgeOutputError(f"the ```json block is not JSON ({inner})") from None
    if not isinstance(document, dict):
        raise JudgeOutputError(f"expected a JSON object, got {type(document).__name__}")
    return document


def _arm_score(label: str, value: object, axes: Sequence[str]) -> ArmScore:
    where = f"scores.{label}"
    if not isinstance(value, dict):
        raise JudgeOutputError(f"{where} must be an object with total, axes, disqualifier, findings")
    total = _number(value.get("total"), f"{where}.total")
    raw_axes = value.get("axes", {})
    if not isinstance(raw_axes, dict):
        raise JudgeOutputError(f"{where}.axes must be an object of numbers")
    missing = [axis for axis in axes if axis not in raw_axes]
    if missing:
        raise JudgeOutputError(f"{where}.axes lacks {', '.join(missing)} (declared axes: {', '.join(axes)})")
    disqualifier = value.get("disqualifier", False)
    if not isinstance(disqualifier, bool):
        raise JudgeOutputError(f"{where}.disqualifier must be true or false, got {disqualifier!r}")
    findings = value.get("findings", [])
    if not isinstance(findings, list) or not all(isinstance(f, str) for f in findings):
        raise JudgeOutputError(f"{where}.findings must be a list of strings")
    return ArmScore(
        total=total,
        axes={str(k): _number(v, f"{where}.axes.{k}") for k, v in raw_axes.items()},
        disqualifier=disqualifier,
        findings=tuple(findings),
    )


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise JudgeOutputError(f"{where} must be a finite number, got {value!r}")
    if abs(value) > MAX_SCORE:
        raise JudgeOutputError(f"{where} must be within ±{MAX_SCORE:g}, got {value:g}")
    return float(value)


def _combine(base: Judgment, outcomes: Sequence[JudgeOutput]) -> Judgment:
    """One order as it is; with swap, scores are averaged and a disagreement is a tie."""
    first = outcomes[0]
    provenance = next((o.provenance for o in outcomes if o.provenance), None)
    rationale = first.rationale
    if len(outcomes) == 1:
        return replace(base, scores=first.scores, winner=first.winner, provenance=provenance, rationale=rationale)
    second = outcomes[1]
    scores = {arm: _mean_score(first.scores[arm], second.scores[arm]) for arm in first.scores}
    agreed = first.winner == second.winner
    return replace(
        base,
        scores=scores,
        winner=first.winner if agreed else TIE,
        swapped_winner=second.winner,
        disagreement=not agreed,
        provenance=provenance,
        rationale=rationale,
    )


def _mean_score(a: ArmScore, b: ArmScore) -> ArmScore:
    return ArmScore(
        total=(a.total + b.total) / 2,
        axes={axis: (a.axes[axis] + b.axes.get(axis, a.axes[axis])) / 2 for axis in a.axes},
        disqualifier=a.disqualifier or b.disqualifier,
        findings=tuple(dict.fromkeys(a.findings + b.findings)),
        disqualifier_reason=a.disqualifier_reason or b.disqualifier_reason,
        axes_invalid=a.axes_invalid + b.axes_invalid,
    )


def provenance_of(spec: JudgeSpec, cwd: str, containment: Containment) -> str | None:
    """The output of the judge's ``provenance:`` command (e.g. ``codex --version``), first lines only."""
    return command_provenance(spec.provenance, cwd, containment)


def command_provenance(command: str | None, cwd: str, containment: Containment) -> str | None:
    """The output of a provenance command (a judge's or an arm's), first lines only; None without one."""
    if command is None:
        return None
    done = execute(
        ["bash", "-c", command],
        deadline=time.monotonic() + 60,
        cwd=cwd,
        env=dict(os.environ),
        containment=containment,
    )
    text = (done.stdout or done.stderr).decode("utf-8", "replace").strip()
    if done.exit_code != 0:
        return f"provenance command failed ({done.error or f'exit code {done.exit_code}'}): {excerpt(text, _EXCERPT)}"
    return excerpt(text, _EXCERPT)


def judge_command(spec: JudgeSpec, values: Mapping[str, object]) -> tuple[str, ...]:
    """The judge's argv for one case (templates rendered)."""
    return tuple(render(part, values) for part in spec.command)


def _judgment_document(judgment: Judgment, seed: int) -> dict[str, object]:
    return {
        "case": judgment.case,
        "sample": judgment.sample,
        "seed": seed,
        "labels": dict(judgment.labels),
        "winner": judgment.winner,
        "swapped_winner": judgment.swapped_winner,
        "disagreement": judgment.disagreement,
        "provenance": judgment.provenance,
        "rationale": judgment.rationale,
        "scores": {
            arm: {"total": s.total, "axes": dict(s.axes), "disqualifier": s.disqualifier, "findings": list(s.findings)}
            for arm, s in judgment.scores.items()
        },
    }
