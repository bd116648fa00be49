#!/usr/bin/env python3
"""Record what devlyn-cli's own benchmark harness concludes on the corpus in tests/devlyn/suite.

Builds a throw-away bench under /tmp (a git repo holding our suite plus devlyn's
scripts, copied from --devlyn), runs devlyn's run-suite.sh with our stub `claude`
and `codex` first on PATH, and writes what it concluded to expected/*.json.
Nothing of devlyn's is written into this repository: only the figures.

    python3 tests/devlyn/derive.py --devlyn /tmp/devlyn-src
    python3 tests/devlyn/derive.py --devlyn /tmp/devlyn-src --real --out /tmp/devlyn-real.json

Standard library only. See tests/devlyn/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

Json = dict[str, Any]

HERE = Path(__file__).resolve().parent
SUITE = HERE / "suite"
STUBS = HERE / "stubs"
SCENARIOS = HERE / "scenarios"
EXPECTED = HERE / "expected"
MIRROR = Path("/work/.mirror/fysoul17+devlyn-cli/repo")
BENCH = Path("benchmark/auto-resolve")
ARMS = ("variant", "solo_claude", "bare")
HARNESS = (
    "run-suite.sh",
    "run-fixture.sh",
    "judge.sh",
    "compile-report.py",
    "ship-gate.py",
    "oracle-scope-tier-a.py",
    "oracle-scope-tier-b.py",
    "oracle-test-fidelity.py",
    "pair_evidence_contract.py",
)
SUITE_FIELDS = (
    "fixtures_total",
    "fixtures_scored",
    "variant_avg",
    "bare_avg",
    "margin_avg",
    "scores_avg_by_arm",
    "margins_avg",
    "hard_floor_violations",
    "margin_ge_5_count",
    "gated_fixtures",
    "known_limit_fixtures",
    "arms_present",
)
SHIM = """#!/usr/bin/env bash
# Stand-in for devlyn's scripts/codex-shim/codex (written by tests/devlyn/derive.py):
# refuse when the arm has codex blocked, else hand over to the codex on PATH.
if [ -n "${CODEX_BLOCKED:-}" ]; then echo "codex blocked for this arm" >&2; exit 1; fi
exec "${CODEX_REAL_BIN:-codex}" "$@"
"""
MONITORED = """#!/usr/bin/env bash
# Stand-in for devlyn's config/skills/_shared/codex-monitored.sh (written by tests/devlyn/derive.py).
exec "${CODEX_REAL_BIN:-codex}" "$@"
"""
# Subsets run by fixture id (devlyn's run-suite.sh takes folder names): tag -> (scenario, fixtures).
SUBSETS = {
    "subset": ("night1", ("F2-goodbye-command", "F5-upper-no-deps")),
    "subset-night2": ("night2", ("F3-name-guard", "F5-upper-no-deps", "F9-e2e-ideate-to-resolve")),
}
EMPTY_SCENARIO = {"description": "no fixture named: every pair takes the stubs' hash-based defaults", "fixtures": {}}


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def build_bench(root: Path, devlyn: Path, real: bool) -> Path:
    """Lay out a fake devlyn REPO_ROOT under `root` and commit it; return its path."""
    repo = root / "repo"
    bench = repo / BENCH
    source = devlyn / BENCH
    missing = [name for name in HARNESS if not (source / "scripts" / name).is_file()]
    if missing:
        raise SystemExit(f"derive.py: {source / 'scripts'} lacks {', '.join(missing)}")
    shutil.copytree(source / "scripts", bench / "scripts")
    suite = source if real else SUITE
    shutil.copytree(suite / "fixtures", bench / "fixtures")
    shutil.copyfile(suite / "RUBRIC.md", bench / "RUBRIC.md")
    # An existing node_modules makes run-suite.sh skip its one-time `npm install`.
    (bench / "fixtures" / "test-repo" / "node_modules").mkdir(exist_ok=True)
    # run-fixture.sh insists on these two files whenever a codex is on PATH.
    for rel, text in (("scripts/codex-shim/codex", SHIM), ("config/skills/_shared/codex-monitored.sh", MONITORED)):
        target = repo / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o755)
    git(repo, "-c", "init.defaultBranch=main", "init", "-q")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=derive", "-c", "user.email=derive@invalid", "commit", "-q", "-m", "fake devlyn root")
    return repo


def base_env(root: Path) -> dict[str, str]:
    """The environment devlyn's scripts run in: our stubs first on PATH, a fresh HOME, no assay variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASSAY_", "STUB_", "CODEX_", "BENCH_"))}
    home = root / "home"
    home.mkdir(exist_ok=True)
    # The interpreter running derive.py goes first after the stubs, so devlyn's many `python3`
    # calls (about ten per arm) skip wrapper shims such as pyenv's; it is the same interpreter.
    python_dir = Path(sys.executable).resolve().parent
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(STUBS), str(python_dir), env.get("PATH", "")]),
        PYTHONIOENCODING="utf-8",
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def run_suite(repo: Path, env: dict[str, str], scenario: Path, args: list[str], logs: Path, tag: str) -> Json:
    """Run devlyn's run-suite.sh once; output goes to files (a pipe would wait for the watchdog's sleeps)."""
    cmd = ["bash", str(repo / BENCH / "scripts" / "run-suite.sh"), *args]
    out_path, err_path = logs / f"{tag}.stdout", logs / f"{tag}.stderr"
    started = time.monotonic()
    with out_path.open("w") as out, err_path.open("w") as err:
        code = subprocess.run(
            cmd, cwd=repo, env={**env, "STUB_SCENARIO": str(scenario)}, stdout=out, stderr=err
        ).returncode
    wall = round(time.monotonic() - started, 1)
    print(f"derive.py: {tag}: exit {code} in {wall} s", file=sys.stderr)
    return {"cmd": cmd, "exit_code": code, "wall_seconds": wall, "stdout": out_path.read_text(encoding="utf-8")}


def ship_gate(stdout: str) -> Json | None:
    """The verdict, failure and warning lines ship-gate.py printed, or None when it did not run."""
    lines = stdout.splitlines()
    verdicts = [line for line in lines if "SHIP-GATE VERDICT:" in line]
    if not verdicts:
        return None
    verdict = verdicts[-1].split("SHIP-GATE VERDICT:")[1].strip(" ═")
    return {
        "verdict": verdict,
        "failures": [line.strip()[2:] for line in lines if line.startswith("  ✗ ")],
        "warnings": [line.strip()[2:] for line in lines if line.startswith("  ⚠ ")],
        "blessed": any(line.startswith("Blessed:") for line in lines),
    }


def verify_record(verify: Json) -> Json:
    """The rule-level content of one arm's verify.json."""
    commands = [
        {"cmd": c.get("cmd"), "pass": c.get("pass"), "reason": c.get("reason"), "actual_exit": c.get("actual_exit")}
        for c in verify.get("commands", [])
    ]
    return {
        "commands": commands,
        "pass_vector": [c["pass"] for c in commands],
        "forbidden_pattern_hits": [
            {"pattern": h.get("pattern"), "severity": h.get("severity"), "scoped_to": h.get("scoped_to")}
            for h in verify.get("forbidden_pattern_hits", [])
        ],
        "deps_added": verify.get("deps_added"),
        "max_deps_added": verify.get("max_deps_added"),
        "missing_required_files": verify.get("missing_required_files"),
        "forbidden_files_present": verify.get("forbidden_files_present"),
        "oracle_findings": sorted(
            (
                {k: f.get(k) for k in ("oracle", "type", "severity", "file", "error") if f.get(k) is not None}
                for f in verify.get("oracle_findings", [])
            ),
            key=lambda f: json.dumps(f, sort_keys=True),
        ),
        "oracle_disqualifier": verify.get("oracle_disqualifier"),
        "commands_passed": verify.get("commands_passed"),
        "commands_total": verify.get("commands_total"),
        "verify_score": verify.get("verify_score"),
        "disqualifier": verify.get("disqualifier"),
    }


def result_record(result: Json) -> Json:
    keys = ("invoke_exit", "timed_out", "invoke_failure", "invoke_failure_reason", "terminal_verdict", "verify_verdict")
    return {k: result.get(k) for k in keys}


def judge_record(judge: Json) -> Json:
    """judge.json with the blind letters (a random seed per run) turned back into arms."""
    mapping = {k: v for k, v in (judge.get("_blind_mapping") or {}).items() if k in ("A", "B", "C")}
    letter_of = {"a_breakdown": "A", "b_breakdown": "B", "c_breakdown": "C"}
    validation = judge.get("_axis_validation") or {}
    cells = [
        {"arm": mapping.get(letter_of.get(c.get("breakdown"))), "axis": c.get("axis"), "value": c.get("value")}
        for c in validation.get("out_of_range_cells", [])
    ]
    caps = sorted(
        ({k: v for k, v in row.items() if k != "letter"} for row in judge.get("_verify_score_caps", [])),
        key=lambda row: row["arm"],
    )
    axes = {}
    for key, letter in letter_of.items():
        if letter in mapping and isinstance(judge.get(key), dict):
            axes[mapping[letter]] = {a: judge[key].get(a) for a in ("spec", "constraint", "scope", "quality")}
    return {
        "scores_by_arm": judge.get("scores_by_arm"),
        "axes_by_arm": axes,
        "axis_validation": {"out_of_range_count": validation.get("out_of_range_count"), "cells": cells},
        "verify_score_caps": caps,
        "disqualifiers_by_arm": judge.get("disqualifiers_by_arm"),
        "findings_by_arm": judge.get("findings_by_arm"),
        "winner_arm": judge.get("winner_arm"),
        "margins": judge.get("margins"),
        "judge_cli": judge.get("_judge_cli"),
    }


ROW_ARM_FIELDS = (
    "score",
    "disqualifier",
    "dq_judge",
    "dq_deterministic",
    "verify_score",
    "timed_out",
    "invoke_failure",
)
ROW_FIELDS = ("category", "margins", "margin", "winner", "variant_score", "variant_disqualifier")


def row_record(row: Json) -> Json:
    """One summary.json row: per-arm outcome, margins and winner."""
    arms = {}
    for arm, block in (row.get("arms") or {}).items():
        arms[arm] = {k: block.get(k) for k in ROW_ARM_FIELDS}
        arms[arm]["axis_out_of_range_count"] = block.get("_axis_validation_out_of_range_count")
    return {"arms": arms, **{k: row.get(k) for k in ROW_FIELDS}}


def collect(bench: Path, run_id: str, run: Json) -> Json:
    """Everything the corpus checks, from one run's results folder and its stdout."""
    res = bench / "results" / run_id
    fixtures = {}
    for fdir in sorted(p for p in res.iterdir() if p.is_dir()):
        entry: Json = {"arms": {}}
        for arm in ARMS:
            verify, result = read_json(fdir / arm / "verify.json"), read_json(fdir / arm / "result.json")
            if verify is None and result is None:
                continue
            entry["arms"][arm] = {
                "verify": verify_record(verify or {}),
                "result": result_record(result or {}),
            }
        judge = read_json(fdir / "judge.json")
        if judge is not None:
            entry["judge"] = judge_record(judge)
        fixtures[fdir.name] = entry
    summary = read_json(res / "summary.json")
    record: Json = {
        "exit_code": run["exit_code"],
        "ship_gate": ship_gate(run["stdout"]),
        "fixtures": fixtures,
    }
    if summary is not None:
        record["suite"] = {k: summary.get(k) for k in SUITE_FIELDS}
        for row in summary.get("rows", []):
            fixtures.setdefault(row["fixture"], {"arms": {}})["summary"] = row_record(row)
    return record


def devlyn_commit(devlyn: Path) -> str | None:
    for candidate in (devlyn, MIRROR):
        try:
            return git(candidate, "rev-parse", "HEAD")
        except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
            continue
    return None


def provenance(devlyn: Path, runs: dict[str, Json], run_ids: dict[str, str], scenarios: dict[str, str]) -> Json:
    scripts = devlyn / BENCH / "scripts"
    return {
        "devlyn_cli_commit": devlyn_commit(devlyn),
        "devlyn_scripts_sha256": {name: hashlib.sha256((scripts / name).read_bytes()).hexdigest() for name in HARNESS},
        "derived_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "derive_command": " ".join(["python3", "tests/devlyn/derive.py", *sys.argv[1:]]),
        "run_suite_commands": {
            tag: " ".join(["bash", str(BENCH / "scripts" / "run-suite.sh"), *run["cmd"][2:]])
            for tag, run in runs.items()
        },
        "run_ids": run_ids,
        "scenarios": scenarios,
        "wall_seconds": {tag: run["wall_seconds"] for tag, run in runs.items()},
        "node": subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip(),
        "python": platform.python_version(),
        "note": "run-suite.sh paths are relative to a throw-away bench under /tmp built by derive.py",
    }


def write(path: Path, data: Json) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"derive.py: wrote {path}", file=sys.stderr)


def cleanup(run_ids: dict[str, str]) -> None:
    """Remove the arm work trees devlyn's run-fixture.sh left in /tmp for our run ids."""
    for run_id in run_ids.values():
        for path in Path("/tmp").glob(f"bench-{run_id}-*"):
            shutil.rmtree(path, ignore_errors=True)


def derive_corpus(devlyn: Path, root: Path, only: tuple[str, ...] = ()) -> None:
    repo = build_bench(root, devlyn, real=False)
    env, logs, bench = base_env(root), root / "logs", repo / BENCH
    logs.mkdir()
    token = secrets.token_hex(3)
    ids = {tag: f"{token}-{tag}" for tag in ("night1", "dry-run", "night2", *SUBSETS)}
    night1, night2 = SCENARIOS / "night1.json", SCENARIOS / "night2.json"
    plan = (
        ("night1", night1, ["--run-id", ids["night1"], "--bless"], ids["night1"]),
        ("rejudge", night1, ["--judge-only", "--run-id", ids["night1"]], ids["night1"]),
        ("dry-run", night1, ["--dry-run", "--run-id", ids["dry-run"]], ids["dry-run"]),
        ("night2", night2, ["--run-id", ids["night2"]], ids["night2"]),
        # Subsets as devlyn's users run them (run-suite.sh F2 F5), against night1 as shipped.
        *(
            (tag, SCENARIOS / f"{scenario}.json", ["--run-id", ids[tag], *fixtures], ids[tag])
            for tag, (scenario, fixtures) in SUBSETS.items()
        ),
    )
    try:
        for tag, scenario, args, run_id in plan:
            if only and tag not in (*only, "night1"):  # night1 is blessed: what the others compare with
                continue
            run = run_suite(repo, env, scenario, args, logs, tag)
            record = collect(bench, run_id, run)
            record["provenance"] = provenance(
                devlyn, {tag: run}, {tag: run_id}, {tag: str(scenario.relative_to(HERE.parent.parent))}
            )
            if tag == "night1":
                shipped = read_json(bench / "history" / "baselines" / "shipped.json")
                record["provenance"]["blessed_run_id"] = shipped.get("run_id") if shipped else None
            if not only or tag in only:
                write(EXPECTED / f"{tag}.json", record)
    finally:
        cleanup(ids)


def derive_real(devlyn: Path, root: Path, out: Path) -> None:
    repo = build_bench(root, devlyn, real=True)
    env, logs, bench = base_env(root), root / "logs", repo / BENCH
    logs.mkdir()
    scenario = root / "empty-scenario.json"
    scenario.write_text(json.dumps(EMPTY_SCENARIO), encoding="utf-8")
    run_id = f"{secrets.token_hex(3)}-real"
    try:
        run = run_suite(repo, env, scenario, ["--run-id", run_id], logs, "real-night1")
        record = collect(bench, run_id, run)
        record["provenance"] = provenance(
            devlyn, {"real-night1": run}, {"real-night1": run_id}, {"real-night1": "(empty)"}
        )
        write(out, record)
    finally:
        cleanup({"real": run_id})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devlyn", type=Path, required=True, help="folder holding devlyn's benchmark/auto-resolve/")
    parser.add_argument("--real", action="store_true", help="run devlyn's own suite (night1 only) instead of ours")
    parser.add_argument("--out", type=Path, help="output file for --real (never inside the repository)")
    parser.add_argument("--keep", action="store_true", help="keep the throw-away bench and its logs")
    parser.add_argument("--only", nargs="+", default=(), help="write only these records (night1 runs regardless)")
    args = parser.parse_args(argv)
    if args.real and args.out is None:
        parser.error("--real needs --out")
    devlyn = args.devlyn.resolve()
    root = Path(tempfile.mkdtemp(prefix="devlyn-derive-", dir="/tmp"))
    try:
        if args.real:
            derive_real(devlyn, root, args.out)
        else:
            derive_corpus(devlyn, root, tuple(args.only))
    finally:
        if args.keep:
            print(f"derive.py: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
