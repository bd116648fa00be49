"""devlyn benchmark folders, run end to end through the command line: real processes, git, both engines.

The example (``examples/devlyn``) runs on both engines with the same answers
and leaves devlyn's layout beside run.json. A benchmark folder run as it is
gets devlyn's default arms and judge (``claude`` and ``codex``, here stand-ins
written below and put first on PATH), and devlyn's disqualifying outcomes: an
arm past its fixture's time limit, an oracle's hard finding, a pipeline arm
without its own PASS verdict.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, WIDE, run_cli

EXAMPLE = REPO / "examples" / "devlyn" / "suite.md"


def run(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
    target = tmp_path / "run.json"
    done = run_cli([*args, "--out", str(tmp_path / "state"), "--json", str(target)], tmp_path, {**WIDE, **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(target.read_text()) if target.exists() else {}


def conclusions(document: dict[str, Any]) -> dict[str, Any]:
    """What a suite concludes: per case the scores, disqualifications, margin and winner; gates; verdict."""
    (suite,) = document["suites"]
    cases = {
        case["name"]: (
            {arm: (a.get("score"), a.get("disqualified", False)) for arm, a in case["arms"].items()},
            case.get("margin"),
            case.get("winner"),
        )
        for case in suite["cases"]
    }
    return {"cases": cases, "gates": [(g["name"], g["status"]) for g in suite["gates"]], "verdict": suite["verdict"]}


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_the_example_benchmark_gives_the_same_answers_on_both_engines(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if engine == "prefect":
        request.getfixturevalue("prefect_server")
    done, document = run([str(EXAMPLE), "--engine", engine], tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    found = conclusions(document)
    # bare: F1 passes 2 of 3 commands, so the judge's 84 is capped at floor(100 * 2/3) = 66 and it is disqualified
    # (a failed verification); F2 swallows an error (a disqualifying pattern): 66 too, and it loses both
    assert found["cases"] == {
        "F1-loud-flag": ({"variant": (100.0, False), "bare": (66.0, True)}, 34.0, "variant"),
        "F2-count-words": ({"variant": (100.0, False), "bare": (66.0, True)}, 34.0, "variant"),
        "F8-known-limit-docstring": ({"variant": (100.0, False), "bare": (100.0, False)}, 0.0, "tie"),
        "F9-e2e-version": ({"variant": (100.0, False), "bare": (92.0, False)}, 8.0, "variant"),
    }
    assert found["verdict"] == "PASS" and all(status == "pass" for _name, status in found["gates"])
    (suite,) = document["suites"]
    assert (suite["fixtures_run"], suite["hard_floor_violations"]) == (4, 0)
    assert suite["arm_models"] == {"variant": "fake careful agent", "bare": "fake hasty agent"}
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{6}Z-([0-9a-f]{7}-[A-Za-z0-9._-]+|nogit)", document["run_id"])


def test_a_devlyn_run_leaves_devlyns_layout_beside_run_json(tmp_path: Path) -> None:
    done, document = run([str(EXAMPLE), "--engine", "local"], tmp_path)
    assert done.returncode == 0, done.stderr
    results = tmp_path / "state" / "runs" / document["run_id"] / "results"
    fixtures = EXAMPLE.parent / "fixtures"

    arm = results / "F2-count-words" / "bare"
    assert sorted(p.name for p in arm.iterdir()) == [
        "changed-files.txt", "diff.patch", "input.md", "result.json", "setup.log", "timing.json", "transcript.txt",
        "verify.json",
    ]  # fmt: skip
    assert (arm / "input.md").read_text() == (fixtures / "F2-count-words" / "task.txt").read_text()
    variant = results / "F2-count-words" / "variant"
    assert (variant / "input.md").read_text() == (fixtures / "F2-count-words" / "spec.md").read_text()
    verify = json.loads((arm / "verify.json").read_text())
    assert list(verify) == [
        "commands", "forbidden_pattern_hits", "deps_added", "max_deps_added", "missing_required_files",
        "forbidden_files_present", "oracle_findings", "oracle_disqualifier", "commands_passed", "commands_total",
        "verify_score", "disqualifier",
    ]  # fmt: skip
    assert [c["pass"] for c in verify["commands"]] == [True, False, True]  # a missing file exits 1, not 2
    assert [h["description"] for h in verify["forbidden_pattern_hits"]] == ["silent catch (an error swallowed)"]
    assert verify["disqualifier"] is True
    judge = json.loads((results / "F2-count-words" / "judge.json").read_text())
    assert sorted(judge["_blind_mapping"].values()) == ["bare", "variant"] and judge["winner_arm"] == "variant"
    assert (results / "F2-count-words" / "judge-prompt.txt").read_text().startswith("You are a blind code-review")
    summary = json.loads((results / "summary.json").read_text())
    assert (summary["variant_avg"], summary["bare_avg"], summary["margin_avg"]) == (100.0, 81.0, 19.0)
    assert (summary["gated_fixtures"], summary["known_limit_fixtures"], summary["margin_ge_5_count"]) == (3, 1, 3)
    assert summary["suite"]["ship_gate"] == "PASS"


STUB_CLAUDE = r"""#!/usr/bin/env python3
# A stand-in for `claude -p PROMPT`: what it does depends on the fixture and arm assay names.
import json, os, pathlib, sys, time
case, arm = os.environ["ASSAY_CASE"], os.environ["ASSAY_ARM"]
prompt = sys.argv[sys.argv.index("-p") + 1]
pathlib.Path("prompt-seen.txt").write_text(prompt)
if case == "F2-slow" and arm == "bare":
    time.sleep(60)  # past the fixture's timeout_seconds (2): stopped, and the attempt goes on
if arm == "variant":
    state = {"phases": {"final_report": {"verdict": "PASS"}, "verify": {"verdict": "PASS"}}}
    pathlib.Path(".devlyn").mkdir(exist_ok=True)
    pathlib.Path(".devlyn/pipeline.state.json").write_text(json.dumps(state))
    pathlib.Path("variant-was-here.txt").write_text("variant-was-here\n")  # the judge tells it by this
    if case == "F3-logged":
        pathlib.Path("agent.log").write_text("a log the arm left behind\n")
"""

STUB_CODEX = r"""#!/usr/bin/env python3
# A stand-in for `codex exec ... -`: every arm scores 80 (90 for the variant), label A wins.
import json, re, sys
if sys.argv[1:] == ["--version"]:
    print("codex-cli stand-in"); raise SystemExit
prompt = sys.stdin.read()
labels = re.findall(r"=== IMPLEMENTATION ([ABC]) ===", prompt)
reply = {"winner": "A", "critical_findings": {}, "disqualifiers": {}}
for label in labels:
    section = prompt.split(f"=== IMPLEMENTATION {label} ===")[1]
    variant = "variant-was-here" in section
    reply[label.lower() + "_score"] = 90 if variant else 80
    reply[label.lower() + "_breakdown"] = {"spec": 25, "constraint": 25, "scope": 20, "quality": 20, "notes": ""}
print("banner")
print(json.dumps(reply))
"""

ORACLE = r"""#!/usr/bin/env python3
# A stand-in for devlyn's scripts/oracle-scope-tier-a.py: a hard finding when a .log file was added.
import argparse, json, subprocess
p = argparse.ArgumentParser(); p.add_argument("--work"); p.add_argument("--scaffold"); p.add_argument("--expected")
a = p.parse_args()
names = subprocess.run(["git", "diff", "--name-only", a.scaffold], cwd=a.work, capture_output=True, text=True).stdout
logs = [n for n in names.split() if n.endswith(".log")]
print(json.dumps({"oracle": "scope-tier-a", "findings": [{"category": "tier-a-violation", "severity": "hard", "file": f}
                                                         for f in logs]}))
"""


def executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def bench_fixture(root: Path, name: str, timeout: int = 60, setup: str = "") -> None:
    folder = root / "fixtures" / name
    folder.mkdir(parents=True)
    intent = f"Do the {name} task."
    metadata = {"id": name, "category": "trivial", "timeout_seconds": timeout, "intent": intent}
    (folder / "metadata.json").write_text(json.dumps(metadata))
    (folder / "spec.md").write_text(f'---\nid: "{name}"\n---\n\n## Context\n\n{intent} (spec)\n')
    (folder / "task.txt").write_text(f"{intent} (task)\n")
    expected = {"verification_commands": [{"cmd": "test -f prompt-seen.txt"}], "required_files": ["README"]}
    (folder / "expected.json").write_text(json.dumps(expected))
    (folder / "NOTES.md").write_text("why\n")
    executable(folder / "setup.sh", "#!/bin/sh\n" + setup)


def test_a_folder_runs_with_devlyns_arms_judge_and_disqualifying_outcomes(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    (bench / "fixtures" / "test-repo").mkdir(parents=True)
    (bench / "fixtures" / "test-repo" / "README").write_text("a repo\n")
    (bench / "fixtures" / "test-repo" / ".gitignore").write_text(".devlyn\n")
    (bench / "RUBRIC.md").write_text("Score it.\n")
    bench_fixture(bench, "F1-plain")
    bench_fixture(bench, "F2-slow", timeout=2)
    bench_fixture(bench, "F3-logged", setup="echo setup > setup.log\n")  # committed before the arm: not its diff
    (bench / "scripts").mkdir()
    executable(bench / "scripts" / "oracle-scope-tier-a.py", ORACLE)
    tools = tmp_path / "bin"
    tools.mkdir()
    executable(tools / "claude", STUB_CLAUDE)
    executable(tools / "codex", STUB_CODEX)
    path = f"{tools}:{os.environ['PATH']}"

    done, document = run([str(bench), "--engine", "local"], tmp_path, {"PATH": path})

    assert done.returncode == 1, done.stdout + done.stderr  # the variant of F3 is disqualified: a hard floor
    (suite,) = document["suites"]
    assert suite["arms"] == ["variant", "solo_claude", "bare"]
    assert suite["judge"]["protocol"] == "devlyn" and suite["judge"]["provenance"] == ["codex-cli stand-in"]
    arms = {(c["name"], arm): a for c in suite["cases"] for arm, a in c["arms"].items()}
    # F1: solo_claude keeps no pipeline state of its own: disqualified; bare is exempt (it gets task.txt)
    assert [arms[("F1-plain", arm)].get("disqualified", False) for arm in ("variant", "solo_claude", "bare")] == [
        False,
        True,
        False,
    ]
    assert any("the arm's own verdict: no verdict file" in f for f in arms[("F1-plain", "solo_claude")]["findings"])
    # F2: bare ran past timeout_seconds (2 s): stopped, its verification still ran, and it is disqualified
    slow = arms[("F2-slow", "bare")]
    assert slow["timed_out"] and slow["disqualified"]
    assert slow["verify_score"] == 1.0  # it wrote prompt-seen.txt before it hung, and verification still ran
    assert any("the arm ran past its time limit" in f for f in slow["findings"])
    # F3: the oracle sees only what an arm changed: setup.log came with setup; the variant left agent.log
    assert arms[("F3-logged", "variant")]["disqualified"]
    assert any("scope-tier-a: tier-a-violation" in f for f in arms[("F3-logged", "variant")]["findings"])
    assert not arms[("F3-logged", "bare")].get("disqualified", False)
    gates = {g["name"]: g["status"] for g in suite["gates"]}
    assert gates["no variant disqualifier"] == "fail"
    prompt_seen = tmp_path / "state" / "runs" / document["run_id"] / "results" / "F1-plain" / "bare" / "input.md"
    assert prompt_seen.read_text() == "Do the F1-plain task. (task)\n"
