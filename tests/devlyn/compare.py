#!/usr/bin/env python3
"""Compare assay's conclusions on a devlyn benchmark with devlyn's own, recorded by derive.py.

Each conclusion devlyn's harness reached (a verification vector, a pattern
hit, a disqualification, a score, a margin, a winner, a gate, the verdict,
the exit code, ...) is paired with assay's from the same run's run.json and
its devlyn-layout ``results/`` (every figure of compile-report.py's
``summary.json`` among them, the wall-clock ratios apart). A pair that differs
is explained only when seed 04 (or issue 44's subset rule) and devlyn's
harness differ there (``Conclusion.difference``) and assay's answer is the one
that rule gives, computed here from the run's evidence (``Conclusion.rule``);
any other difference is a disagreement.

The corpus test (tests/integration/test_devlyn_corpus.py) uses it; run as a
script it compares a run of devlyn's own suite with ``derive.py --real``::

    python3 tests/devlyn/derive.py --devlyn /tmp/devlyn-src --real --out /tmp/devlyn-real.json
    python3 tests/devlyn/compare.py --bench /tmp/devlyn-src/benchmark/auto-resolve --expected /tmp/devlyn-real.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ARMS = ("variant", "solo_claude", "bare")
STDOUT_ONLY = "stdout_contains matched against stdout alone (seed 04's key); devlyn also searches stderr"
DEPENDENCIES = "dependencies counted by name (seed 04); devlyn's counter skips every indented '+ ' line"
DISQUALIFIED_LOSES = "a disqualified arm loses its case (seed 04); devlyn keeps the judge's winner"
CATCH_RATE = "seed 04's critical-finding catch-rate soft gate, which devlyn's ship-gate.py lacks"
SUBSET = (
    "a gate about fixtures a subset did not run is not evaluated (issue 44); devlyn's ship-gate.py fails it "
    "(or, with --accept-missing, skips it)"
)
# devlyn's ship-gate.py lines, by what each says, and the default gate of a devlyn suite that says it.
GATE_OF_LINE = (
    ("variant disqualifier(s)", "no variant disqualifier"),
    ("axis-invalid", "the judge's axis scores are within 0-25"),
    ("F9 (E2E novice flow) must have variant margin", "every e2e fixture (F9) has variant margin >= +5"),
    ("F9 (E2E novice flow) missing", "every e2e fixture (F9) has variant margin >= +5"),
    ("gated fixtures have variant margin", "at least 7 gated fixtures have variant margin >= +5 (headroom-aware)"),
    ("F9 L1 (solo_over_bare) margin", "every e2e fixture (F9) has solo_claude margin over bare >= +5"),
    ("headroom-available fixtures have solo_over_bare",
     "at least 7 headroom-available fixtures have solo_claude margin over bare >= +5"),
    ("L1 disqualifier(s)", "no solo_claude disqualifier"),
    ("vs shipped (floor", "no fixture's variant score fell more than 5 points below shipped"),
    ("suite margin dropped", "the suite margin dropped no more than 3 points vs shipped"),
    ("lost its margin", "no fixture lost its margin (above +5 in shipped, 0 or less now)"),
    ("L1 (solo_over_bare) suite avg", "the solo_claude suite margin over bare is +5 or more"),
)  # fmt: skip
CATCH_GATE = "the critical-finding catch rate of variant did not fall vs shipped"


@dataclass(frozen=True)
class Conclusion:
    """One thing devlyn's harness concluded, and what assay concluded about the same thing."""

    what: str
    devlyn: object
    assay: object
    difference: str | None = None  # why they may differ: where assay follows seed 04
    rule: object = None  # what that rule, applied here independently of assay, makes the answer

    @property
    def agrees(self) -> bool:
        return self.devlyn == self.assay

    @property
    def explained(self) -> bool:
        """It differs where seed 04 decides, and assay's answer is the one the seed's rule gives."""
        return not self.agrees and self.difference is not None and self.assay == self.rule


@dataclass(frozen=True)
class Ran:
    """One assay run: its exit code, run document and devlyn-layout results folder."""

    returncode: int
    document: dict[str, Any]
    results: Path

    @property
    def suite(self) -> dict[str, Any]:
        (suite,) = self.document["suites"]
        return dict(suite)

    def case(self, name: str) -> dict[str, Any]:
        return dict(next(c for c in self.suite["cases"] if c["name"] == name))

    def file(self, *parts: str) -> dict[str, Any]:
        return dict(json.loads(self.results.joinpath(*parts).read_text()))


def run_assay(args: list[str], scenario: Path | None, state: Path, json_file: Path, cwd: Path) -> Ran:
    """``python -m flows.run ARGS`` with the stubs first on PATH (and the scenario, if any)."""
    env = {**os.environ, "PATH": f"{HERE / 'stubs'}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    env["PYTHONPATH"] = str(REPO)
    env.pop("PREFECT_API_URL", None)
    if scenario is not None:
        env["STUB_SCENARIO"] = str(scenario)
    command = [sys.executable, "-m", "flows.run", *args, "--out", str(state), "--json", str(json_file)]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=1800)
    if "Traceback" in done.stderr or not json_file.exists():
        raise RuntimeError(f"assay {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    document = json.loads(json_file.read_text())
    return Ran(done.returncode, document, state / "runs" / document["run_id"] / "results")


def compare(
    expected: dict[str, Any],
    ran: Ran,
    oracles: bool,
    shipped: dict[str, Any] | None = None,
    bench: Path | None = None,
    subset: bool = False,
) -> list[Conclusion]:
    """Every conclusion of ``expected`` (a derive.py record) against assay's run; ``oracles``: the run had
    devlyn's oracle scripts (else their findings are not compared); ``shipped``: the record of the run
    that was blessed before this one (for seed 04's catch-rate gate); ``bench``: the benchmark folder (its
    fixtures' expected.json, for seed 04's verification rule); ``subset``: the run left fixtures out."""
    found: list[Conclusion] = []
    for fixture, recorded in expected["fixtures"].items():
        commands = _declared_commands(bench, fixture)
        for arm in ARMS:
            found += _arm(fixture, arm, recorded, ran, oracles, "summary" in recorded, commands)
        if "summary" in recorded:
            found += [_with_verification(c, found) for c in _case(fixture, recorded, ran)]
    if "suite" in expected:
        found += _suite(expected, ran, shipped, subset)
    verdict = next((c for c in found if c.what == "verdict"), None)
    if verdict is not None and verdict.difference == SUBSET:
        rule = 1 if verdict.rule == "FAIL" else 0
        found.append(Conclusion("exit code", expected["exit_code"], ran.returncode, SUBSET, rule))
    else:
        found.append(Conclusion("exit code", expected["exit_code"], ran.returncode))
    return found


def _with_verification(conclusion: Conclusion, found: list[Conclusion]) -> Conclusion:
    """A summary row's verify score differs where the arm's verification does, by the same rule: the seed's
    score is the share of the commands the seed's rule passes."""
    if not conclusion.what.endswith(".verify_score") or conclusion.agrees:
        return conclusion
    fixture, _summary, where = conclusion.what.split(" ", 2)
    arm = where.split(".")[1]
    verification = next((c for c in found if c.what == f"{fixture}/{arm} verification"), None)
    if verification is None or verification.difference is None or not isinstance(verification.rule, list):
        return conclusion
    rule = sum(verification.rule) / len(verification.rule) if verification.rule else None
    return Conclusion(conclusion.what, conclusion.devlyn, conclusion.assay, verification.difference, rule)


def _declared_commands(bench: Path | None, fixture: str) -> list[dict[str, Any]] | None:
    """The fixture's verification commands as its expected.json declares them (None without a bench)."""
    path = bench / "fixtures" / fixture / "expected.json" if bench is not None else None
    if path is None or not path.is_file():
        return None
    return list(json.loads(path.read_text()).get("verification_commands", []))


def _seed_verification(
    declared: list[dict[str, Any]] | None, theirs: list[dict[str, Any]], ours: list[dict[str, Any]]
) -> list[tuple[bool, object]]:
    """Seed 04's verification rule where it differs from devlyn's: ``stdout_contains`` is matched against
    stdout alone. A command devlyn passed whose expected text the arm's output holds (``stdout_tail`` is
    stdout and stderr, as devlyn keeps it) while assay, matching stdout alone, misses it printed that text
    on stderr only: the seed fails it (``missing_contains``); every other command keeps devlyn's answer."""
    if declared is None:
        return []
    found: list[tuple[bool, object]] = []
    for command, their, our in zip(declared, theirs, ours, strict=True):
        texts = command.get("stdout_contains", [])
        output = str(our.get("stdout_tail", ""))
        on_stderr = their["pass"] and texts and all(t in output for t in texts) and our["reason"] == "missing_contains"
        found.append((False, "missing_contains") if on_stderr else (their["pass"], their["reason"]))
    return found


def _seed_dependencies(diff: str) -> int:
    """Seed 04's count of new dependencies: names added to package.json's dependency objects, by name,
    however the file is indented (the diff's added names less its removed ones)."""
    added, removed = set(), set()
    in_package = False
    for line in diff.splitlines():
        if line.startswith("diff --git"):
            in_package = line.endswith("/package.json")
        elif in_package and re.match(r'^[+-]\s*"[^"]+"\s*:\s*"[^"]*",?$', line) and not line.startswith(("+++", "---")):
            name = line[1:].split(":")[0].strip().strip('"')
            (added if line.startswith("+") else removed).add(name)
    return len(added - removed)


def _arm(
    fixture: str,
    arm: str,
    recorded: dict[str, Any],
    ran: Ran,
    oracles: bool,
    judged: bool,
    declared: list[dict[str, Any]] | None,
) -> list[Conclusion]:
    theirs = recorded["arms"][arm]
    verify, result = ran.file(fixture, arm, "verify.json"), ran.file(fixture, arm, "result.json")
    where = f"{fixture}/{arm}"
    passed = [c["pass"] for c in verify["commands"]]
    reasons = [c["reason"] for c in verify["commands"]]
    differs = _stdout_only(theirs["verify"]["commands"], verify["commands"])
    seed = _seed_verification(declared, theirs["verify"]["commands"], verify["commands"])
    diff = ran.results.joinpath(fixture, arm, "diff.patch")
    seed_deps = _seed_dependencies(diff.read_text()) if diff.is_file() else None
    found = [
        Conclusion(f"{where} verification", theirs["verify"]["pass_vector"], passed, differs, [p for p, _ in seed]),
        Conclusion(
            f"{where} verification reasons",
            [c["reason"] for c in theirs["verify"]["commands"]],
            reasons,
            differs,
            [r for _, r in seed],
        ),  # fmt: skip
        Conclusion(f"{where} pattern hits", _hits(theirs["verify"]), _hits(verify)),
        Conclusion(
            f"{where} missing files", theirs["verify"]["missing_required_files"], verify["missing_required_files"]
        ),
        Conclusion(
            f"{where} forbidden files", theirs["verify"]["forbidden_files_present"], verify["forbidden_files_present"]
        ),  # fmt: skip
        Conclusion(
            f"{where} new dependencies",
            theirs["verify"]["deps_added"],
            verify["deps_added"],
            DEPENDENCIES if verify["deps_added"] > theirs["verify"]["deps_added"] else None,
            seed_deps,
        ),  # fmt: skip
        Conclusion(f"{where} arm", _arm_end(theirs["result"]), _arm_end(result)),
    ]
    if oracles:
        found.append(Conclusion(f"{where} oracles", _oracles(theirs["verify"]), _oracles(verify)))
    if judged:
        summary = recorded["summary"]["arms"][arm]
        ours = ran.case(fixture)["arms"][arm]
        found += [
            Conclusion(f"{where} disqualified", summary["disqualifier"], ours.get("disqualified", False)),
            Conclusion(f"{where} score", summary["score"], ours.get("score")),
            Conclusion(f"{where} axes out of range", summary["axis_out_of_range_count"], ours.get("axes_invalid", 0)),
        ]
    return found


def _stdout_only(theirs: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str | None:
    """STDOUT_ONLY when every differing command is one devlyn passed on stderr text (or failed on it)."""
    pairs = [(t, o) for t, o in zip(theirs, ours, strict=True) if t["pass"] != o["pass"]]
    explained = all(
        (t["pass"] and o["reason"] == "missing_contains") or (o["pass"] and t["reason"] == "unexpected_text")
        for t, o in pairs
    )
    return STDOUT_ONLY if pairs and explained else None


def _hits(verify: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((h["pattern"], h["severity"]) for h in verify["forbidden_pattern_hits"])


def _arm_end(result: dict[str, Any]) -> tuple[object, object, object]:
    return result["timed_out"], result["invoke_exit"], result["invoke_failure"]


def _oracles(verify: dict[str, Any]) -> tuple[bool, list[tuple[str, str, str]]]:
    items = verify["oracle_findings"]
    found = sorted(
        (str(i.get("oracle")), str(i.get("category") or i.get("type")), str(i.get("severity"))) for i in items
    )
    return verify["oracle_disqualifier"], found


def _case(fixture: str, recorded: dict[str, Any], ran: Ran) -> list[Conclusion]:
    summary, case = recorded["summary"], ran.case(fixture)
    arms = case["arms"]
    solo = arms["solo_claude"].get("score", 0) - arms["bare"].get("score", 0)
    winner = str(summary["winner"])
    lost = winner in summary["arms"] and summary["arms"][winner]["disqualifier"]
    # Seed 04: a disqualified arm loses its case: the best-scored arm that was not disqualified wins.
    clean = {a: v["score"] for a, v in summary["arms"].items() if not v["disqualifier"] and v["score"] is not None}
    best = max(clean.values(), default=None)
    leaders = [a for a, score in clean.items() if score == best]
    seed_winner = leaders[0] if len(leaders) == 1 else "tie"
    found = [
        Conclusion(f"{fixture} margin", summary["margins"]["variant_over_bare"], case.get("margin")),
        Conclusion(f"{fixture} solo_claude margin", summary["margins"]["solo_over_bare"], solo),
        Conclusion(
            f"{fixture} winner", winner, case.get("winner"), DISQUALIFIED_LOSES if lost else None, seed_winner
        ),  # fmt: skip
    ]
    return found + _summary_row(fixture, summary, ran)


# compile-report.py's figures of one fixture (summary.json ``rows[]``) that derive.py records, and of each arm.
ROW_FIGURES = ("category", "margin", "variant_score", "variant_disqualifier")
ROW_ARM_FIGURES = ("score", "disqualifier", "verify_score", "timed_out")


def _summary_row(fixture: str, recorded: dict[str, Any], ran: Ran) -> list[Conclusion]:
    """Every figure of the fixture's row of devlyn's summary.json against the one assay's summary.json
    holds under the same name (the winner is compared above, from run.json)."""
    ours = next(row for row in ran.file("summary.json")["rows"] if row["fixture"] == fixture)
    found = [Conclusion(f"{fixture} summary {key}", recorded[key], ours.get(key)) for key in ROW_FIGURES]
    found += [
        Conclusion(f"{fixture} summary margins.{name}", value, ours["margins"].get(name))
        for name, value in recorded["margins"].items()
    ]
    found += [
        Conclusion(f"{fixture} summary arms.{arm}.{key}", theirs.get(key), ours["arms"].get(arm, {}).get(key))
        for arm, theirs in recorded["arms"].items()
        for key in ROW_ARM_FIGURES
    ]
    return found


def _suite(expected: dict[str, Any], ran: Ran, shipped: dict[str, Any] | None, subset: bool) -> list[Conclusion]:
    devlyn, suite = expected["suite"], ran.suite
    summary = ran.file("summary.json")
    found = [
        Conclusion("averages", devlyn["scores_avg_by_arm"], {a: round(v, 1) for a, v in suite["averages"].items()}),
        Conclusion("suite margin", devlyn["margin_avg"], round(suite["margin"], 1)),
        Conclusion(
            "solo_claude suite margin",
            devlyn["margins_avg"]["solo_over_bare"],
            round(suite["margins"]["solo_claude"], 1),
        ),  # fmt: skip
        Conclusion("fixtures scored", devlyn["fixtures_scored"], suite["fixtures_run"]),
    ]
    # every figure of compile-report.py's summary.json, under its name (derive.py records them all but the
    # wall-clock ratios, which stubs make noise), and devlyn's hard_floor_violations in run.json too
    found += [Conclusion(f"summary {key}", devlyn[key], summary.get(key)) for key in SUMMARY_FIGURES]
    found.append(
        Conclusion("run.json hard_floor_violations", devlyn["hard_floor_violations"], suite["hard_floor_violations"])
    )
    gate = expected["ship_gate"]
    failed, warned = _gate_lines(gate["failures"]), _gate_lines(gate["warnings"])
    catch = shipped is not None and _catch_rate(expected) < _catch_rate(shipped)
    ran_e2e = any(f.get("summary", {}).get("category") == "e2e" for f in expected["fixtures"].values())
    for g in suite["gates"]:
        said = "fail" if g["name"] in (failed if g["severity"] == "hard" else warned) else "pass"
        if subset and _about_left_out(g["name"], ran_e2e):
            found.append(Conclusion(f"gate: {g['name']}", said, g["status"], SUBSET, "not_evaluated"))
        elif g["name"] == CATCH_GATE and catch:
            found.append(Conclusion(f"gate: {g['name']}", said, g["status"], CATCH_RATE, "fail"))
        else:
            found.append(Conclusion(f"gate: {g['name']}", said, g["status"]))
    limits = sorted(w.split(" known-limit margin")[0] for w in gate["warnings"] if "known-limit margin" in w)
    ours = sorted(w.split(":")[0] for w in suite.get("warnings", []) if "known-limit range" in w)
    found.append(Conclusion("known-limit warnings", limits, ours))
    if subset:  # the verdict of the gates that answer: devlyn's hard failures but those about left-out fixtures
        answering = [name for name in failed if not _about_left_out(name, ran_e2e)]
        rule = "FAIL" if answering else "PASS"
        found.append(
            Conclusion("verdict", gate["verdict"], suite["verdict"], SUBSET if rule != gate["verdict"] else None, rule)
        )
    else:
        found.append(Conclusion("verdict", gate["verdict"], suite["verdict"]))
    return found


def _about_left_out(gate: str, ran_e2e: bool) -> bool:
    """The issue's rule for a subset, applied to devlyn's default gates by what each says: a coverage floor
    (it counts over the whole suite), a comparison of the suite's figures with shipped's, and, when the
    subset holds no e2e fixture, the e2e fixture's gates."""
    return (
        gate.startswith("at least 7 ")
        or gate in ("the suite margin dropped no more than 3 points vs shipped", CATCH_GATE)
        or ("every e2e fixture" in gate and not ran_e2e)
    )


SUMMARY_FIGURES = (
    "fixtures_total", "fixtures_scored", "variant_avg", "bare_avg", "margin_avg", "scores_avg_by_arm", "margins_avg",
    "hard_floor_violations", "margin_ge_5_count", "gated_fixtures", "known_limit_fixtures", "arms_present",
)  # fmt: skip


def _gate_lines(lines: list[str]) -> set[str]:
    return {gate for line in lines for words, gate in GATE_OF_LINE if words in line}


def _catch_rate(record: dict[str, Any]) -> float:
    """The variant's critical-finding catch rate in devlyn's recorded judgments (fixtures without one)."""
    fixtures = list(record["fixtures"].values())
    return sum(not f["judge"]["findings_by_arm"]["variant"] for f in fixtures) / len(fixtures)


def report(conclusions: list[Conclusion]) -> str:
    """How many conclusions agree, which differ by seed 04, and every disagreement."""
    explained = [c for c in conclusions if c.explained]
    wrong = [c for c in conclusions if not c.agrees and not c.explained]
    lines = [f"{len(conclusions) - len(explained) - len(wrong)} of {len(conclusions)} conclusions agree"]
    lines += [f"  seed 04: {c.what}: devlyn {c.devlyn!r}, assay {c.assay!r} ({c.difference})" for c in explained]
    lines += [
        f"  DISAGREES: {c.what}: devlyn {c.devlyn!r}, assay {c.assay!r}"
        + (f" (the seed's rule gives {c.rule!r}: {c.difference})" if c.difference else "")
        for c in wrong
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, required=True, help="the devlyn benchmark folder (with scripts/)")
    parser.add_argument("--expected", type=Path, required=True, help="derive.py --real's output")
    parser.add_argument("--scenario", type=Path, help="the stubs' scenario (default: their hash-chosen defaults)")
    args = parser.parse_args(argv)
    expected = json.loads(args.expected.read_text())
    with tempfile.TemporaryDirectory(prefix="assay-devlyn-") as folder:
        work = Path(folder)
        scenario = args.scenario or work / "empty.json"
        if args.scenario is None:
            scenario.write_text(json.dumps({"fixtures": {}}))
        run = ["run", str(args.bench), "--engine", "local", "--concurrency", "4"]
        ran = run_assay(run, scenario, work / "state", work / "run.json", work)
        conclusions = compare(expected, ran, oracles=(args.bench / "scripts").is_dir(), bench=args.bench)
    print(report(conclusions))
    return 0 if all(c.agrees or c.explained for c in conclusions) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
