"""One exit-code path: whatever happens to stdout or stderr (closed before the start, a reader gone, a
full disk), assay's own exit code is the one it gives with both streams intact, for every subcommand
and every kind of answer.

The table: each subcommand x {PASS, FAIL, regression, ERR} x {normal, stdout closed, stderr closed,
broken pipe} (``run`` also with stderr's reader gone and stdout full), on the local engine, and ``run``
on the Prefect engine. The expected exit codes are written out by hand. The runs the commands act on
are made once; each command is a real ``assay`` process forked from one that imported assay once
(``tests.integration.forked_cli``), so the table costs seconds, not minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import REPO
from tests.integration.forked_cli import Command, ForkedCli

# A row checking a file the case writes (so each verdict is one folder), with a gating metric.
FIXTURE = """---
metrics:
  - {name: ms, extract: json.ms, unit: ms, direction: lower, threshold: {regressionPercent: 10}}
---
| Name | Command | CEL |
|---|---|---|
| steady | `cat ms.json` | `json.ok` |
"""
OUTPUT = {  # what the row reads, per verdict: 'regression' is 3x slower than the blessed 'base'
    "PASS": '{"ok": true, "ms": 100}',
    "FAIL": '{"ok": false, "ms": 100}',
    "regression": '{"ok": true, "ms": 300}',
    "ERR": '{"ms": 100}',  # json.ok: no such key
}

# An A/B suite whose judge prefers arm a (fair), arm b (reverse) or scores both lower (low).
SUITE = """---
exec: echo
arms:
  a: {args: [a]}
  b: {args: [b]}
judge:
  command: python3 judge.py
  threshold: {regressionPoints: 5}
gates:
  - {name: a wins, cel: 'rows.all(r, r.winner == "a")'}
---
| Name | CEL |
|---|---|
| one | `true` |
"""
JUDGE = """import json
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "fair"
high, low = {"fair": (90, 80), "reverse": (80, 90), "low": (70, 60)}[mode]
candidates = json.load(sys.stdin)["candidates"]
scores = {label: {"axes": {}, "total": high if evidence["stdout"].strip() == "a" else low, "disqualifier": False,
                  "findings": []} for label, evidence in candidates.items()}
print(json.dumps({"scores": scores, "winner": max(scores, key=lambda label: scores[label]["total"])}))
"""

VERDICTS = ("PASS", "FAIL", "regression", "ERR")
# (stdout, stderr) as the shell leaves them: `>&-`, `2>&-`, `| head -1` once head is gone, `>/dev/full`
CONDITIONS = {
    "normal": ("file", "file"),
    "stdout closed": ("closed", "file"),
    "stderr closed": ("file", "closed"),
    "broken pipe": ("broken", "file"),
}
MORE_CONDITIONS = {"stderr broken pipe": ("file", "broken"), "stdout full": ("full", "file")}

# The exit code of each subcommand for each kind of run it acts on, with both streams intact.
EXPECTED = {
    "run": {"PASS": 0, "FAIL": 1, "regression": 1, "ERR": 2},
    "run --bless": {"PASS": 0, "FAIL": 1, "regression": 1, "ERR": 2},  # blessing never changes the exit code
    "compare": {"PASS": 0, "FAIL": 1, "regression": 1, "ERR": 2},  # base (passing) against the run
    "bless": {"PASS": 0, "FAIL": 2, "regression": 2, "ERR": 2},  # refused: one line, exit 2
    "rejudge": {"PASS": 0, "FAIL": 1, "regression": 1, "ERR": 2},
    "report": {"PASS": 0, "FAIL": 0, "regression": 0, "ERR": 0},  # it wrote the files asked for
    "show": {"PASS": 0, "FAIL": 0, "regression": 0, "ERR": 0},
    "history": {"PASS": 0},
    "validate": {"PASS": 0, "FAIL": 0, "ERR": 2},  # ERR: a fixture that does not parse
}


@dataclass(frozen=True)
class Runs:
    """The folder, state folder and run ids the commands act on."""

    root: Path
    state: Path
    run_ids: dict[str, str]  # verdict -> run id; "suite": the A/B suite's run

    def folder(self, verdict: str) -> str:
        return str(self.root / verdict)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    root = tmp_path_factory.mktemp("exit-codes")
    state = root / "state"
    for verdict in VERDICTS:
        (root / verdict).mkdir()
        (root / verdict / "f.md").write_text(FIXTURE)
        (root / verdict / "ms.json").write_text(OUTPUT[verdict])
    (root / "ERR" / "bad.md").write_text("---\nrepeat: [\n---\n| Name |\n|---|\n| x |\n")
    (root / "suite").mkdir()
    (root / "suite" / "suite.md").write_text(SUITE)
    (root / "suite" / "judge.py").write_text(JUDGE)
    with ForkedCli() as cli:
        base = ["run", "f.md", "--engine", "local", "--out", str(state), "--json", "run.json"]
        first = cli.run(
            [Command(base, str(root / "PASS")), Command(["run", "suite.md", *base[2:]], str(root / "suite"))]
        )
        assert [e.code for e in first] == [0, 0], first
        passed = json.loads((root / "PASS" / "run.json").read_text())["run_id"]
        blessed = cli.run([Command(["bless", passed, "--name", "base", "--out", str(state)], str(root))])
        assert blessed[0].code == 0, blessed
        then = [Command(base + (["--baseline", "base"] if v == "regression" else []), str(root / v))
                for v in VERDICTS[1:]]  # fmt: skip
        assert [e.code for e in cli.run(then)] == [1, 1, 2]
    run_ids = {v: json.loads((root / v / "run.json").read_text())["run_id"] for v in (*VERDICTS, "suite")}
    yield Runs(root, state, run_ids)


def commands(runs: Runs, subcommand: str, verdict: str, engine: str = "local") -> tuple[list[str], str]:
    """The arguments and folder of ``subcommand`` acting on the run (or fixture) of ``verdict``."""
    out = ["--out", str(runs.state)]
    run_id = runs.run_ids[verdict]
    if subcommand in ("run", "run --bless"):
        args = ["run", "f.md", "--engine", engine, *out]
        args += ["--baseline", "base"] if verdict == "regression" else []
        return args + (["--bless"] if subcommand == "run --bless" else []), runs.folder(verdict)
    if subcommand == "rejudge":
        suite = runs.run_ids["suite"]
        extra = {
            "PASS": [],
            "FAIL": ["--judge", "python3 judge.py reverse"],  # b wins: the hard gate fails
            "regression": ["--judge", "python3 judge.py low", "--baseline", suite],  # a's score drops 20 points
            "ERR": ["--judge", "false"],  # no judgment
        }[verdict]
        return ["rejudge", suite, *extra, *out], str(runs.root / "suite")
    if subcommand == "validate":
        return ["validate", "bad.md" if verdict == "ERR" else "f.md"], runs.folder(verdict)
    return {
        "compare": ["compare", "base", run_id, *out],
        "bless": ["bless", run_id, "--name", f"cell-{verdict}", *out],
        "report": ["report", run_id, "--junit", f"report-{os.getpid()}-{verdict}.xml", *out],
        "show": ["show", run_id, *out],
        "history": ["history", *out],
    }[subcommand], runs.folder(verdict)


def table(runs: Runs, subcommands: dict[str, dict[str, int]], engine: str = "local") -> list[tuple[str, Command]]:
    cells = []
    for subcommand, codes in subcommands.items():
        conditions = {**CONDITIONS, **(MORE_CONDITIONS if subcommand == "run" else {})}
        for verdict in codes:
            args, cwd = commands(runs, subcommand, verdict, engine)
            for condition, (stdout, stderr) in conditions.items():
                cells.append((f"{subcommand} / {verdict} / {condition}", Command(args, cwd, stdout, stderr)))
    return cells


def mismatches(cli: ForkedCli, cells: list[tuple[str, Command]], expected: dict[str, dict[str, int]]) -> list[str]:
    """Every cell whose exit code is not the one written above, or that printed a traceback."""
    ended = cli.run([command for _, command in cells])
    found = []
    for (name, _), end in zip(cells, ended, strict=True):
        subcommand, verdict, _condition = name.split(" / ")
        want = expected[subcommand][verdict]
        if end.code != want or "Traceback" in end.stderr:
            found.append(f"{name}: exit {end.code}, expected {want}; stderr: {end.stderr.strip()[-300:]}")
    return found


def test_every_subcommand_exits_with_its_answer_whatever_happens_to_its_output(runs: Runs) -> None:
    cells = table(runs, EXPECTED)
    assert len(cells) == 136  # 32 (command, verdict) pairs x 4 conditions; run's 4 pairs x 2 more
    with ForkedCli() as cli:
        assert mismatches(cli, cells, EXPECTED) == []


def test_the_prefect_engine_exits_with_the_runs_answer_whatever_happens_to_its_output(
    runs: Runs, prefect_server: object
) -> None:
    only_run = {"run": EXPECTED["run"]}
    cells = [
        (name, command) for name, command in table(runs, only_run, "prefect") if name.split(" / ")[2] in CONDITIONS
    ]
    assert len(cells) == 16
    with ForkedCli(preload_prefect=True) as cli:
        assert mismatches(cli, cells, only_run) == []


# The situations of issue 28 as a user types them in bash: assay's own exit code is PIPESTATUS[0].
SHELL_CASES = [
    ("compare base REGRESSION | head -1", "regression", 1),
    ("run f.md --engine local --bless | head -n 3", "FAIL", 1),
    ("rejudge SUITE --judge false | true", "suite", 2),
    ("run f.md --engine local 2>&-", "PASS", 0),
]


@pytest.mark.parametrize(("line", "folder", "code"), SHELL_CASES, ids=[c[0] for c in SHELL_CASES])
def test_the_exit_code_through_a_shell_pipe_is_the_answer(
    runs: Runs, line: str, folder: str, code: int, tmp_path: Path
) -> None:
    line = line.replace("REGRESSION", runs.run_ids["regression"]).replace("SUITE", runs.run_ids["suite"])
    command, _, rest = line.partition(" |")
    piped = f" |{rest}" if rest else ""
    status = f'echo "${{PIPESTATUS[0]}}" > {tmp_path}/code'
    script = f"{sys.executable} -m flows.run {command} --out {runs.state}{piped}; {status}"
    done = subprocess.run(
        ["bash", "-c", script], cwd=runs.root / folder, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert (tmp_path / "code").read_text() == f"{code}\n", done.stderr
