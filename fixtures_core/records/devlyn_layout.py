"""A devlyn suite's run in devlyn's own layout: ``results/`` beside ``run.json``.

devlyn's harness writes ``results/<run-id>/<fixture>/<arm>/`` (``input.md``,
``transcript.txt``, ``diff.patch``, ``changed-files.txt``, ``verify.json``,
``timing.json``, ``result.json``, ``setup.log``), ``<fixture>/judge.json``
and ``summary.json``. An assay run of a devlyn suite writes the same below
its own folder, ``.assay/runs/<run-id>/results/``, from its attempts (the
first sample of each arm: devlyn's harness runs one) and its ship-gate
outcome, so devlyn's ``compile-report``-style consumers and ``ship-gate.py``
can read it, and ``fixture-rotation-candidates.json`` when fixtures are
saturated (seed 04's rotation policy). ``run.json`` stays assay's record.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from fixtures_core.analysis.shipgate import CaseOutcome, SuiteOutcome
from fixtures_core.execution.attempt import with_kept_output
from fixtures_core.execution.devlyn_evidence import result_document, verify_document
from fixtures_core.files import write_text_atomic
from fixtures_core.records.rundoc import RunResult
from fixtures_core.results import RowResult
from fixtures_core.spec import RowSpec

RESULTS = "results"
_COPIED = (("input.md", "input.md"), ("diff.patch", "diff.patch"), ("changed-files.txt", "changed-files.txt"),
           ("setup.txt", "setup.log"))  # fmt: skip


def write_results(run_dir: Path, evidence_dir: Path, run: RunResult, specs: Sequence[RowSpec]) -> None:
    """The devlyn layout of every devlyn suite of ``run`` under ``run_dir/results`` (nothing without one)."""
    devlyn = [s for s in specs if s.ab is not None and s.ab.suite.source == "devlyn" and s.ab.arm is not None]
    if not devlyn:
        return
    results = run_dir / RESULTS
    rows = {row.id: row for row in run.rows}
    for spec in devlyn:
        row = rows.get(spec.id)
        if row is not None and row.samples and row.samples[0].attempt is not None:
            _write_arm(results, evidence_dir, spec, row, run.run_id)
    for suite in run.suites:
        if any(s.ab is not None and (s.fixture_id or s.file) == suite.file for s in devlyn):
            for case in suite.cases:
                _copy_judge(run_dir, results / case.name, case)
            _json(results / "summary.json", summary_document(suite, run))
            if suite.rotation_candidates:
                _json(results / "fixture-rotation-candidates.json", rotation_document(suite))


def _write_arm(results: Path, evidence_dir: Path, spec: RowSpec, row: RowResult, run_id: str) -> None:
    assert spec.ab is not None and spec.ab.arm is not None
    sample = row.samples[0]
    assert sample.attempt is not None
    attempt = with_kept_output(sample.attempt, evidence_dir)
    source = evidence_dir / attempt.evidence
    target = results / spec.ab.case / spec.ab.arm
    target.mkdir(parents=True, exist_ok=True)
    for name, devlyn_name in _COPIED:
        if (source / name).is_file():
            shutil.copyfile(source / name, target / devlyn_name)
    write_text_atomic(target / "transcript.txt", _read(source / "stdout.txt") + _read(source / "stderr.txt"))
    checks = spec.ab.checks
    _json(target / "verify.json", verify_document(attempt, checks))
    who = {"fixture": spec.ab.case, "arm": spec.ab.arm, "run_id": run_id}
    diff = _read(source / "diff.patch")
    _json(
        target / "result.json", result_document(attempt, checks, who, sample.exit_code, sample.duration_ms, len(diff))
    )
    timing = {**who, "elapsed_seconds": int(sample.duration_ms // 1000), "timed_out": attempt.arm_timed_out}
    if spec.ab.arm_timeout_s is not None:
        timing["timeout_seconds"] = int(spec.ab.arm_timeout_s)
    _json(target / "timing.json", timing)


def _copy_judge(run_dir: Path, target: Path, case: CaseOutcome) -> None:
    """The first judgment's judge.json (devlyn's shape) and the prompt the judge saw."""
    judgment = next((j for j in case.judgments if j.error is None), None)
    if judgment is None:
        return
    folder = run_dir / judgment.evidence
    target.mkdir(parents=True, exist_ok=True)
    if (folder / "judge.json").is_file():
        shutil.copyfile(folder / "judge.json", target / "judge.json")
    if (folder / "input.txt").is_file():
        shutil.copyfile(folder / "input.txt", target / "judge-prompt.txt")


def summary_document(suite: SuiteOutcome, run: RunResult) -> dict[str, object]:
    """devlyn's ``summary.json`` (compile-report.py's shape, which ship-gate.py reads) of one suite: every
    figure computed as compile-report.py computes it, under its name.

    ``fixtures_scored`` are the cases with a first-arm score; averages and margin averages are over them,
    to one decimal; a fixture of category ``edge`` is devlyn's known limit, every other scored one is gated;
    ``hard_floor_violations`` counts the cases whose first arm was disqualified. The pairs are devlyn's:
    first over second (``variant_over_bare``), the third arm (devlyn's L1, ``solo_claude``, named ``solo``)
    over second and first over it. assay's own figures are in run.json and under ``suite`` (seed 04's run
    record): ``failed_hard_gates`` there is assay's count of failed hard gates."""
    first, second = suite.compare or (suite.arms[0], suite.arms[-1])
    solo = next((arm for arm in suite.arms if arm not in (first, second)), None)
    pairs = _pairs(first, second, solo)
    rows = [_row(case, first, second, pairs) for case in suite.cases]
    scored = [row for row, case in zip(rows, suite.cases, strict=True) if _score(case, first) is not None]
    gated = [row for row in scored if row["category"] != KNOWN_LIMIT_CATEGORY]
    averages = {arm: _mean([_arm_score(row, arm) for row in scored]) for arm in suite.arms}
    margins_avg = {name: _mean([_margin(row, name) for row in scored]) for name in pairs}
    git = run.environment.get("git")
    git = git if isinstance(git, Mapping) else {}
    return {
        "run_id": run.run_id,
        "label": run.label,
        "git_sha": git.get("commit", "unknown"),
        "branch": git.get("branch", "unknown"),
        "completed_at": run.finished_at,
        "fixtures_total": len(rows),
        "fixtures_scored": len(scored),
        f"{first}_avg": averages.get(first),
        f"{second}_avg": averages.get(second),
        "margin_avg": margins_avg.get(_pair_name(first, second)),
        "hard_floor_violations": sum(1 for row in rows if row[f"{first}_disqualifier"]),
        "margin_ge_5_count": sum(1 for row in gated if _number(row["margin"]) >= MARGIN_FLOOR),
        "gated_fixtures": len(gated),
        "known_limit_fixtures": len(scored) - len(gated),
        "arms_present": {arm: any(arm in c.arms for c in suite.cases) for arm in suite.arms},
        "scores_avg_by_arm": averages,
        "margins_avg": margins_avg,
        "rows": rows,
        "suite": {
            "fixtures_run": suite.fixtures_run,
            f"{first}_avg": _rounded(suite.averages.get(first)),
            f"{second}_avg": _rounded(suite.averages.get(second)),
            "margin_avg": _rounded(suite.margin),
            "failed_hard_gates": suite.failed_hard_gates,
            "ship_gate": suite.verdict,
        },
    }


KNOWN_LIMIT_CATEGORY = "edge"  # compile-report.py's known limit (ship-gate.py's warning adds "known-limit")
MARGIN_FLOOR = 5.0


def _pair_name(arm: str, other: str) -> str:
    """devlyn's name of a margin: ``variant_over_bare``, ``solo_over_bare`` (its L1 arm ``solo_claude`` is
    ``solo`` there)."""

    def short(name: str) -> str:
        return "solo" if name == "solo_claude" else name

    return f"{short(arm)}_over_{short(other)}"


def _pairs(first: str, second: str, solo: str | None) -> dict[str, tuple[str, str]]:
    """devlyn's margins by name: first over second, and with a third arm, it over second and first over it."""
    pairs = [(first, second)] + ([(solo, second), (first, solo)] if solo is not None else [])
    return {_pair_name(arm, other): (arm, other) for arm, other in pairs}


def rotation_document(suite: SuiteOutcome) -> dict[str, object]:
    """Seed 04's rotation policy: the saturated fixtures, for a person to replace with harder ones."""
    return {
        "candidates": list(suite.rotation_candidates),
        "reason": f"every arm scored above 95 in this run and in {suite.baseline} (saturation)",
    }


def _row(case: CaseOutcome, first: str, second: str, pairs: Mapping[str, tuple[str, str]]) -> dict[str, object]:
    arms = {
        arm: {
            "score": outcome.score,
            "wall_s": _positive(round(outcome.duration_ms / 1000, 3) if outcome.duration_ms is not None else None),
            "verify_score": _positive(outcome.verify_score),
            "disqualifier": outcome.disqualified,
            "timed_out": outcome.timed_out,
            "critical_findings": list(outcome.critical),
            "_axis_validation_out_of_range_count": outcome.axes_invalid,
            "axes": dict(outcome.axes),
        }
        for arm, outcome in case.arms.items()
    }
    margins = {name: _difference(case, arm, other) for name, (arm, other) in pairs.items()}
    category = case.properties.get("category", "unknown")
    return {
        "fixture": case.name,
        "category": category,
        "arms": arms,
        "margins": margins,
        "winner": case.winner,
        f"{first}_score": _score(case, first),
        f"{second}_score": _score(case, second),
        "margin": margins.get(_pair_name(first, second)),
        f"{first}_disqualifier": case.arms[first].disqualified if first in case.arms else None,
        "verdict": case.verdict,
    }


def _positive(value: float | None) -> float | None:
    """compile-report.py's ``strict_number``: a figure that is not above 0 reads null (a verify score of 0
    too; run.json keeps assay's 0)."""
    return value if value is not None and value > 0 else None


def _difference(case: CaseOutcome, arm: str, other: str) -> float | None:
    mine, theirs = _score(case, arm), _score(case, other)
    return mine - theirs if mine is not None and theirs is not None else None


def _arm_score(row: Mapping[str, object], arm: str) -> float | None:
    arms = row["arms"]
    outcome = arms.get(arm) if isinstance(arms, Mapping) else None
    score = outcome.get("score") if isinstance(outcome, Mapping) else None
    return float(score) if isinstance(score, int | float) else None


def _margin(row: Mapping[str, object], name: str) -> float | None:
    margins = row["margins"]
    value = margins.get(name) if isinstance(margins, Mapping) else None
    return float(value) if isinstance(value, int | float) else None


def _number(value: object) -> float:
    """compile-report.py's ``(r.get("margin") or 0)``: a missing margin counts as 0."""
    return float(value) if isinstance(value, int | float) else 0.0


def _mean(values: list[float | None]) -> float | None:
    """compile-report.py's ``avg``: the mean of the values there are, to one decimal; None without one."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 1) if present else None


def _score(case: CaseOutcome, arm: str) -> float | None:
    outcome = case.arms.get(arm)
    return outcome.score if outcome is not None else None


def _rounded(value: float | None) -> float | None:
    """devlyn's averages: one decimal."""
    return round(value, 1) if value is not None else None


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _json(path: Path, document: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(document, indent=2, default=str) + "\n")
