"""Interrupts at every phase, on both engines: exit 2, never 0, never a traceback, no sample left.

In process, a signal is raised at a chosen phase by the code that runs in it
(a sample that signals its parent, or a step wrapped to signal first); as a
user would, real signals are sent to a real ``python -m flows.run``.
Nothing asserts on how long something took, except the acceptance bound
"gone within 2 s after assay is SIGKILLed", polled.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fixtures_core.execution import procfs
from fixtures_core.records.rundoc import load_run
from fixtures_core.reports import terminal
from fixtures_core.runs import close, plan
from flows.cli.main import main
from flows.server import idle_stop, supervisor
from flows.server import local as server
from tests.integration.conftest import REPO, SESSION_HOME
from tests.processes import processes_with

ENGINES = ["local", "prefect"]


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine of a test; the Prefect one runs against the session's Prefect server."""
    if request.param == "prefect":
        request.getfixturevalue("prefect_backend")
    return str(request.param)


def block(script: str, front: str = "") -> str:
    head = f"---\n{front}---\n\n" if front else ""
    return f"{head}### command: a\n\n```bash\n{script}\n```\n"


def signal_self_first(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, signum: int = signal.SIGINT) -> None:
    """Wrap ``owner.name`` so that the process signals itself as the step begins (fault injection)."""
    original: Callable[..., object] = getattr(owner, name)

    def wrapped(*args: object, **kwargs: object) -> object:
        os.kill(os.getpid(), signum)
        time.sleep(0.05)  # the handler runs in the main thread, between two bytecodes
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapped)


# Prefect's own log line format: in process, its background services (the events worker of an
# earlier in-process run) may write one into whichever test is capturing at that moment.
_PREFECT_LOG = re.compile(r"^\d\d:\d\d:\d\d\.\d+ \| ")


def error_lines(err: str) -> list[str]:
    assert "Traceback" not in err
    return [line for line in err.splitlines() if not _PREFECT_LOG.match(line)]


def only_run(state: Path) -> dict[str, object]:
    (folder,) = list((state / "runs").iterdir())
    return json.loads((folder / "run.json").read_text())


# --- in process, one phase at a time ------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_signal_while_planning_stops_before_anything_runs(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    ran = tmp_path / "ran"
    fixture = tmp_path / "f.md"
    fixture.write_text(block(f"touch {ran}"))
    signal_self_first(monkeypatch, plan, "load_matrix", signal.SIGTERM)
    assert main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state")]) == 2
    lines = error_lines(capfd.readouterr().err)
    assert lines == ["error: interrupted by SIGTERM before the run started; nothing ran"]
    assert not ran.exists() and not (tmp_path / "state" / "runs").exists()


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_first_signal_while_samples_run_stops_them_and_closes_the_run_as_err(
    engine: str, tmp_path: Path, marker: str, capfd: pytest.CaptureFixture[str]
) -> None:
    fixture = tmp_path / "f.md"
    # The sample interrupts assay (its parent) and lingers; a second row never starts.
    fixture.write_text(block("kill -INT $PPID; sleep 60 & sleep 60") + "\n### command: b\n\n```bash\nsleep 60\n```\n")
    code = main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state"), "--parallel", "1"])
    assert code == 2
    assert error_lines(capfd.readouterr().err) == ["assay: SIGINT: stopping samples (again to stop at once)"]
    document = only_run(tmp_path / "state")
    assert document["status"] == "ERR" and str(document["error"]).startswith("interrupted")
    assert document["stopped"] == "cancelled"
    assert processes_with(marker) == []


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_second_signal_kills_every_sample_at_once_and_exits_2(
    engine: str, tmp_path: Path, marker: str, capfd: pytest.CaptureFixture[str]
) -> None:
    fixture = tmp_path / "f.md"
    # Ignores SIGTERM (so the graceful stop would wait out its grace), then interrupts again.
    script = "trap '' TERM; kill -INT $PPID; sleep 0.5; kill -INT $PPID; sleep 60"
    fixture.write_text(block(script, front="timeout: 120s\n"))
    code = main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state")])
    assert code == 2
    assert error_lines(capfd.readouterr().err) == [
        "assay: SIGINT: stopping samples (again to stop at once)",
        "error: interrupted by SIGINT again: every sample was killed at once",
    ]
    assert processes_with(marker) == []
    # In process, the flow thread the command stopped waiting for winds down on its own: let it
    # finish here, or it would finalize during the next test (a command line leaves at once instead).
    for thread in threading.enumerate():
        if thread.name == "assay-flow":
            thread.join(timeout=60)


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_signal_while_finalizing_records_the_run_as_interrupted(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    fixture = tmp_path / "f.md"
    fixture.write_text(block("true"))
    signal_self_first(monkeypatch, close, "finalize_rows")
    assert main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state")]) == 2
    assert error_lines(capfd.readouterr().err) == ["assay: SIGINT: stopping samples (again to stop at once)"]
    document = only_run(tmp_path / "state")
    assert document["status"] == "ERR"
    assert document["error"] == "interrupted by SIGINT while the run closed (it was PASS)"
    assert document["stopped"] == "cancelled"
    assert load_run(tmp_path / "state" / "latest.json").status == "ERR"


def test_a_signal_while_reporting_records_the_run_as_interrupted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    fixture = tmp_path / "f.md"
    fixture.write_text(block("true"))
    signal_self_first(monkeypatch, terminal, "render", signal.SIGHUP)
    assert main(["run", str(fixture), "--engine", "local", "--out", str(tmp_path / "state")]) == 2
    assert error_lines(capfd.readouterr().err) == [
        "error: interrupted by SIGHUP while reporting; the run is recorded as ERR"
    ]
    assert only_run(tmp_path / "state")["status"] == "ERR"


def test_signal_handlers_are_given_back_after_an_in_process_command(tmp_path: Path) -> None:
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    fixture = tmp_path / "f.md"
    fixture.write_text(block("true"))
    assert main(["run", str(fixture), "--engine", "local", "--out", str(tmp_path / "state")]) == 0
    assert {signum: signal.getsignal(signum) for signum in before} == before


# --- real signals to a real assay ------------------------------------------------------------------


def spawn(args: list[str], tmp_path: Path, marker: str, engine: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), ASSAY_TEST_MARK=marker, COLUMNS="200")
    env.pop("PREFECT_API_URL", None)
    if engine == "prefect":
        from prefect.settings import PREFECT_API_URL

        env["PREFECT_API_URL"] = str(PREFECT_API_URL.value())
    return subprocess.Popen(
        [sys.executable, "-m", "flows.run", *args, "--engine", engine, "--out", str(tmp_path / "state")],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, process: subprocess.Popen[str]) -> None:
    for _ in range(1500):  # bounded wait for the sample to start (not a timing assertion)
        if path.exists() or process.poll() is not None:
            break
        time.sleep(0.02)
    assert path.exists(), process.communicate(timeout=30)


def interrupt(process: subprocess.Popen[str], *signums: signal.Signals, gap_s: float = 0.3) -> str:
    """Send the signals (``gap_s`` apart: two signals, not one) and return stderr once assay exits."""
    try:
        for number, signum in enumerate(signums):
            if number:
                time.sleep(gap_s)
            process.send_signal(signum)
        return process.communicate(timeout=120)[1]
    finally:
        if process.poll() is None:
            process.kill()


DAEMONS = ("setsid", "double-forked", "nohup")


def slow_fixture(tmp_path: Path) -> tuple[Path, Path]:
    """A sample that starts three daemons (each leaves its PID in ``daemon-<kind>``), marks its start, sleeps."""

    def daemon(kind: str) -> str:
        pid_file = tmp_path / f"daemon-{kind}"  # written whole (renamed into place), then read
        return f"sh -c 'echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 60' >/dev/null 2>&1"

    started = tmp_path / "started"
    fixture = tmp_path / "slow.md"
    daemons = f"setsid {daemon('setsid')} & ( ( {daemon('double-forked')} & ) & ); nohup {daemon('nohup')} &"
    fixture.write_text(block(f"{daemons}\ntouch {started}\nsleep 60", front="timeout: 120s\n"))
    return fixture, started


def daemon_pids(tmp_path: Path, process: subprocess.Popen[str]) -> dict[str, int]:
    """The PIDs the sample's daemons left (bounded wait: the double-forked one may start a moment late)."""
    files = {kind: tmp_path / f"daemon-{kind}" for kind in DAEMONS}
    for _ in range(1500):
        if all(file.exists() for file in files.values()) or process.poll() is not None:
            break
        time.sleep(0.02)
    missing = [kind for kind, file in files.items() if not file.exists()]
    assert not missing, f"daemons {missing} never started; assay exited {process.poll()}"
    return {kind: int(file.read_text()) for kind, file in files.items()}


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_a_signal_to_a_running_assay_exits_2_with_an_err_run(
    engine: str, signum: signal.Signals, tmp_path: Path, marker: str
) -> None:
    fixture, started = slow_fixture(tmp_path)
    process = spawn([str(fixture)], tmp_path, marker, engine)
    wait_for(started, process)
    err = interrupt(process, signum)
    assert process.returncode == 2, err
    assert error_lines(err) == [f"assay: {signum.name}: stopping samples (again to stop at once)"]
    document = only_run(tmp_path / "state")
    assert document["status"] == "ERR" and str(document["error"]).startswith("interrupted")
    assert document["stopped"] == "cancelled"
    assert processes_with(marker) == []


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_a_second_sigint_to_a_running_assay_exits_2_at_once(engine: str, tmp_path: Path, marker: str) -> None:
    started = tmp_path / "started"
    fixture = tmp_path / "slow.md"
    fixture.write_text(block(f"trap '' TERM\nsetsid sleep 60 >/dev/null 2>&1 &\ntouch {started}\nsleep 60"))
    process = spawn([str(fixture)], tmp_path, marker, engine)
    wait_for(started, process)
    err = interrupt(process, signal.SIGINT, signal.SIGINT)
    assert process.returncode == 2, err
    lines = error_lines(err)
    assert lines[0] == "assay: SIGINT: stopping samples (again to stop at once)"
    assert lines[1:] == ["error: interrupted by SIGINT again: every sample was killed at once"]
    assert processes_with(marker) == []
    document = only_run(tmp_path / "state")  # closed from its evidence: the run folder has its run.json
    assert document["status"] == "ERR" and document["stopped"] == "cancelled", document["error"]


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_sigkill_of_assay_leaves_no_process_of_its_run_within_2_s(engine: str, tmp_path: Path, marker: str) -> None:
    fixture, started = slow_fixture(tmp_path)
    process = spawn([str(fixture)], tmp_path, marker, engine)
    try:
        wait_for(started, process)
        daemons = daemon_pids(tmp_path, process)
        running = processes_with(marker)
        assert {process.pid, *daemons.values()} <= set(running), (daemons, described(running), process.poll())
        assert survivors_of_sigkill(process, marker) == [], "processes of the run outlived a SIGKILLed assay by 2 s"
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def test_sigkill_with_a_temporary_prefect_server_takes_the_server_along(tmp_path: Path, marker: str) -> None:
    """With ASSAY_PREFECT_SERVER=temporary the Prefect engine starts a server of its own: a process of the run too."""
    fixture, started = slow_fixture(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO), ASSAY_TEST_MARK=marker, ASSAY_PREFECT_SERVER="temporary")
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(9000):  # the temporary server may need its migrations first (bounded wait)
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.02)
        assert started.exists()
        assert survivors_of_sigkill(process, marker) == []
    finally:
        if process.poll() is None:
            process.kill()


def test_sigkill_leaves_the_local_prefect_server_it_started_running(
    prefect_server: Any, tmp_path: Path, marker: str
) -> None:
    """The local server is started detached, to be reused by later runs: a SIGKILLed run that started
    it takes its samples along, never the server. (Its database is a copy of the session server's,
    so this start skips the migrations.)"""
    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(home / "prefect.db") as copy:
        source.backup(copy)
    fixture, started = slow_fixture(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO), ASSAY_TEST_MARK=marker, PREFECT_HOME=str(home))
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(9000):  # the server starts first (bounded wait)
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.02)
        assert started.exists(), process.communicate(timeout=30)
        local = server.find(home.resolve())
        assert local is not None and local.pid in processes_with(marker), "this run started the server"
        companion = int((home.resolve() / idle_stop.PID_FILE).read_text())  # it stops the server once idle
        watcher = supervisor.supervisor_pid(home.resolve())  # it runs the server, and restarts it
        survivors = survivors_of_sigkill(process, marker)
        kept = (f"{local.pid} ", f"{companion} ", f"{watcher} ")
        assert [line for line in survivors if not line.startswith(kept)] == []
        assert server.find(home.resolve()) == local and server.serves_home(local), "the local server was stopped"
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        server.stop(home.resolve())


def survivors_of_sigkill(process: subprocess.Popen[str] | subprocess.Popen[bytes], marker: str) -> list[str]:
    """SIGKILL assay; what of its run still lives 2 s later (polled: the acceptance bound of issue 14)."""
    process.kill()
    process.wait()
    killed_at = time.monotonic()
    while processes_with(marker) and time.monotonic() - killed_at < 2.0:
        time.sleep(0.02)
    return described(processes_with(marker))


def described(pids: list[int]) -> list[str]:
    """Processes as ``pid (session sid): command line``, for a readable failure."""
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            if (stat := procfs.stat(pid)) is not None:
                found.append(f"{pid} (session {stat.session}): {command.strip()}")
    return found


STARTING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
START_UP_DELAYS_MS = (0, 1, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200, 300, 500, 800)


def start_up_command(entry: str, folder: Path) -> list[str]:
    """``validate`` of an empty folder (what every command imports, then one line of its own) by ``entry``:
    the venv's ``assay`` script when there is one, else its code."""
    script = Path(sys.executable).parent / "assay"
    if entry == "python -m flows.run":
        return [sys.executable, "-m", "flows.run", "validate", str(folder)]
    if script.exists():
        return [str(script), "validate", str(folder)]
    code = "import sys; sys.argv[0] = 'assay'; from flows.cli.launch import cli; cli()"
    return [sys.executable, "-c", code, "validate", str(folder)]


def start(command: list[str], blocked: bool) -> subprocess.Popen[str]:
    """Start ``command`` with SIGINT, SIGTERM and SIGHUP at their default actions (a test runner started in
    the background, or under nohup, ignores some, and an ignored signal is discarded); with ``blocked``,
    blocked as it execs (as ``env --block-signal=INT,TERM,HUP`` would block them, without env's own start
    before it does). The child takes both from this thread; a signal to this process meanwhile waits."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STARTING)
    handlers = {signum: signal.signal(signum, signal.SIG_DFL) for signum in STARTING}
    try:
        if not blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@pytest.mark.parametrize("entry", ["python -m flows.run", "assay"])
def test_an_interrupt_at_any_moment_of_start_up_exits_2_with_one_line(entry: str, tmp_path: Path) -> None:
    """From 0 ms after its exec on, whichever signal: exit 2, one line, no traceback. The signals are
    blocked as it starts: before assay's first module no code of assay's can catch a signal (the
    interpreter starts and runs site; ``bench/start_up_signals.py`` measures how long), so whoever must
    never see another exit code blocks them, and assay's first line unblocks them with its handlers in place."""
    command = start_up_command(entry, tmp_path)
    seen = []
    for number, delay_ms in enumerate(START_UP_DELAYS_MS):
        signum = STARTING[number % len(STARTING)]
        process = start(command, blocked=True)
        time.sleep(delay_ms / 1000)
        ended_by_itself = process.poll() is not None  # a fast machine: the command was done by then
        err = interrupt(process, signum)
        assert process.returncode == 2, (delay_ms, signum.name, process.returncode, err)
        (line,) = error_lines(err)
        interrupted = line.startswith(f"error: interrupted by {signum.name} ")
        assert interrupted or ended_by_itself or line.startswith("error: no fixture files"), (delay_ms, line)
        seen.append(interrupted)
    assert seen[0] and seen[1], "a signal in the first milliseconds is held until assay handles it"


@pytest.mark.parametrize("entry", ["python -m flows.run", "assay"])
@pytest.mark.parametrize("signum", STARTING, ids=[s.name for s in STARTING])
def test_a_signal_once_assays_first_module_runs_exits_2_with_one_line(
    entry: str, signum: signal.Signals, tmp_path: Path
) -> None:
    """Not blocked: from the moment assay's first module holds the signals, through the slow imports."""
    process = start(start_up_command(entry, tmp_path), blocked=False)
    for _ in range(5000):  # until the start-up guard holds SIGTERM (Python alone never catches it)
        with contextlib.suppress(OSError, StopIteration):
            status = Path(f"/proc/{process.pid}/status").read_text()
            caught = int(next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16)
            if caught & (1 << (signal.SIGTERM - 1)):
                break
        time.sleep(0.001)
    err = interrupt(process, signum)
    assert process.returncode == 2, err
    (line,) = error_lines(err)
    assert line.startswith(f"error: interrupted by {signum.name}")


def _status_bit(pid: int, field: str, signum: int) -> bool:
    """Whether ``signum`` is in the ``field`` set (SigBlk, SigCgt) of ``/proc/PID/status``."""
    with contextlib.suppress(OSError, StopIteration):
        status = Path(f"/proc/{pid}/status").read_text()
        return bool(
            int(next(x for x in status.splitlines() if x.startswith(f"{field}:")).split()[1], 16) & (1 << (signum - 1))
        )
    return False


@pytest.mark.parametrize("entry", ["python -m flows.run", "assay"])
@pytest.mark.parametrize("signum", STARTING, ids=[s.name for s in STARTING])
def test_a_signal_env_blocks_at_start_waits_for_assay_and_exits_2_with_one_line(
    entry: str, signum: signal.Signals, tmp_path: Path
) -> None:
    """The README's way to close the interpreter's start-up window: ``env --block-signal=INT,TERM,HUP``. A
    signal sent once env has blocked it (before Python starts, or while it imports) waits for assay."""
    process = start(["env", "--block-signal=INT,TERM,HUP", *start_up_command(entry, tmp_path)], blocked=False)
    for _ in range(5000):  # until env has blocked it (or assay's first module already holds it)
        if _status_bit(process.pid, "SigBlk", signum) or _status_bit(process.pid, "SigCgt", signum):
            break
        time.sleep(0.001)
    err = interrupt(process, signum)
    assert process.returncode == 2, err
    (line,) = error_lines(err)
    assert line.startswith(f"error: interrupted by {signum.name} ") and line.endswith("nothing ran"), line


def test_concurrent_runs_in_one_state_folder_each_keep_their_run(tmp_path: Path, marker: str) -> None:
    fixture = tmp_path / "f.md"
    fixture.write_text(block("echo ok", front="repeat: 3\n"))
    processes = [spawn([str(fixture), "--label", f"run {i}"], tmp_path, marker, "local") for i in range(4)]
    for process in processes:
        _out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert err == ""
    runs = [load_run(folder / "run.json") for folder in (tmp_path / "state" / "runs").iterdir()]
    assert sorted(run.label or "" for run in runs) == [f"run {i}" for i in range(4)]
    assert load_run(tmp_path / "state" / "latest.json").run_id in {run.run_id for run in runs}
    assert main(["history", "--out", str(tmp_path / "state")]) == 0
    assert processes_with(marker) == []


def test_a_signal_just_after_the_verdict_line_still_records_the_run_as_err_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """The report is printed; the signal comes as the command hands back its exit code, past every
    handler of the command: one line, no traceback, exit 2, and run.json says ERR too."""
    from flows.cli import session as cli

    fixture = tmp_path / "f.md"
    fixture.write_text(block("true"))
    signal_self_first(monkeypatch, cli.Exit, "__init__", signal.SIGTERM)
    code = main(["run", str(fixture), "--engine", "local", "--out", str(tmp_path / "state")])
    out, err = capfd.readouterr()
    assert code == 2
    assert "verdict: PASS · exit 0" in out  # the report was printed first
    assert error_lines(err) == ["error: interrupted by SIGTERM while reporting; the run is recorded as ERR"]
    document = only_run(tmp_path / "state")
    assert document["status"] == "ERR"
    assert document["error"] == "interrupted by SIGTERM while the run closed (it was PASS)"


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
@pytest.mark.parametrize("pause_s", [0.0, 0.002, 0.02], ids=["at-once", "2ms", "20ms"])
def test_a_signal_as_the_verdict_line_appears_leaves_exit_code_and_run_json_in_agreement(
    engine: str, pause_s: float, tmp_path: Path, marker: str
) -> None:
    """Whenever it lands (in the report, as the command returns, on the way out): exit 2 with the run
    recorded as ERR, or, once the process has left, exit 0 with PASS; one line, never a traceback."""
    fixture = tmp_path / "f.md"
    fixture.write_text(block("true"))
    process = spawn([str(fixture)], tmp_path, marker, engine)
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("verdict:"):
            break
    time.sleep(pause_s)  # where the signal lands, not a timing assertion
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    status = only_run(tmp_path / "state")["status"]
    assert "Traceback" not in err
    assert (process.returncode, status) in ((2, "ERR"), (0, "PASS")), err
    assert len(error_lines(err)) == (1 if process.returncode == 2 else 0), err


@pytest.mark.parametrize("engine", ENGINES, indirect=True)
def test_sigterm_then_sigint_early_in_a_big_run_exit_2_without_a_traceback(
    engine: str, tmp_path: Path, marker: str
) -> None:
    """Two signals close together while assay starts or plans a 5,000-row matrix (wherever they land):
    exit 2, never death by the signal (rc -2), no traceback, and any run folder has its run.json."""
    fixture = tmp_path / "big.md"
    fixture.write_text("| Name | Command |\n|---|---|\n" + "".join(f"| r{i} | `true` |\n" for i in range(5000)))
    process = spawn([str(fixture)], tmp_path, marker, engine)
    time.sleep(1.0)  # somewhere in start-up or planning; where it lands is not asserted
    process.send_signal(signal.SIGTERM)
    time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    _out, err = process.communicate(timeout=180)
    assert process.returncode == 2, err
    assert "Traceback" not in err
    assert all(line.startswith(("error: ", "assay: ")) for line in error_lines(err)), err
    for folder in (tmp_path / "state" / "runs").glob("*"):
        assert (folder / "run.json").is_file(), "a run folder without its run.json"
    assert processes_with(marker) == []
