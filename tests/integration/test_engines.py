"""The real Prefect flow and the local engine on real subprocesses give the same verdicts."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings
from fixtures_core.records.rundoc import RunResult, load_run, to_document
from fixtures_core.runs.close import complete
from fixtures_core.runs.local import run_rows_locally
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder
from tests.integration.conftest import REPO
from tests.processes import gone_soon, processes_with

MATRIX = """---
timeout: 20s
repeat: 2
---

| Name | Command | Repeat | Timeout | CEL | Serial |
|---|---|---:|---|---|---|
| counted | `echo x >> {{ .counter }}; echo '{"ok": true, "n": 1.0}'` | 3 | | `json.ok && json.n == 1` | |
| false-cel | `echo '{"ok": false}'` | | | `json.ok` | |
| missing-key | `echo '{"ok": true}'` | | | `json.zz == 1` | true |
| slow | `echo $$ > {{ .pidfile }}; sleep 30 & echo $! >> {{ .pidfile }}; wait` | 1 | 2s | | |
"""


def write_matrix(folder: Path) -> Path:
    counter = folder / "counter.txt"
    pidfile = folder / "pids.txt"
    text = MATRIX.replace("{{ .counter }}", str(counter)).replace("{{ .pidfile }}", str(pidfile))
    path = folder / "matrix.md"
    path.write_text(text)
    return path


def run_local_engine(fixture: Path, out: Path) -> RunResult:
    options = RunOptions(paths=(str(fixture),), out=str(out), engine="local")
    matrix = plan(options).matrix
    recorder = Recorder(store_for(options), "local-run", matrix)
    with Containment() as containment:
        rows = run_rows_locally(recorder, RunSettings(run_id="local-run"), containment, parallel=4)
    return complete(recorder, options, rows)


def run_prefect(fixture: Path, out: Path) -> RunResult:
    from flows.flow.matrix import run_with_prefect

    return run_with_prefect(RunOptions(paths=(str(fixture),), out=str(out)), "prefect-run")


def verdicts(run: RunResult) -> dict[str, tuple[str, int]]:
    return {row.name: (row.status, len(row.samples)) for row in run.rows}


def assert_dead(pids: list[int]) -> None:
    for pid in pids:
        assert gone_soon(pid), f"process {pid} is still running"


@pytest.mark.usefixtures("prefect_backend")
def test_prefect_flow_runs_the_matrix_like_the_local_engine(tmp_path: Path) -> None:
    fixture = write_matrix(tmp_path)
    prefect_run = run_prefect(fixture, tmp_path / "state")
    assert (tmp_path / "counter.txt").read_text().count("x") == 3  # repeat: 3 ran exactly three times

    expected = {
        "counted": ("PASS", 3),
        "false-cel": ("FAIL", 2),  # continue after an ordinary FAIL
        "missing-key": ("ERR", 1),  # stop after ERR (serial: its second sample never starts)
        "slow": ("ERR", 1),  # the 2 s budget ran out during the first sample
    }
    assert verdicts(prefect_run) == expected
    assert prefect_run.status == "ERR"
    slow = next(r for r in prefect_run.rows if r.name == "slow")
    assert "budget" in (slow.samples[0].error or "")
    assert_dead([int(p) for p in (tmp_path / "pids.txt").read_text().split()])
    missing = next(r for r in prefect_run.rows if r.name == "missing-key")
    assert "no such key: zz" in (missing.samples[0].error or "")

    (tmp_path / "counter.txt").unlink()
    local_run = run_local_engine(fixture, tmp_path / "state-local")
    assert verdicts(local_run) == expected
    assert (tmp_path / "counter.txt").read_text().count("x") == 3


@pytest.mark.usefixtures("prefect_backend")
def test_run_document_round_trips(tmp_path: Path) -> None:
    fixture = write_matrix(tmp_path)
    run = run_prefect(fixture, tmp_path / "state")
    saved = tmp_path / "state" / "runs" / "prefect-run" / "run.json"
    loaded = load_run(saved)
    assert loaded == run
    assert to_document(loaded) == json.loads(saved.read_text())
    assert load_run(tmp_path / "state" / "latest.json") == run


def test_evidence_is_written_per_sample(tmp_path: Path) -> None:
    fixture = write_matrix(tmp_path)
    run_local_engine(fixture, tmp_path / "state")
    evidence = tmp_path / "state" / "runs" / "local-run" / "evidence" / "0000-counted.jsonl"
    lines = [json.loads(line) for line in evidence.read_text().splitlines()]
    assert [line["sample"]["index"] for line in lines[:-1]] == [0, 1, 2]
    assert lines[-1]["raw_row"]["name"] == "counted" and lines[-1]["raw_row"]["samples"] == 3
    assert os.path.getsize(tmp_path / "state" / "runs" / "local-run" / "run.json") > 0


@pytest.mark.usefixtures("prefect_backend")
def test_deployment_parameters_run_the_flow_and_fail_it_on_a_bad_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.flow.matrix import matrix_flow
    from flows.flow.states import carried

    fixture = tmp_path / "ok.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | `true` |\n| bad | `false` |\n")
    monkeypatch.chdir(tmp_path)  # a deployment's flow run may only use its working folder
    options = {"paths": [str(fixture)], "out": str(tmp_path / "state"), "filter": ["ok"]}  # JSON, as a deployment sends
    passing = matrix_flow(**options, return_state=True)
    run = carried(passing, RunResult)
    assert passing.is_completed() and run.status == "PASS" and [r.name for r in run.rows] == ["ok"]

    failing = matrix_flow(paths=[str(fixture)], out=str(tmp_path / "state"), return_state=True)
    assert failing.is_failed()
    assert (
        failing.message
        == f"assay verdict FAIL · exit 1 (run {carried(failing, RunResult).run_id}): 1 row failed: 'bad'"
    )
    assert load_run(tmp_path / "state" / "latest.json").status == "FAIL", "the document is written before failing"


@pytest.mark.usefixtures("prefect_backend")
def test_a_terminated_flow_run_kills_its_samples_and_writes_its_run(tmp_path: Path) -> None:
    """A deployment run stopped by Prefect (SIGTERM to the process whose main thread runs the flow)."""
    from prefect.settings import PREFECT_API_URL

    started = tmp_path / "started"
    fixture = tmp_path / "slow.md"
    fixture.write_text(f"| Name | Command |\n|---|---|\n| slow | `touch {started}; sleep 60 & wait` |\n")
    options = {"paths": [str(fixture)], "out": str(tmp_path / "state")}
    marker = uuid.uuid4().hex
    env = dict(os.environ, PREFECT_API_URL=str(PREFECT_API_URL.value()), ASSAY_TEST_MARK=marker, PYTHONPATH=str(REPO))
    code = f"from flows.flow.matrix import matrix_flow; matrix_flow(**{options!r})"
    process = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        for _ in range(1200):  # bounded wait for the sample to start (not a timing assertion)
            if started.exists() or process.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.1)
        assert started.exists(), process.communicate(timeout=5)
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert processes_with(marker) == [], "a sample outlived its terminated flow run"
    [run_file] = (tmp_path / "state" / "runs").glob("*/run.json")
    document = json.loads(run_file.read_text())
    assert document["status"] == "ERR" and "interrupted" in document["error"]


@pytest.mark.usefixtures("prefect_backend")
@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_a_raw_row_that_cannot_be_recorded_is_an_error_on_both_engines(tmp_path: Path, engine: str) -> None:
    """The skipped row runs no sample, so its raw result is its only evidence line; a folder where
    that file goes makes the write fail. A row missing from the evidence must not pass as it ran."""
    fixture = tmp_path / "rows.md"
    fixture.write_text("| Name | Command | Skip |\n|---|---|---|\n| skipped | `true` | true |\n| ok | `true` | |\n")
    run_id = f"{engine}-run"
    (tmp_path / "state" / "runs" / run_id / "evidence" / "0000-skipped.jsonl").mkdir(parents=True)
    run = (run_local_engine if engine == "local" else run_prefect)(fixture, tmp_path / "state")
    [skipped, ok] = run.rows
    assert (skipped.status, skipped.stopped) == ("ERR", "crashed")
    evidence = tmp_path / "state" / "runs" / run_id / "evidence" / "0000-skipped.jsonl"
    assert skipped.error == f"{evidence}: Is a directory", skipped.error  # names the file, not a bug
    assert ok.status == "PASS" and run.status == "ERR"
