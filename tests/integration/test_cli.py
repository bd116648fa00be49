"""The command line as a user runs it: real processes, real exit codes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, run_cli
from tests.processes import processes_with


def test_example_matrix_reports_and_exits_with_its_verdict(tmp_path: Path) -> None:
    done = run_cli([str(REPO / "examples" / "matrix.md"), "--engine", "local", "--out", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "CLI high" in done.stdout and "exceeds the allowed 25%" in done.stdout
    assert "FAIL" in done.stdout.splitlines()[-1]
    document = json.loads((tmp_path / "latest.json").read_text())
    assert document["schema"] == "assay.run/v1"
    assert {r["name"]: r["status"] for f in document["fixtures"] for r in f["rows"]}["API high"] == "PASS"


def test_passing_example_exits_zero(tmp_path: Path) -> None:
    done = run_cli([str(REPO / "examples" / "passing.md"), "--engine", "local", "--out", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_dry_run_of_a_matrix_runs_nothing_and_never_says_pass(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    fixture = tmp_path / "plain.md"
    fixture.write_text(
        "---\nrepeat: 3\n---\n\n| Name | Command | CEL |\n|---|---|---|\n"
        f"| touches | `touch {marker}` | `exitCode == 0` |\n"
    )
    summary = tmp_path / "summary.md"
    args = [str(fixture), "--dry-run", "--engine", "local", "--out", str(tmp_path), "--summary", str(summary)]

    done = run_cli(args, cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr  # a dry run that did not err exits 0
    assert not marker.exists()
    verdict = done.stdout.splitlines()[-2:]
    assert verdict == [
        "DRY RUN  0 passed, 0 failed, 0 errored, 1 skipped; 0 samples; nothing was scored",
        "verdict: DRY RUN · exit 0 — dry run: nothing was scored, the wiring held",
    ]
    assert summary.read_text().startswith("# assay run `") and ": **DRY RUN**\n" in summary.read_text()
    (row,) = json.loads((tmp_path / "latest.json").read_text())["fixtures"][0]["rows"]
    assert (row["status"], row["error"], "stochastic" in row) == ("SKIP", "dry run", False)
    assert {sample["status"] for sample in row["samples"]} == {"SKIP"}


def test_a_cel_compile_error_makes_its_row_err_without_running_it(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    fixture = tmp_path / "bad.md"
    fixture.write_text(
        "| Name | Command | CEL |\n|---|---|---|\n"
        f"| good | `touch {good}` | `exitCode == 0` |\n"
        f"| bad | `touch {bad}` | `json.x +` |\n"
    )
    document = tmp_path / "run.json"
    done = run_cli([str(fixture), "--engine", "local", "--out", str(tmp_path), "--json", str(document)], cwd=tmp_path)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    rows = {row["name"]: row for row in json.loads(document.read_text())["fixtures"][0]["rows"]}
    assert (rows["good"]["status"], rows["bad"]["status"]) == ("PASS", "ERR")
    assert rows["bad"]["error"].startswith(f"{fixture}:4: CEL:") and rows["bad"]["stopped"] == "configuration"
    assert good.exists() and not bad.exists()  # the other row ran; the broken one never started


def test_validate_names_file_and_line(tmp_path: Path) -> None:
    fixture = tmp_path / "dup.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| a | true |\n| a | true |\n")
    done = run_cli(["validate", str(fixture)], cwd=tmp_path)
    assert done.returncode == 2
    assert f"{fixture}:4: Name: duplicate row name 'a' (first at line 3)" in done.stderr


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (b"| Name | Command |\n|---|---|\n| a | `touch ran; echo a\x00b` |\n", "f.md:3: Command column"),
        (b"### command: a\n\n```bash\ntouch ran; echo a\x00b\n```\n", "f.md:4: bash fence"),
    ],
    ids=["table-cell", "command-block"],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_nul_byte_in_a_command_is_refused_before_anything_runs(
    tmp_path: Path, text: bytes, where: str, command: str
) -> None:
    # Markdown reads a NUL as U+FFFD: the command ran as `echo a\ufffdb` and validate said ok.
    (tmp_path / "f.md").write_bytes(text)
    argv = [command, "f.md"] + (["--engine", "local", "--out", ".assay"] if command == "run" else [])
    done = run_cli(argv, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    refusal = (
        f"{where}: holds a NUL byte (\\0): Markdown would read it as U+FFFD, "
        "so what runs would not be what the file says"
    )
    if command == "validate":
        assert done.stderr == f"error: {refusal}\n"
    else:  # the file's rows are ERR with it (a broken file never stops the run's other files)
        assert any(line.strip().endswith(refusal) for line in done.stdout.splitlines()), done.stdout
    assert not (tmp_path / "ran").exists()


def test_json_option_writes_the_run_document(tmp_path: Path) -> None:
    target = tmp_path / "out" / "run.json"
    done = run_cli(
        [str(REPO / "examples" / "passing.md"), "--engine", "local", "--out", str(tmp_path), "--json", str(target)],
        cwd=tmp_path,
    )
    assert done.returncode == 0
    assert json.loads(target.read_text())["status"] == "PASS"


@pytest.mark.usefixtures("prefect_server")
@pytest.mark.parametrize(
    ("extra", "env", "named"),
    [
        (["--json", "/proc/nope/run.json"], {}, "--json /proc/nope/run.json: cannot create a file there: "),
        ([], {"GITHUB_STEP_SUMMARY": "/proc/nope/summary.md"}, "$GITHUB_STEP_SUMMARY /proc/nope/summary.md:"),
    ],
)
def test_an_output_that_cannot_be_written_is_refused_before_anything_runs(
    tmp_path: Path, extra: list[str], env: dict[str, str], named: str
) -> None:
    ran = tmp_path / "ran"
    fixture = tmp_path / "f.md"
    fixture.write_text(f"| Name | Command |\n|---|---|\n| r | touch {ran} |\n")
    done = run_cli([str(fixture), "--engine", "local", "--out", str(tmp_path / "state"), *extra], tmp_path, env)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith(f"error: {named}"), done.stderr
    assert not ran.exists() and not (tmp_path / "state" / "runs").exists()


def test_prefect_engine_from_the_command_line(tmp_path: Path, prefect_server: Any) -> None:
    done = run_cli([str(REPO / "examples" / "matrix.md"), "--out", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "CLI high" in done.stdout
    assert done.stderr.strip() == "", "Prefect must stay quiet by default"


@pytest.mark.usefixtures("prefect_server")
def test_sigterm_cancels_samples_and_leaves_no_process_behind(tmp_path: Path) -> None:
    started = tmp_path / "started"
    fixture = tmp_path / "slow.md"
    fixture.write_text(
        "---\ntimeout: 120s\n---\n\n| Name | Command |\n|---|---|\n"
        f"| slow | `touch {started}; sleep 60 & wait` |\n| slow2 | `sleep 60` |\n"
    )
    marker = uuid.uuid4().hex
    env = dict(os.environ, PYTHONPATH=str(REPO), ASSAY_TEST_MARK=marker)
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(1200):  # bounded wait for the first sample to start (not a timing assertion)
            if started.exists() or process.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)
        assert started.exists(), "the sample never started"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 2, stdout + stderr
    assert "Traceback" not in stderr
    document = json.loads((tmp_path / "state" / "latest.json").read_text())
    assert document["status"] == "ERR"
    assert "interrupted" in document["error"]
    assert processes_with(marker) == [], "a child process or temporary server outlived the run"


@pytest.mark.parametrize(
    ("command", "code"),
    [("true", 0), ("false", 1), ("exit 7", 1), ("sleep 5", 2)],
    ids=["pass", "fail", "fail7", "err"],
)
def test_a_closed_stdout_keeps_the_verdicts_exit_code_and_says_so_in_one_line(
    tmp_path: Path, command: str, code: int
) -> None:
    """`assay run X | true`: the reader is gone before the report; the exit code is still the verdict's."""
    fixture = tmp_path / "one.md"
    fixture.write_text(f"---\ntimeout: 1s\n---\n\n| Name | Command |\n|---|---|\n| row | `{command}` |\n")
    read, write = os.pipe()
    os.close(read)  # nobody will read the report
    try:
        done = subprocess.run(
            [sys.executable, "-m", "flows.run", str(fixture), "--engine", "local", "--out", str(tmp_path / "s")],
            cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=write, stderr=subprocess.PIPE,
            text=True, timeout=60,
        )  # fmt: skip
    finally:
        os.close(write)
    [document] = (tmp_path / "s" / "runs").glob("*/run.json")
    assert done.returncode == code, done.stderr
    assert done.stderr == f"assay: standard output was closed (broken pipe); the report is in {document}\n"
    assert json.loads(document.read_text())["status"] == {0: "PASS", 1: "FAIL", 2: "ERR"}[code]


def test_a_run_still_going_cannot_be_resumed_and_history_tells_it_from_a_killed_one(tmp_path: Path) -> None:
    started, again = tmp_path / "started", tmp_path / "again"
    fixture = tmp_path / "slow.md"
    fixture.write_text(
        f"| Name | Command |\n|---|---|\n| slow | `test -e {again} \\|\\| {{ touch {started}; sleep 60; }}` |\n"
    )
    state = str(tmp_path / "state")
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS="200")
    first = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--engine", "local", "--out", state],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        for _ in range(3000):  # bounded wait for the sample to start (not a timing assertion)
            if started.exists() or first.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                first.wait(timeout=0.02)
        assert started.exists()
        [run_id] = [folder.name for folder in (tmp_path / "state" / "runs").iterdir()]
        refused = run_cli(["--resume", "latest", "--engine", "local", "--out", state], cwd=tmp_path)
        assert refused.returncode == 2
        assert refused.stderr == (
            f"error: --resume {run_id}: the run is still running (pid {first.pid}); wait for it, or stop it first\n"
        )
        running = run_cli(["history", "--out", state], cwd=tmp_path, env={"COLUMNS": "200"})
        assert (
            f"│ {run_id} │" in running.stdout and "running" in running.stdout and f"pid {first.pid}" in running.stdout
        )
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    killed = run_cli(["history", "--out", state], cwd=tmp_path, env={"COLUMNS": "200"})
    assert "incomplete" in killed.stdout and "running" not in killed.stdout, killed.stdout
    again.touch()
    resumed = run_cli(["--resume", run_id, "--engine", "local", "--out", state], cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
