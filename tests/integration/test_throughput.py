"""Throughput on real runs, as a user starts them (``python -m flows.run``): sample slots shared by the
rows, per-provider limits (local semaphores; Prefect global concurrency limits), ``--resume`` after a
SIGKILL, a cost budget, and samples on a Dask LocalCluster of worker processes (the example matrix gets the
same verdicts there as on the local engine, and the report says how long the run waited for the cluster).

Caps are proven by the start/end records the samples write (under ``flock``, in the order they
happened); the limits' presence in the Prefect API is read while samples hold them; nothing asserts
on how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, WIDE, run_cli
from tests.polling import wait_until
from tests.processes import gone_soon, is_gone

ENGINES = ["local", "prefect"]


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "prefect":
        request.getfixturevalue("prefect_server")
    return str(request.param)


def logged(log: Path, key: str, body: str) -> str:
    """A sample script that records its start and end (``start SAMPLE KEY``) around ``body``."""
    where = shlex.quote(str(log))
    return (
        f"flock {where} -c 'echo start $ASSAY_SAMPLE {key} >> {where}'; {body}; "
        f"flock {where} -c 'echo end $ASSAY_SAMPLE {key} >> {where}'"
    )


def peak_in_flight(log: Path) -> dict[str, int]:
    """The most samples of each key that were ever in flight at once (none before the first sample logs)."""
    now: dict[str, int] = {}
    peak: dict[str, int] = {}
    if not log.exists():  # a slot is taken a moment before its sample writes the log's first line
        return peak
    for line in log.read_text().splitlines():
        event, _sample, key = line.split()
        now[key] = now.get(key, 0) + (1 if event == "start" else -1)
        peak[key] = max(peak.get(key, 0), now[key])
    return peak


def limited_matrix(tmp_path: Path, log: Path, body: str) -> Path:
    """Two providers, two models each, 3 samples per row: 12 samples per provider, at most 2 at once."""
    rows = "\n".join(
        f"| {p}-{m} | {p} | bash -c {shlex.quote('P=' + p + '; ' + logged(log, p, body))} |"
        for p in ("a", "b")
        for m in ("x", "y")
    )
    fixture = tmp_path / "limits.md"
    fixture.write_text(
        "---\nrepeat: 3\nconcurrency: 8\nlimits:\n  provider: 2\n---\n\n"
        f"| Name | provider | Command |\n|---|---|---|\n{rows}\n"
    )
    return fixture


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_limit_holds_per_provider_while_other_rows_fill_the_slots(tmp_path: Path, engine: str) -> None:
    log = tmp_path / "log"
    # Each sample waits (bounded) until a second sample of its provider started: the cap is reached for sure.
    started = f'grep -c "^start .* $P$" {shlex.quote(str(log))}'
    pair = f'for i in $(seq 300); do [ "$({started})" -ge 2 ] && break; sleep 0.1; done'
    fixture = limited_matrix(tmp_path, log, pair)
    done = run_cli([str(fixture), "--engine", engine, "--out", str(tmp_path / "state")], tmp_path, WIDE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert peak_in_flight(log) == {"a": 2, "b": 2}  # reached, never passed: 4 in flight of 8 slots
    assert len(log.read_text().splitlines()) == 24


def start_run(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, **WIDE, "PYTHONPATH": str(REPO)}
    env.pop("PREFECT_API_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "flows.run", *args], cwd=cwd, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip


@pytest.mark.usefixtures("prefect_backend")
def test_a_prefect_global_concurrency_limit_is_visible_while_samples_hold_it(tmp_path: Path) -> None:
    from prefect.client.orchestration import get_client

    log, go = tmp_path / "log", tmp_path / "go"
    gate = f"for i in $(seq 600); do [ -e {shlex.quote(str(go))} ] && break; sleep 0.1; done"
    fixture = limited_matrix(tmp_path, log, gate)
    run = start_run([str(fixture), "--out", str(tmp_path / "state")], tmp_path)
    try:
        with get_client(sync_client=True) as client:

            def in_use() -> list[int | None]:
                limits = {gcl.name: gcl for gcl in client.read_global_concurrency_limits(limit=200)}
                found = [limits.get(f"assay:provider={p}") for p in ("a", "b")]
                return [g.active_slots if g is not None and g.limit == 2 else None for g in found]

            wait_until(lambda: in_use() == [2, 2], "both providers' global concurrency limits show 2 of 2 in use")
            # A sample logs its start a moment after its slot is taken: wait for the log, too.
            wait_until(lambda: peak_in_flight(log) == {"a": 2, "b": 2}, "two samples of each provider started")
            go.touch()
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0, out + err
            assert in_use() == [0, 0]  # every sample gave its slot back
    finally:
        go.touch()
        if run.poll() is None:
            run.kill()
    assert peak_in_flight(log) == {"a": 2, "b": 2}


def evidence_samples(state: Path) -> list[dict[str, Any]]:
    lines = []
    for path in state.glob("runs/*/evidence/*.jsonl"):
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if "sample" in entry:
                    lines.append(entry["sample"])
    return lines


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_killed_run_resumes_without_running_finished_samples_again(tmp_path: Path, engine: str) -> None:
    counter, go, pids = tmp_path / "counter", tmp_path / "go", tmp_path / "pids"
    pids.mkdir()
    # Samples 0-3 end at once; 4 and 5 wait for "go", which comes only after the kill.
    body = (
        f"echo $ASSAY_SAMPLE >> {shlex.quote(str(counter))}; echo $$ > {shlex.quote(str(pids))}/$ASSAY_SAMPLE; "
        f'if [ "$ASSAY_SAMPLE" -ge 4 ]; then '
        f"for i in $(seq 600); do [ -e {shlex.quote(str(go))} ] && break; sleep 0.1; done; fi; echo ok"
    )
    fixture = tmp_path / "resume.md"
    fixture.write_text(
        "---\nrepeat: 6\nconcurrency: 2\nserial: false\n---\n\n"  # samples at once: 4 and 5 in flight together
        f"| Name | Command |\n|---|---|\n| slow | bash -c {shlex.quote(body)} |\n| other | echo other |\n"
    )
    state = tmp_path / "state"
    args = [str(fixture), "--engine", engine, "--out", str(state)]
    run = start_run(args, tmp_path)
    try:
        wait_until(lambda: sorted(s["index"] for s in evidence_samples(state) if "other" not in s.get("stdout", ""))
                   [:4] == [0, 1, 2, 3] and (pids / "4").exists() and (pids / "5").exists(),
                   "samples 0-3 recorded and 4, 5 in flight")  # fmt: skip
        in_flight = [int((pids / name).read_text()) for name in ("4", "5")]
        os.kill(run.pid, signal.SIGKILL)
        run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert all(gone_soon(pid) for pid in in_flight), "a killed run's samples outlived it"
    assert sorted(counter.read_text().split()) == ["0", "1", "2", "3", "4", "5"]
    go.touch()

    resumed = run_cli(["run", "--resume", "latest", "--out", str(state), "--engine", engine,
                       "--json", str(tmp_path / "run.json")], tmp_path, WIDE)  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert sorted(counter.read_text().split()) == ["0", "1", "2", "3", "4", "4", "5", "5"]  # only 4, 5 again
    document = json.loads((tmp_path / "run.json").read_text())
    clean = run_cli([str(fixture), "--engine", "local", "--out", str(tmp_path / "clean"),
                     "--json", str(tmp_path / "clean.json")], tmp_path, WIDE)  # fmt: skip
    reference = json.loads((tmp_path / "clean.json").read_text())
    assert clean.returncode == 0
    assert document["status"] == reference["status"] == "PASS"
    assert document["summary"] == reference["summary"]
    counts = [(r["name"], r["status"], len(r["samples"])) for f in document["fixtures"] for r in f["rows"]]
    assert counts == [("slow", "PASS", 6), ("other", "PASS", 6)]
    (folder,) = list((state / "runs").iterdir())
    assert folder.name == document["run_id"]  # one run, resumed under its own id


def test_a_finished_run_cannot_be_resumed(tmp_path: Path) -> None:
    fixture = tmp_path / "ok.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | true |\n")
    state = tmp_path / "state"
    assert run_cli([str(fixture), "--engine", "local", "--out", str(state)], tmp_path).returncode == 0
    again = run_cli(["run", "--resume", "latest", "--out", str(state), "--engine", "local"], tmp_path)
    assert again.returncode == 2
    assert again.stderr.strip().startswith("error: --resume ")
    assert "the run finished (PASS); only an interrupted or killed run can be resumed" in again.stderr


def test_a_budget_stops_new_samples_and_names_what_it_skipped(tmp_path: Path) -> None:
    fixture = tmp_path / "budget.md"
    fixture.write_text(
        "---\nrepeat: 4\nconcurrency: 1\nbudget: cost_usd <= 1\n"
        "metrics:\n  - {name: cost_usd, extract: '0.25', unit: USD, aggregate: mean}\n---\n\n"
        "| Name | Command |\n|---|---|\n| first | true |\n| second | true |\n| third | true |\n"
    )
    done = run_cli([str(fixture), "--engine", "local", "--parallel", "1", "--out", str(tmp_path / "state"),
                    "--json", str(tmp_path / "run.json")], tmp_path, WIDE)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    document = json.loads((tmp_path / "run.json").read_text())
    rows = {r["name"]: r for f in document["fixtures"] for r in f["rows"]}
    assert (rows["first"]["status"], len(rows["first"]["samples"])) == ("PASS", 4)
    assert rows["second"]["status"] == rows["third"]["status"] == "SKIP"
    assert rows["second"]["samples"] == []
    assert document["error"].startswith("budget exhausted: cost_usd 1 spent of 1 (")
    assert document["stopped"] == rows["second"]["stopped"] == rows["third"]["stopped"] == "budget"
    assert "2 row(s) skipped: second, third" in document["error"]
    assert "budget exhausted" in done.stdout and "second" in done.stdout


@pytest.mark.usefixtures("prefect_server")
def test_samples_run_on_a_dask_local_cluster_and_a_stopped_row_kills_them_there(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    here = shlex.quote(str(pids))
    # Sample 0 waits for sample 1 to start, then its check cannot be evaluated (ERR): the row stops and
    # the Dask worker must kill sample 1 (asleep for a minute).
    stopping = (
        f"echo $$ > {here}/$ASSAY_SAMPLE; "
        f'if [ "$ASSAY_SAMPLE" = 0 ]; then for i in $(seq 600); do [ -e {here}/1 ] && exit 0; sleep 0.1; done; fi; '
        "sleep 60"
    )
    parent = "tr '\\0' ' ' < /proc/$PPID/cmdline"
    fixture = tmp_path / "dask.md"
    fixture.write_text(
        "---\nrepeat: 2\nconcurrency: 2\nserial: false\n---\n\n"
        "| Name | Command | CEL |\n|---|---|---|\n"
        f"| where | bash -c {shlex.quote(parent)} | true |\n"
        f"| stops | bash -c {shlex.quote(stopping)} | int(stdout) == 1 |\n"
    )
    done = run_cli([str(fixture), "--dask-address", "local", "--out", str(tmp_path / "state"),
                    "--json", str(tmp_path / "run.json")], tmp_path, WIDE, timeout=300)  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    document = json.loads((tmp_path / "run.json").read_text())
    rows = {r["name"]: r for f in document["fixtures"] for r in f["rows"]}
    assert rows["where"]["status"] == "PASS"
    assert rows["stops"]["status"] == "ERR" and rows["stops"]["error"].startswith("sample 0:")
    second = rows["stops"]["samples"][1]
    assert second["status"] == "ERR" and second["error"].startswith("cancelled: the row had stopped"), second
    assert done.returncode == 2
    sleeper = int((pids / "1").read_text())
    assert gone_soon(sleeper) and is_gone(sleeper)
    parents = [line for path in (tmp_path / "state").glob("runs/*/evidence/*where*.jsonl")
               for line in path.read_text().splitlines() if '"sample"' in line]  # fmt: skip
    assert len(parents) == 2
    for line in parents:  # a Dask worker process ran it, not the flow's own process
        command = json.loads(line)["sample"]["stdout"]
        assert "flows.run" not in command and "multiprocessing" in command, command


@pytest.mark.usefixtures("prefect_server")
def test_a_local_dask_cluster_gives_the_example_matrix_the_local_engines_verdicts_and_says_what_it_waited_for(
    tmp_path: Path,
) -> None:
    """The cluster's start and its workers' imports are not the rows' time (issue 42: every row of the matrix ran
    out of its budget while a LocalCluster started on a busy machine): same rows, same verdicts as the local
    engine; the terminal report and run.json say how long the run waited for the cluster."""
    example = REPO / "examples" / "matrix.md"

    def run(*engine: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        document = tmp_path / f"{engine[0].strip('-')}.json"
        done = run_cli([str(example), *engine, "--out", str(tmp_path / "state"), "--json", str(document)],
                       tmp_path, WIDE, timeout=900)  # fmt: skip
        assert "Traceback" not in done.stderr, done.stderr
        return done, json.loads(document.read_text())

    def verdicts(document: dict[str, Any]) -> dict[str, tuple[str, int, str | None]]:
        return {r["name"]: (r["status"], len(r["samples"]), r.get("error")) for f in document["fixtures"]
                for r in f["rows"]}  # fmt: skip

    local, local_run = run("--engine", "local")
    dask, dask_run = run("--dask-address", "local")
    assert (dask.returncode, verdicts(dask_run)) == (local.returncode, verdicts(local_run)) == (1, verdicts(local_run))
    assert dask_run["status"] == local_run["status"] == "FAIL"
    cluster = dask_run["dask"]
    assert cluster["address"] == "local" and cluster["workers"] >= 1 and cluster["waited_s"] > 0, cluster
    assert "dask" not in local_run
    assert f"dask: waited {cluster['waited_s']:.1f} s for the cluster (local, " in dask.stdout, dask.stdout
