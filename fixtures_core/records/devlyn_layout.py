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
    """devlyn's ``summary.json`` (compile-report.py's shape, which ship-gate.py reads) of one suite.

    Its ``hard_floor_violations`` is devlyn's: the cases whose first arm was disqualified
    (assay's own, the hard gates that failed, is in run.json); ``suite`` is seed 04's run record."""
    first, second = suite.compare or (suite.arms[0], suite.arms[-1])
    scored = [c for c in suite.cases if _score(c, first) is not None]
    gated = [c for c in scored if c.known_limit is None]
    git = run.environment.get("git")
    git = git if isinstance(git, Mapping) else {}
    rows = [_row(case, suite, first, second) for case in suite.cases]
    averages = {arm: _rounded(suite.averages.get(arm)) for arm in suite.arms}
    dq_count = sum(1 for c in suite.cases if c.arms.get(first) is not None and c.arms[first].disqualified)
    return {
        "run_id": run.run_id,
        "label": run.label,
        "git_sha": git.get("commit", "unknown"),
        "branch": git.get("branch", "unknown"),
        "completed_at": run.finished_at,
        "fixtures_total": len(suite.cases),
        "fixtures_scored": len(scored),
        f"{first}_avg": averages.get(first),
        f"{second}_avg": averages.get(second),
        "margin_avg": _rounded(suite.margin),
        "hard_floor_violations": dq_count,
        "margin_ge_5_count": sum(1 for c in gated if (c.margin or 0) >= 5),
        "gated_fixtures": len(gated),
        "known_limit_fixtures": len(scored) - len(gated),
        "arms_present": {arm: any(arm in c.arms for c in suite.cases) for arm in suite.arms},
        "scores_avg_by_arm": averages,
        "margins_avg": {f"{arm}_over_{second}": _rounded(value) for arm, value in suite.margins.items()},
        "rows": rows,
        "suite": {
            "fixtures_run": suite.fixtures_run,
            f"{first}_avg": averages.get(first),
            f"{second}_avg": averages.get(second),
            "margin_avg": _rounded(suite.margin),
            "hard_floor_violations": suite.hard_floor_violations,
            "ship_gate": suite.verdict,
        },
    }


def rotation_document(suite: SuiteOutcome) -> dict[str, object]:
    """Seed 04's rotation policy: the saturated fixtures, for a person to replace with harder ones."""
    return {
        "candidates": list(suite.rotation_candidates),
        "reason": f"every arm scored above 95 in this run and in {suite.baseline} (saturation)",
    }


def _row(case: CaseOutcome, suite: SuiteOutcome, first: str, second: str) -> dict[str, object]:
    arms = {
        arm: {
            "score": outcome.score,
            "wall_s": round(outcome.duration_ms / 1000, 3) if outcome.duration_ms is not None else None,
            "verify_score": outcome.verify_score,
            "disqualifier": outcome.disqualified,
            "timed_out": outcome.timed_out,
            "critical_findings": list(outcome.critical),
            "_axis_validation_out_of_range_count": outcome.axes_invalid,
            "axes": dict(outcome.axes),
        }
        for arm, outcome in case.arms.items()
    }
    margins = {
        f"{arm}_over_{second}": (case.arms[arm].score - case.arms[second].score)  # type: ignore[operator]
        for arm in suite.arms
        if arm != second
        and arm in case.arms
        and second in case.arms
        and case.arms[arm].score is not None
        and case.arms[second].score is not None
    }
    category = case.properties.get("category", "unknown")
    return {
        "fixture": case.name,
        "category": category,
        "arms": arms,
        "margins": margins,
        "winner": case.winner,
        f"{first}_score": _score(case, first),
        f"{second}_score": _score(case, second),
        "margin": case.margin,
        f"{first}_disqualifier": case.arms[first].disqualified if first in case.arms else None,
        "verdict": case.verdict,
    }


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
