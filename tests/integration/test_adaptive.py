"""Adaptive sampling through the command line on real processes, on both engines: rows stop where
the sequential tests say (boundaries derived in tests/core/analysis/test_sequential.py), reports say
why, and the verdict follows the usual rules on the samples taken."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, WIDE, run_cli

# A counter file makes 'alternating' pass, fail, pass, ...: a flaky row whose samples keep their order.
FIXTURE = """---
sampling: {max: 12}
pass_rate: 0.8
---

| Name | Command | Pass Rate |
|---|---|---|
| always | true | |
| never | false | |
| strict | true | 1 |
| alternating | n=$(cat count 2>/dev/null \\|\\| echo 0); echo $((n + 1)) > count; exit $((n % 2)) | 1 |
"""

# (samples taken, status, the start of why sampling stopped)
EXPECTED = {
    "always": (10, "PASS", "decided after 10: 10/10 passed, P(pass rate <= 0.7) < 0.05"),
    "never": (11, "FAIL", "decided after 11: 0/11 passed, P(pass rate >= 0.9) < 0.05; fails every time"),
    "strict": (12, "PASS", "undecided at 12 of max 12 (pass rate 12/12 passed is not yet told apart from 1)"),
    "alternating": (3, "FAIL", "decided after 3: 2/3 passed: a sample failed"),
}


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_rows_stop_once_decided_and_say_why(tmp_path: Path, engine: str, request: pytest.FixtureRequest) -> None:
    if engine == "prefect":
        request.getfixturevalue("prefect_server")
    (tmp_path / "adaptive.md").write_text(FIXTURE, encoding="utf-8")
    document = tmp_path / "run.json"
    engine_args = ["--engine", "local"] if engine == "local" else []
    done = run_cli(["adaptive.md", *engine_args, "--json", str(document)], cwd=tmp_path, env=WIDE)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    rows: dict[str, Any] = {r["name"]: r for r in json.loads(document.read_text())["fixtures"][0]["rows"]}
    got = {name: (len(r["samples"]), r["status"]) for name, r in rows.items()}
    assert got == {name: expected[:2] for name, expected in EXPECTED.items()}
    for name, (_n, _status, why) in EXPECTED.items():
        assert rows[name]["sampling"].startswith(why), rows[name]["sampling"]
        assert f"sampling '{name}': {why}" in done.stdout.replace("\n", " ")
    assert "| always" not in done.stdout and "10/10 (max 12)" in done.stdout  # n per row, and its max
    taken = sum(n for n, _status, _why in EXPECTED.values())  # 36 of 4 rows x max 12: 25% fewer
    assert f"adaptive sampling: {taken} of at most 48 samples ({1 - taken / 48:.0%} fewer than fixed k)" in done.stdout


def test_the_adaptive_flag_makes_rows_without_sampling_adaptive(tmp_path: Path) -> None:
    (tmp_path / "flag.md").write_text(
        "---\nrepeat: 8\n---\n| Name | Command | Sampling |\n|---|---|---|\n"
        "| alternating | n=$(cat count 2>/dev/null \\|\\| echo 0); echo $((n + 1)) > count; exit $((n % 2)) | |\n"
        "| kept | exit 1 | fixed |\n",
        encoding="utf-8",
    )
    document = tmp_path / "run.json"
    done = run_cli(["flag.md", "--engine", "local", "--adaptive", "--json", str(document)], cwd=tmp_path, env=WIDE)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = {r["name"]: r for r in json.loads(document.read_text())["fixtures"][0]["rows"]}
    assert len(rows["alternating"]["samples"]) == 3 and rows["alternating"]["sampling"].startswith("decided after 3")
    assert len(rows["kept"]["samples"]) == 8 and "sampling" not in rows["kept"]  # sampling: fixed keeps its 8


# Both rows must pass 80% of the time, sharing a budget of what fixed k spends (2 x max 20 = 40 samples).
# 'edge' fails samples 4, 9, 14, ...: a true pass rate of 0.8, on its threshold.
BUDGET_FIXTURE = """---
sampling: {max: 20, budget: fixed}
pass_rate: 0.8
---

| Name | Command |
|---|---|
| always | true |
| edge | EDGE |
"""
EDGE = "exit $(( ASSAY_SAMPLE % 5 == 4 ))"
SPENDING = (
    "40 of a sample budget of 40 spent (fixed k: 40); 2 rows: 1 decided, 0 curtailed, 0 undecided at their cap, "
    "1 undecided when the budget ran out; 1 row took 11 extra samples"
)


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_a_decided_rows_left_over_samples_go_to_the_undecided_row(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    if engine == "prefect":
        request.getfixturevalue("prefect_server")
    (tmp_path / "budget.md").write_text(BUDGET_FIXTURE.replace("EDGE", EDGE), encoding="utf-8")
    files = {name: tmp_path / name for name in ("run.json", "summary.md", "report.html")}
    engine_args = ["--engine", "local"] if engine == "local" else []
    done = run_cli(
        ["budget.md", *engine_args, "--json", str(files["run.json"]), "--summary", str(files["summary.md"]),
         "--html", str(files["report.html"])],
        cwd=tmp_path, env=WIDE,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads(files["run.json"].read_text())
    rows: dict[str, Any] = {r["name"]: r for r in document["fixtures"][0]["rows"]}
    # 'always' is decided after 10 and leaves 10; 'edge' is curtailed after 19 (16/19: 0.8 of 20 is met
    # whatever sample 19 does) and leaves 1; the 11 left over go to 'edge', one at a time: 30 samples, 24 pass.
    assert {name: (len(r["samples"]), r["status"], r["sampled"]) for name, r in rows.items()} == {
        "always": (10, "PASS", {"stop": "decided", "extra": 0, "cap": 60}),
        "edge": (30, "PASS", {"stop": "budget", "extra": 11, "cap": 60}),
    }
    assert document["summary"]["sample_budget"] == {
        "budget": 40, "spent": 40, "fixed": 40, "decided": 1, "curtailed": 0, "at_cap": 0, "ran_out": 1,
        "undecided": 0, "extra_rows": 1, "extra": 11,
    }  # fmt: skip
    stdout = done.stdout.replace("\n", " ")
    assert f"adaptive sampling: {SPENDING}" in stdout
    assert "24/30 (30 samples: 19 of its max 20, then 11 from the budget)" in stdout  # 19 + 11 = 30
    assert f"sampling 'edge': {rows['edge']['sampling']}" in stdout
    assert f"Adaptive sampling (2 rows: {SPENDING})" in files["summary.md"].read_text()
    assert f"adaptive sampling: {SPENDING}" in files["report.html"].read_text()


def test_a_sample_budget_below_fixed_k_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "budget.md").write_text(BUDGET_FIXTURE.replace("EDGE", EDGE), encoding="utf-8")
    done = run_cli(["budget.md", "--engine", "local", "--sample-budget", "30"], cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        "error: --sample-budget 30 is below the 40 samples its 2 adaptive rows take at their max (fixed k): "
        "give at least 40, or lower their max"
    )


def test_a_killed_budgeted_run_resumes_within_its_budget(tmp_path: Path) -> None:
    go = tmp_path / "go"
    # 'edge' waits for "go" at sample 24, an extra sample past its max: the run is killed there.
    waiting = tmp_path / "waiting"
    gate = (
        f'if [ "$ASSAY_SAMPLE" -ge 24 ]; then touch {waiting}; '
        f"for i in $(seq 600); do [ -e {go} ] && break; sleep 0.1; done; fi"
    )
    fixture = BUDGET_FIXTURE.replace("EDGE", f"{gate}; echo $ASSAY_SAMPLE >> {tmp_path / 'ran'}; {EDGE}")
    (tmp_path / "budget.md").write_text(fixture, encoding="utf-8")
    state = tmp_path / "state"
    env = {**os.environ, **WIDE, "PYTHONPATH": str(REPO)}
    env.pop("PREFECT_API_URL", None)
    run = subprocess.Popen(
        [sys.executable, "-m", "flows.run", "budget.md", "--engine", "local", "--out", str(state)], cwd=tmp_path,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        ran = tmp_path / "ran"
        # Sample 24 waiting means 23 is on disk (samples of a row run one after another); "ran" holding
        # 24 lines does not: sample 23 writes its line before it finishes, and would run again on resume.
        for _ in range(600):  # bounded: only a hang fails the test
            if waiting.exists() or run.poll() is not None:
                break
            time.sleep(0.1)
        assert ran.read_text().split() == [str(i) for i in range(24)]  # 0-23 ran; 24 waits
        os.kill(run.pid, signal.SIGKILL)
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    go.touch()
    resumed = run_cli(["run", "--resume", "latest", "--out", str(state), "--engine", "local",
                       "--json", str(tmp_path / "run.json")], tmp_path, WIDE)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # The 24 samples kept (extras 19-23 among them) count as spent: 40 - 10 - 24 = 6 are left, 24 to 29.
    assert (tmp_path / "ran").read_text().split() == [str(i) for i in range(24)] + [str(i) for i in range(24, 30)]
    document = json.loads((tmp_path / "run.json").read_text())
    rows = {r["name"]: r for r in document["fixtures"][0]["rows"]}
    assert [len(rows[name]["samples"]) for name in ("always", "edge")] == [10, 30]
    assert document["summary"]["sample_budget"]["spent"] == 40 and rows["edge"]["sampled"]["extra"] == 11
