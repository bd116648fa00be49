"""Oracles: findings printed as JSON, and a failed oracle disqualifying the attempt."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fixtures_core.execution.oracles import oracle_findings, run_oracles
from fixtures_core.suite import OracleSpec

ORACLE = OracleSpec("scope-tier-a", ("x",))


def test_findings_take_their_severity_from_the_oracle() -> None:
    printed = {
        "oracle": "scope-tier-a",
        "findings": [
            {"category": "scope-tier-a:tier-a-violation", "severity": "hard", "file": "docs/ROADMAP.md"},
            {"type": "scope-unmatched", "severity": "warn"},
        ],
    }
    found = oracle_findings(ORACLE, json.dumps(printed))

    assert [(f.severity, f.rule, f.file, f.kind) for f in found] == [
        ("disqualifier", "scope-tier-a: scope-tier-a:tier-a-violation", "docs/ROADMAP.md", "oracle"),
        ("warning", "scope-tier-a: scope-unmatched", None, "oracle"),
    ]
    assert json.loads(found[0].text or "")["oracle"] == "scope-tier-a"  # the raw finding, for verify.json


def test_an_oracle_that_cannot_vouch_for_the_attempt_disqualifies_it() -> None:
    for output in ("not json", "[1]", json.dumps({"findings": [], "error": "git failed"})):
        (finding,) = oracle_findings(ORACLE, output)
        assert finding.severity == "disqualifier"
        assert json.loads(finding.text or "")["type"] == "oracle-error"


def test_run_oracles_runs_each_command_in_the_workspace(tmp_path: Path) -> None:
    script = "import json, os; print(json.dumps({'findings': [{'severity': 'flag', 'file': os.getcwd()}]}))"
    oracles = [OracleSpec("cwd", ()), OracleSpec("broken", ())]
    argvs = [[sys.executable, "-c", script], [sys.executable, "-c", "raise SystemExit(3)"]]

    found = run_oracles(oracles, argvs, tmp_path, {}, time.monotonic() + 60, None)

    assert [(f.severity, f.file) for f in found[:1]] == [("disqualifier", str(tmp_path))]
    assert "oracle invocation failed (exit code 3)" in found[1].rule
