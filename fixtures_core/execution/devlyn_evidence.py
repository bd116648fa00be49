"""An attempt's evidence in devlyn's shapes: ``verify.json``, ``result.json`` and ``timing.json``.

devlyn's harness (``run-fixture.sh``) writes these per fixture and arm; its
judge reads ``verify.json`` beside the diff, and its report reads
``result.json``. assay builds them from its own attempt record, so devlyn's
judge sees the same document and devlyn's tools can read a run of assay's.
Keys come in devlyn's order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from fixtures_core.suite import Attempt, CaseChecks, Finding, VerifyResult

_TAIL = 500  # devlyn keeps the last 500 characters of a command's output


def verify_document(attempt: Attempt, checks: CaseChecks) -> dict[str, object]:
    """devlyn's ``verify.json`` of one attempt."""
    findings = attempt.findings
    oracle = [_oracle_item(f) for f in findings if f.kind == "oracle"]
    total = len(attempt.verify)
    passed = sum(v.passed for v in attempt.verify)
    document: dict[str, object] = {
        "commands": [_command(v) for v in attempt.verify],
        "forbidden_pattern_hits": _pattern_hits(findings, checks),
        "deps_added": attempt.deps_added or 0,
        "max_deps_added": checks.max_deps_added if checks.max_deps_added is not None else 0,
        "missing_required_files": [f.source for f in findings if f.kind == "required_file"],
        "forbidden_files_present": [f.file for f in findings if f.kind == "forbidden_file"],
        "oracle_findings": oracle,
        "oracle_disqualifier": any(f.kind == "oracle" and f.severity == "disqualifier" for f in findings),
        "commands_passed": passed,
        "commands_total": total,
        "verify_score": passed / total if total else 1.0,
    }
    document["disqualifier"] = any(f.severity == "disqualifier" and f.kind != "rule" for f in findings)
    return document


def _command(result: VerifyResult) -> dict[str, object]:
    if result.reason == "timeout" or (result.reason or "").startswith("error:"):
        return {"cmd": result.command, "pass": False, "reason": result.reason}
    return {
        "cmd": result.command,
        "expected_exit": result.expected_exit,
        "actual_exit": result.exit_code,
        "pass": result.passed,
        "reason": result.reason,
        "stdout_tail": result.output[-_TAIL:],
    }


def _pattern_hits(findings: tuple[Finding, ...], checks: CaseChecks) -> list[dict[str, object]]:
    """One hit per pattern that matched (devlyn searches each pattern once)."""
    hits = []
    seen = set()
    for finding in findings:
        if finding.kind != "pattern" or finding.source in seen:
            continue
        seen.add(finding.source)
        spec = next((p for p in checks.forbidden if p.pattern == finding.source), None)
        files: object = list(spec.files) if spec is not None and spec.files else "all"
        description = spec.description if spec is not None else ""
        hits.append(
            {"pattern": finding.source, "severity": finding.severity, "description": description, "scoped_to": files}
        )
    return hits


def _oracle_item(finding: Finding) -> dict[str, object]:
    try:
        item = json.loads(finding.text or "")
    except ValueError:
        item = None
    return item if isinstance(item, dict) else {"oracle": finding.source, "verdict": finding.rule}


def result_document(
    attempt: Attempt,
    checks: CaseChecks,
    who: Mapping[str, str],
    exit_code: int | None,
    duration_ms: float,
    diff_chars: int,
) -> dict[str, object]:
    """devlyn's ``result.json`` of one attempt (``who``: fixture, arm and run_id)."""
    verify = verify_document(attempt, checks)
    oracle = verify["oracle_findings"]
    if attempt.dry_run:  # no arm was invoked: run-fixture.sh records exit 0, no failure
        exit_code = 0
    failed = exit_code != 0 and not attempt.arm_timed_out
    return {
        "fixture": who["fixture"],
        "arm": who["arm"],
        "run_id": who["run_id"],
        "disqualifier": verify["disqualifier"],
        "oracle_disqualifier": verify["oracle_disqualifier"],
        "oracle_findings_count": len(oracle) if isinstance(oracle, list) else 0,
        "verify_score": verify["verify_score"],
        "commands_passed": verify["commands_passed"],
        "commands_total": verify["commands_total"],
        "diff_bytes": diff_chars,
        "files_changed": len(attempt.changed_files),
        "elapsed_seconds": int(duration_ms // 1000),
        "timed_out": attempt.arm_timed_out,
        "invoke_exit": 124 if attempt.arm_timed_out else exit_code,
        "invoke_failure": failed,
        "disqualifier_reasons": [f.describe() for f in attempt.findings if f.severity == "disqualifier"],
    }
