"""Seed 01's rule by default: a row's samples run one after another, in order, on both engines.

A command that keeps state between samples (a counter file here, an agent writing into its cwd in
life) must give the serial answers without ``serial: true``; speed is opt-in (``serial: false``,
``--parallel-samples``). Each fixture reads and bumps a counter with a pause in between, so samples
that overlapped would read the same value and the figures would differ from the serial ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

# Read the counter, pause (so overlapping samples would read the same value), write it back bumped,
# print it as JSON; exit 1 on the call given as the first argument. (A script file: a table cell
# cannot hold the shell's "||".)
BUMP = """n=$(cat "$(dirname "$0")/count" 2>/dev/null || echo 0)
sleep 0.05
n=$((n+1))
echo $n > "$(dirname "$0")/count"
echo "{\\"n\\": $n}"
test "$n" -ne "${1:-0}"
"""

METRIC = """---
repeat: 20
metrics:
  - {{name: count, extract: json.n, unit: calls}}
---
| Name | Command |
|---|---|
| counter | `bash {bump}` |
"""

# The third call fails: 4 of 5 samples pass, whatever else runs.
PASS_AT_K = """---
repeat: 5
---
| Name | Command |
|---|---|
| third fails | `bash {bump} 3` |
"""

# Each sample takes 2.5 s under a 4 s budget for the whole row: the first ends, the second runs out of
# time, the third never starts (run at once, all three would have passed in 2.5 s).
BUDGET = """---
repeat: 3
timeout: 4s
---
| Name | Command |
|---|---|
| slow | `bash -c 'echo start $ASSAY_SAMPLE >> {log}; sleep 2.5; echo end $ASSAY_SAMPLE >> {log}'` |
"""


def bump_script(tmp_path: Path) -> Path:
    script = tmp_path / "bump.sh"
    script.write_text(BUMP, encoding="utf-8")
    return script


def run(tmp_path: Path, text: str, engine: str, *extra: str) -> dict[str, object]:
    fixture = tmp_path / "fixture.md"
    fixture.write_text(text, encoding="utf-8")
    engine_args = ["--engine", "local"] if engine == "local" else []
    done = run_cli([str(fixture), *engine_args, "--json", str(tmp_path / "run.json"), *extra], cwd=tmp_path)
    assert "Traceback" not in done.stderr, done.stderr
    document: dict[str, object] = json.loads((tmp_path / "run.json").read_text())
    return document


def only_row(document: dict[str, object]) -> dict[str, object]:
    fixtures = document["fixtures"]
    assert isinstance(fixtures, list)
    [row] = fixtures[0]["rows"]
    assert isinstance(row, dict)
    return row


ENGINES = pytest.mark.parametrize("engine", ["local", "prefect"])
pytestmark = pytest.mark.usefixtures("prefect_server")  # the session's server, for the Prefect engine


@ENGINES
def test_a_counter_metric_gives_the_serial_mean(tmp_path: Path, engine: str) -> None:
    document = run(tmp_path, METRIC.format(bump=bump_script(tmp_path)), engine)
    metric = only_row(document)["metrics"]["count"]
    # samples 0..19 read 1..20 in order: mean (1 + 20) / 2 = 10.5
    assert metric["values"] == list(range(1, 21))
    assert metric["value"] == pytest.approx(10.5)


@ENGINES
def test_a_stateful_row_counts_the_passes_it_really_had(tmp_path: Path, engine: str) -> None:
    document = run(tmp_path, PASS_AT_K.format(bump=bump_script(tmp_path)), engine)
    row = only_row(document)
    assert [s["status"] for s in row["samples"]] == ["PASS", "PASS", "FAIL", "PASS", "PASS"]
    assert (row["stochastic"]["n"], row["stochastic"]["passed"]) == (5, 4)


@ENGINES
def test_one_budget_for_the_row_starts_no_sample_beside_another(tmp_path: Path, engine: str) -> None:
    log = tmp_path / "log"
    document = run(tmp_path, BUDGET.format(log=log), engine)
    row = only_row(document)
    assert row["status"] == "ERR" and row["stopped"] == "timeout"
    # One at a time: sample 0 ends before another starts. One budget for the row: samples of 2.5 s each
    # leave no time for a third in 4 s (sample 1 may start and be stopped, or not start on a busy machine).
    assert log.read_text().split("\n")[:2] == ["start 0", "end 0"]
    assert "start 2" not in log.read_text()


# Two samples that each wait (at most 5 s) until both have started: they pass only when they run at once.
MEET = "touch {met}/$ASSAY_SAMPLE; for i in $(seq 100); do [ -e {met}/0 ] && [ -e {met}/1 ] && exit 0; sleep 0.05; done"
RENDEZVOUS = """---
repeat: 2
---
| Name | Command |
|---|---|
| meet | `bash -c '{meet}; exit 1'` |
"""


@pytest.mark.parametrize(("extra", "passed"), [((), 1), (("--parallel-samples",), 2)], ids=["default", "opt-in"])
def test_parallel_samples_is_the_opt_in(tmp_path: Path, extra: tuple[str, ...], passed: int) -> None:
    met = tmp_path / "met"
    met.mkdir()
    document = run(tmp_path, RENDEZVOUS.format(meet=MEET.format(met=met)), "local", *extra)
    # in order, sample 0 waits alone and fails, then sample 1 finds both marks; at once, both meet
    assert only_row(document)["stochastic"]["passed"] == passed
    assert document["options"].get("parallel_samples", False) is bool(extra)
