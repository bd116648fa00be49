"""Adaptive sampling through the command line on real processes, on both engines: rows stop where
the sequential tests say (boundaries derived in tests/core/analysis/test_sequential.py), reports say
why, and the verdict follows the usual rules on the samples taken."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import WIDE, run_cli

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
