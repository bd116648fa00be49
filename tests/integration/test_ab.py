"""A/B suites end to end: both engines, the command line, re-judging, dry runs, blessing.

Real Prefect flows, real subprocesses, real git workspaces and real judge scripts.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fixtures_core.execution.judge import labels_for
from fixtures_core.records.rundoc import RunResult
from fixtures_core.runs.options import RunOptions
from tests.integration.conftest import WIDE, run_cli
from tests.suites import EXAMPLE_SUITE, run_in_process

ATTEMPT_FILES = {
    "command.json", "setup.txt", "stdout.txt", "stderr.txt", "diff.patch", "changed-files.txt", "verify.json",
    "timing.json", "result.json",
}  # fmt: skip

# Scores each candidate with the last number it printed; "DQ" marks a disqualifier.
NUMBERS_JUDGE = """
import json, sys
doc = json.load(sys.stdin)
scores = {label: {"total": float(c["stdout"].split()[-1]), "axes": {}} for label, c in doc["candidates"].items()}
best = max(s["total"] for s in scores.values())
leaders = [label for label, s in scores.items() if s["total"] == best]
print(json.dumps({"scores": scores, "winner": leaders[0] if len(leaders) == 1 else "tie"}))
"""
# Prefers whichever candidate is labelled A.
ALWAYS_A_JUDGE = """
import json, sys
doc = json.load(sys.stdin)
print(json.dumps({"scores": {label: {"total": 90 if label == "A" else 10} for label in doc["candidates"]},
                  "winner": "A"}))
"""


def case_view(run: RunResult) -> list[tuple[Any, ...]]:
    """What a verdict consists of, per case: name, status, verdict, margin, winner, each arm's score."""
    return [
        (c.name, c.status, c.verdict, c.margin, c.winner, tuple((a, o.status, o.score) for a, o in c.arms.items()))
        for suite in run.suites
        for c in suite.cases
    ]


def assert_evidence(run: RunResult, out: Path) -> None:
    for row in run.rows:
        for sample in row.samples:
            assert sample.attempt is not None
            folder = out / "runs" / run.run_id / sample.attempt.evidence
            assert {p.name for p in folder.iterdir()} >= ATTEMPT_FILES, folder
            assert json.loads((folder / "verify.json").read_text()), "verification results are on disk"
    assert (out / "runs" / run.run_id / "report.md").is_file()


@pytest.mark.usefixtures("prefect_backend")
def test_the_example_suite_gives_the_same_verdicts_on_both_engines(tmp_path: Path) -> None:
    from flows.flow.matrix import run_with_prefect

    options = RunOptions(paths=(str(EXAMPLE_SUITE),), out=str(tmp_path / "prefect"))
    prefect_run = run_with_prefect(options, "ab-prefect")
    local_run = run_in_process(EXAMPLE_SUITE, tmp_path / "local")

    assert prefect_run.status == local_run.status == "PASS"
    assert case_view(prefect_run) == case_view(local_run)
    assert [c[2] for c in case_view(local_run)] == ["PASS", "PASS", "EXPECTED (known-limit)"]
    assert [(r.name, r.status) for r in prefect_run.rows] == [(r.name, r.status) for r in local_run.rows]
    assert_evidence(prefect_run, tmp_path / "prefect")
    assert_evidence(local_run, tmp_path / "local")
    report = (tmp_path / "prefect" / "runs" / "ab-prefect" / "report.md").read_text()
    assert report_artifact(options) == report and "**SHIP-GATE VERDICT: PASS**" in report
    hasty = next(r for r in local_run.rows if r.name == "config-comments/hasty")
    assert hasty.samples[0].attempt is not None and hasty.samples[0].attempt.disqualified  # it swallowed an error


def report_artifact(options: RunOptions) -> str:
    """The newest report artifact (Markdown) of this suite, as the Prefect API serves it to the UI."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from fixtures_core.runs.plan import plan
    from flows.flow.naming import artifact_key

    key = f"assay-report-{artifact_key(options, plan(options).matrix)}"
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])))
    assert found, "no report artifact"
    newest = max(found, key=lambda artifact: artifact.created or 0)
    return str(newest.data)


FRESH = """
---
arms:
  variant: {{}}
  bare: {{}}
exec: bash
args: ["-c", "test ! -e seen.txt || exit 9; echo $ASSAY_ROW-$ASSAY_SAMPLE > seen.txt; echo x >> {counter}"]
workspace: repo
repeat: 3
---

| Name |
|---|
| one |
| two |
"""


def write_fresh_suite(folder: Path) -> Path:
    (folder / "repo").mkdir(parents=True)
    (folder / "repo" / "README").write_text("start\n")
    path = folder / "fresh.md"
    path.write_text(textwrap.dedent(FRESH.format(counter=folder / "counter.txt")).lstrip())
    return path


@pytest.mark.usefixtures("prefect_backend")
def test_no_attempt_ever_sees_another_attempts_files_on_either_engine(tmp_path: Path) -> None:
    from flows.flow.matrix import run_with_prefect

    fixture = write_fresh_suite(tmp_path)
    prefect_run = run_with_prefect(RunOptions(paths=(str(fixture),), out=str(tmp_path / "p"), parallel=4), "fresh")
    local_run = run_in_process(fixture, tmp_path / "l")

    for run in (prefect_run, local_run):
        assert [(r.name, r.status, len(r.samples)) for r in run.rows] == [
            ("one/variant", "PASS", 3), ("one/bare", "PASS", 3), ("two/variant", "PASS", 3), ("two/bare", "PASS", 3),
        ]  # fmt: skip
    assert (tmp_path / "counter.txt").read_text().count("x") == 24  # 2 runs x 2 cases x 2 arms x 3 samples


# --- the command line --------------------------------------------------------------


SUITE = """
---
arms:
  variant: {{args: ["-c", "echo x >> {counter}; echo {{{{ .v }}}}"]}}
  bare: {{args: ["-c", "echo x >> {counter}; echo {{{{ .b }}}}"]}}
exec: bash
compare: [variant, bare]
workspace: repo
setup: echo x >> {setup_counter}
verify:
  - echo x >> {verify_counter}
judge:
  command: {python} judge.py
gates:
{gates}
---

| Name | v | b | Known Limit |
|---|---|---|---|
| F1 | 95 | 80 | |
| F2 | 90 | 82 | |
| F8 | 78 | 79 | [-3, 3] |
"""
FLOOR = "  - {name: variant wins by 5 or more, cel: 'rows.filter(r, !r.known_limit).all(r, r.margin >= 5.0)'}"


class Project:
    """A folder with an A/B suite whose arms, setup and verification count their runs."""

    def __init__(self, root: Path, gates: str = FLOOR, judge: str = NUMBERS_JUDGE) -> None:
        self.root = root
        (root / "repo").mkdir()
        (root / "repo" / "app.txt").write_text("v1\n")
        (root / "judge.py").write_text(judge)
        self.counters = {name: root / f"{name}.count" for name in ("arm", "setup", "verify")}
        text = SUITE.format(
            counter=self.counters["arm"],
            setup_counter=self.counters["setup"],
            verify_counter=self.counters["verify"],
            python=sys.executable,
            gates=gates,
        )
        (root / "suite.md").write_text(textwrap.dedent(text).lstrip())

    def count(self, name: str) -> int:
        path = self.counters[name]
        return path.read_text().count("x") if path.exists() else 0

    def assay(self, *args: str) -> tuple[int, str, str]:
        done = run_cli(list(args), cwd=self.root, env=WIDE)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout, done.stderr

    def run(self, *args: str) -> tuple[int, str, str]:
        return self.assay("run", "suite.md", "--engine", "local", *args)

    def latest(self) -> dict[str, Any]:
        return json.loads((self.root / ".assay" / "latest.json").read_text())


def test_a_passing_suite_prints_the_ship_gate_table_and_exits_zero(tmp_path: Path) -> None:
    project = Project(tmp_path)

    code, stdout, _ = project.run("--group-by", "arm")

    assert code == 0, stdout
    lines = stdout.splitlines()
    assert "  arm=variant: pass@k 1 (rows 3/3), pass^k 1 (rows 3/3)" in lines  # pass@k per arm
    assert any(line.split() == ["F1", "95", "80", "+15", "PASS"] for line in lines)
    assert any(line.split() == ["F8", "78", "79", "-1", "EXPECTED", "(known-limit)"] for line in lines)
    assert "Regression vs shipped:       n/a (first run)" in lines
    assert "SHIP-GATE VERDICT: PASS" in lines
    assert project.count("arm") == 6 and project.count("setup") == 6 and project.count("verify") == 6


def test_a_failing_hard_gate_exits_one_and_names_the_gate(tmp_path: Path) -> None:
    project = Project(tmp_path, gates="  - {name: variant wins by 12 or more, cel: 'rows.all(r, r.margin >= 12.0)'}")

    code, stdout, _ = project.run()

    assert code == 1, stdout
    lines = stdout.splitlines()
    # the gate, and every case that broke it with what the gate saw of it (90 - 82, 78 - 79; F1 has +15)
    assert "  FAILED hard variant wins by 12 or more: broken by F2 (margin was 8), F8 (margin was -1)" in lines
    assert "SHIP-GATE VERDICT: FAIL" in stdout
    assert project.latest()["suites"][0]["gates"][0]["status"] == "fail"


def test_a_failing_soft_gate_warns_and_exits_zero(tmp_path: Path) -> None:
    project = Project(
        tmp_path, gates="  - {name: big margins, cel: 'rows.all(r, r.margin >= 12.0)', severity: soft}\n" + FLOOR
    )

    code, stdout, _ = project.run()

    assert code == 0, stdout
    assert "WARNING: soft gate 'big margins' warned" in stdout.splitlines()  # a soft gate never blocks
    assert "SHIP-GATE VERDICT: PASS" in stdout


def test_a_known_limit_row_outside_its_range_warns(tmp_path: Path) -> None:
    project = Project(tmp_path)
    suite = tmp_path / "suite.md"
    suite.write_text(suite.read_text().replace("| F8 | 78 | 79 |", "| F8 | 88 | 79 |"))

    code, stdout, _ = project.run()

    assert code == 0, stdout
    warning = "WARNING: F8: margin +9.0 is outside its known-limit range [-3, 3] "
    warning += "(too good: it may no longer be a known limit)"
    assert warning in stdout.splitlines()
    assert any(line.split()[-2:] == ["WARNING", "(known-limit)"] for line in stdout.splitlines() if "F8" in line)


def test_a_judge_printing_garbage_errs_that_row_and_keeps_its_output(tmp_path: Path) -> None:
    project = Project(tmp_path, judge="import sys; sys.stdin.read(); print('Candidate A seems better overall.')")

    code, stdout, _ = project.run()

    assert code == 2, stdout
    document = project.latest()
    assert {r["name"]: r["status"] for r in document["fixtures"][0]["rows"]}["F1/variant"] == "ERR"
    case = document["suites"][0]["cases"][0]
    assert case["status"] == "ERR" and "not JSON" in case["error"]
    kept = tmp_path / ".assay" / "runs" / document["run_id"] / "judge" / "F1" / "0" / "output.txt"
    assert kept.read_text() == "Candidate A seems better overall.\n"
    assert case["judgments"][0]["output"] == "Candidate A seems better overall."
    assert "ERR F1: judge output is not JSON" in stdout


def test_rejudge_changes_scores_and_verdict_without_running_any_arm(tmp_path: Path) -> None:
    project = Project(tmp_path)
    assert project.run()[0] == 0
    original = project.latest()
    arms_ran = project.count("arm")
    reversed_judge = tmp_path / "reversed.py"
    reversed_judge.write_text(
        NUMBERS_JUDGE.replace('float(c["stdout"].split()[-1])', '100 - float(c["stdout"].split()[-1])')
    )

    code, stdout, _ = project.assay("rejudge", "latest", "--judge", f"{sys.executable} {reversed_judge}")

    assert code == 1, stdout  # bare now wins every case: the floor fails
    assert project.count("arm") == arms_ran and project.count("setup") == 6, "no arm, no setup ran again"
    rejudged = project.latest()
    assert rejudged["run_id"] != original["run_id"]
    assert rejudged["options"]["rejudge"] == original["run_id"]
    suite = rejudged["suites"][0]
    assert (suite["rejudged"], suite["evidence_run"]) == (original["run_id"], original["run_id"])
    assert [c["margin"] for c in suite["cases"]] == [-15.0, -8.0, 1.0]
    assert [c["margin"] for c in original["suites"][0]["cases"]] == [15.0, 8.0, -1.0]
    assert suite["judge"]["seed"] == original["suites"][0]["judge"]["seed"], "the labels are reproduced"
    assert "FAILED hard variant wins by 5 or more" in stdout


def test_dry_run_runs_setup_and_verify_and_never_the_arms(tmp_path: Path) -> None:
    project = Project(tmp_path)

    code, stdout, _ = project.run("--dry-run")

    assert code == 0, stdout
    assert project.count("arm") == 0
    assert project.count("setup") == 6 and project.count("verify") == 6
    assert "SHIP-GATE VERDICT: DRY RUN\n" in stdout
    assert stdout.splitlines()[-2].startswith("DRY RUN  0 passed, 0 failed, 0 errored, 6 skipped;")
    assert stdout.splitlines()[-1] == "verdict: DRY RUN · exit 0 — dry run: nothing was scored, the wiring held"
    arms = [(row["status"], row.get("error")) for f in project.latest()["fixtures"] for row in f["rows"]]
    assert arms == [("SKIP", "dry run")] * 6
    assert not list((tmp_path / ".assay" / "runs").glob("*/judge")), "the judge never ran"


def test_run_bless_blesses_only_a_pass_and_bless_refuses_a_fail_unless_forced(tmp_path: Path) -> None:
    project = Project(tmp_path)
    shipped = tmp_path / ".assay" / "baselines" / "shipped.json"
    code, stdout, _ = project.run("--bless")
    assert code == 0 and "as 'shipped': .assay/baselines/shipped.json" in stdout
    passing_id = json.loads(shipped.read_text())["run_id"]

    suite = tmp_path / "suite.md"
    suite.write_text(suite.read_text().replace("| F1 | 95 | 80 |", "| F1 | 81 | 80 |"))
    code, stdout, _ = project.run("--bless")
    assert code == 1 and "not blessed: its verdict is FAIL" in stdout
    assert json.loads(shipped.read_text())["run_id"] == passing_id

    code, _, stderr = project.assay("bless", "latest")
    assert code == 2 and "its verdict is FAIL (hard ship gate 'variant wins by 5 or more' (suite.md) failed)" in stderr
    assert stderr.rstrip().endswith("(--force blesses it anyway)")
    assert project.assay("bless", "latest", "--force")[0] == 0
    assert json.loads(shipped.read_text())["run_id"] != passing_id


BLIND = """
---
arms:
  variant: {{args: [variant]}}
  bare: {{args: [bare]}}
exec: echo
judge:
  command: {python} judge.py
---

| Name |
|---|
{rows}
"""


def test_blind_labels_over_twenty_rows_map_back_and_reproduce_from_the_seed(tmp_path: Path) -> None:
    (tmp_path / "judge.py").write_text(ALWAYS_A_JUDGE)
    rows = "\n".join(f"| case-{i:02d} |" for i in range(20))
    (tmp_path / "blind.md").write_text(textwrap.dedent(BLIND.format(python=sys.executable, rows=rows)).lstrip())

    first = run_in_process(tmp_path / "blind.md", tmp_path / "state")
    (suite,) = first.suites
    assert suite.judge is not None
    seed = suite.judge.seed
    again = run_in_process(tmp_path / "blind.md", tmp_path / "state", seed=seed)

    labels = [c.judgments[0].labels for c in suite.cases]
    assert {label["A"] for label in labels} == {"variant", "bare"}, "both labellings occur"
    assert [c.judgments[0].labels for c in again.suites[0].cases] == labels, "the recorded seed reproduces them"
    for case, label in zip(suite.cases, labels, strict=True):
        assert label == labels_for(seed, case.name, 0, ["variant", "bare"], blind=True)
        # the judge always prefers "A": the arm behind A must get its 90 points and the win
        a_arm, b_arm = label["A"], label["B"]
        assert (case.arms[a_arm].score, case.arms[b_arm].score, case.winner) == (90.0, 10.0, a_arm)
        assert case.margin == (80.0 if a_arm == "variant" else -80.0)
