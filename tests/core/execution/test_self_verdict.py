"""An arm's verdict about itself, read from its workspace (devlyn's pipeline.state.json)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures_core.execution.self_verdict import self_verdict_problem
from fixtures_core.suite import SelfVerdict

VERDICT = SelfVerdict(
    files=(".devlyn/runs/*/state.json", ".devlyn/state.json"),
    fields=("phases.final.verdict", "phases.verify.verdict"),
    accepted=("PASS", "PASS_WITH_ISSUES"),
)


def state(path: Path, final: str, verify: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"phases": {"final": {"verdict": final}, "verify": {"verdict": verify}}}))


def test_the_arms_own_verdict_passes_only_with_every_field_accepted(tmp_path: Path) -> None:
    assert (
        self_verdict_problem(VERDICT, tmp_path)
        == "no verdict file of its own (.devlyn/runs/*/state.json, .devlyn/state.json)"
    )
    state(tmp_path / ".devlyn" / "state.json", "PASS", "PASS_WITH_ISSUES")
    assert self_verdict_problem(VERDICT, tmp_path) is None
    state(tmp_path / ".devlyn" / "state.json", "PASS", "NEEDS_WORK")
    assert self_verdict_problem(VERDICT, tmp_path) == (
        "its verdict file .devlyn/state.json says phases.verify.verdict = 'NEEDS_WORK' "
        "(accepted: PASS, PASS_WITH_ISSUES)"
    )


def test_the_newest_pipeline_run_folder_comes_first(tmp_path: Path) -> None:
    state(tmp_path / ".devlyn" / "state.json", "PASS", "PASS")
    state(tmp_path / ".devlyn" / "runs" / "2026-01-01" / "state.json", "PASS", "PASS")
    state(tmp_path / ".devlyn" / "runs" / "2026-02-01" / "state.json", "BLOCKED", "PASS")
    problem = self_verdict_problem(VERDICT, tmp_path)
    assert problem is not None and ".devlyn/runs/2026-02-01/state.json" in problem and "BLOCKED" in problem
