"""Oracles: commands run in an attempt's workspace after its arm that print findings as JSON.

devlyn's harness runs its deterministic oracles (``scripts/oracle-*.py``)
this way: each prints ``{"oracle": NAME, "findings": [{"severity": ...}],
"error": TEXT}``. A finding whose severity disqualifies makes the arm
disqualified; an oracle that fails, or prints something else, disqualifies
too (the harness cannot vouch for the attempt).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import execute
from fixtures_core.suite import Finding, OracleSpec
from fixtures_core.text import excerpt

ORACLE_TIMEOUT_S = 300.0


def run_oracles(
    oracles: Sequence[OracleSpec],
    argvs: Sequence[Sequence[str]],
    workspace: Path,
    env: Mapping[str, str],
    deadline: float,
    containment: Containment | None,
) -> tuple[Finding, ...]:
    """Every oracle's findings (rendered argv each), in order; a failed oracle is one disqualifier."""
    findings: list[Finding] = []
    for oracle, argv in zip(oracles, argvs, strict=True):
        done = execute(
            list(argv),
            deadline=min(deadline, time.monotonic() + ORACLE_TIMEOUT_S),
            cwd=str(workspace),
            env=env,
            containment=containment,
        )
        if done.exit_code != 0:
            why = done.error or ("timed out" if done.timed_out else f"exit code {done.exit_code}")
            findings.append(_failed(oracle, f"oracle invocation failed ({why})"))
            continue
        findings.extend(oracle_findings(oracle, done.stdout.decode("utf-8", "replace")))
    return tuple(findings)


def oracle_findings(oracle: OracleSpec, output: str) -> list[Finding]:
    """The findings an oracle printed; one disqualifier when its output is not such JSON or names an error."""
    try:
        document = json.loads(output)
    except ValueError:
        return [_failed(oracle, f"oracle output is not JSON: {excerpt(output, 80)!r}")]
    if not isinstance(document, dict):
        return [_failed(oracle, "oracle output is not a JSON object")]
    name = document.get("oracle") if isinstance(document.get("oracle"), str) and document.get("oracle") else oracle.name
    found = []
    error = document.get("error")
    if isinstance(error, str) and error:
        found.append(_failed(oracle, error, str(name)))
    items = document.get("findings")
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        severity = item.get("severity")
        rule = str(item.get("category") or item.get("type") or "finding")
        path = item.get("file") or item.get("path")
        found.append(
            Finding(
                "disqualifier" if severity in oracle.disqualifying else "warning",
                f"{name}: {rule}",
                str(path) if isinstance(path, str) else None,
                kind="oracle",
                source=str(name),
                text=json.dumps({**item, "oracle": name}, sort_keys=True),
            )
        )
    return found


def _failed(oracle: OracleSpec, why: str, name: str | None = None) -> Finding:
    """An oracle that could not vouch for the attempt: devlyn records an ``oracle-error`` of severity hard."""
    item = {"oracle": name or oracle.name, "type": "oracle-error", "severity": "hard", "error": why}
    return Finding(
        "disqualifier",
        f"{name or oracle.name}: {why}",
        kind="oracle",
        source=name or oracle.name,
        text=json.dumps(item, sort_keys=True),
    )
