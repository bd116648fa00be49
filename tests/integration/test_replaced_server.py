"""A Prefect server replaced on the same port in the middle of a run: another one (another Prefect home)
answers at the run's API, and does not know its flow run.

Real servers: the run's own local server (``prefect server start`` of its home) is killed, and a server
of another home binds the same port within moments (``standby_server``: built before, so that it binds
at once). The run must notice that the API it talks to is no longer its flow run's server, and its
report, run.json and exit code must agree, with one line saying so: as when the server is lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from fixtures_core.execution.daemons import free_port
from flows.server import local as server
from tests.integration.conftest import REPO, SESSION_HOME, WIDE
from tests.integration.test_first_run import F_SETPIPE_SZ, _waiting
from tests.polling import wait_until


def copied_home(folder: Path) -> Path:
    """A Prefect home whose database is a copy of the session server's: no migrations to wait for."""
    folder.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(folder / "prefect.db") as copy:
        source.backup(copy)
    return folder.resolve()


@contextlib.contextmanager
def standby(home: Path, port: int) -> Iterator[subprocess.Popen[str]]:
    """``standby_server`` of ``home`` for ``port``, built and waiting; stopped after."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(home), PREFECT_SERVER_LOGGING_LEVEL="WARNING")
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.standby_server", str(port)], env=env, cwd=home,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield process
    finally:
        process.kill()
        process.wait(timeout=30)


def take_over(old_home: Path, new: subprocess.Popen[str], api_url: str) -> None:
    """Kill the run's server; the standby server binds its port the moment it is free, and answers there.
    (Killed, not stopped: a graceful stop keeps the port for the seconds its shutdown takes, and a port
    refused for 10 s is a lost server, which another test covers.)"""
    assert new.stdin is not None
    new.stdin.write("bind\n")
    new.stdin.flush()
    old = server.find(old_home)
    assert old is not None
    os.kill(old.pid, signal.SIGKILL)

    def answers() -> bool:
        with contextlib.suppress(OSError), urllib.request.urlopen(f"{api_url}/health", timeout=2):  # noqa: S310
            return True
        return False

    wait_until(answers, "the standby server answers on the run's port", within_s=120)


def run_env(home: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(home), **WIDE, **extra)
    env.pop("PREFECT_API_URL", None)
    return env


def test_a_server_replaced_while_rows_run_closes_the_run_as_err_in_report_run_json_and_exit_code(
    prefect_server: object, tmp_path: Path
) -> None:
    """While a long row runs: the finished row keeps its PASS, the long one is ERR with the reason, exit 2."""
    port = free_port()
    home, other = copied_home(tmp_path / "home"), copied_home(tmp_path / "other-home")
    local = server.ensure_started(home, port)
    started = tmp_path / "started"
    fixture = tmp_path / "long.md"
    fixture.write_text(
        "---\ntimeout: 900s\n---\n\n| Name | Command |\n|---|---|\n| quick | `true` |\n"
        f"| long | `touch {started}; sleep 600` |\n"
    )
    with standby(other, port) as replacement:
        process = subprocess.Popen(
            [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state"), "--parallel", "1"],
            cwd=tmp_path, env=run_env(home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_until(lambda: started.exists() or process.poll() is not None, "the long sample started", 300)
            assert started.exists(), process.communicate(timeout=30)
            take_over(home, replacement, local.api_url)
            stdout, stderr = process.communicate(timeout=180)  # far inside the row's 900 s budget
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            server.stop(home)
    replaced = f"lost the Prefect API at {local.api_url}: the server answering there does not know this run's flow run "
    assert process.returncode == 2, stdout + stderr
    [folder] = list((tmp_path / "state" / "runs").iterdir())
    document = json.loads((folder / "run.json").read_text())
    assert document["status"] == "ERR" and document["error"].startswith(replaced), document["error"]
    assert document["error"].endswith("(another server took its place)")
    rows = {row["name"]: row for row in document["fixtures"][0]["rows"]}
    assert rows["quick"]["status"] == "PASS"
    assert rows["long"]["status"] == "ERR" and rows["long"]["error"].startswith(replaced)
    assert "verdict: ERR · exit 2" in stdout and "ERR long" in stdout, stdout
    assert "Traceback" not in stderr and "internal error" not in stderr and "ObjectNotFound" not in stderr, stderr


def test_a_server_replaced_after_the_run_was_recorded_keeps_its_verdict_report_and_exit_code(
    prefect_server: object, tmp_path: Path
) -> None:
    """run.json says PASS when the server is replaced (the run waits in its step summary, a FIFO, right
    after writing it): the report prints PASS, the exit code is 0, and one warning says why the Prefect
    record may be incomplete. Never ``internal error: ObjectNotFound``."""
    port = free_port()
    home, other = copied_home(tmp_path / "home"), copied_home(tmp_path / "other-home")
    local = server.ensure_started(home, port)
    summary = tmp_path / "summary"
    os.mkfifo(summary)
    fixture = tmp_path / "quick.md"
    padding = "and longer " * 20  # 20 rows of 260 characters: a summary longer than the pipe's page
    rows = "".join(f"| a row whose name makes the summary long {padding}number {n} | `true` |\n" for n in range(20))
    fixture.write_text("| Name | Command |\n|---|---|\n" + rows)
    reader = os.open(summary, os.O_RDONLY | os.O_NONBLOCK)  # before the run: the pipe is one page long
    fcntl.fcntl(reader, F_SETPIPE_SZ, 4096)
    with standby(other, port) as replacement:
        process = subprocess.Popen(
            [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")],
            cwd=tmp_path, env=run_env(home, GITHUB_STEP_SUMMARY=str(summary)),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_until(lambda: _waiting(reader) or process.poll() is not None, "the summary's first bytes", 300)
            assert _waiting(reader) > 0, "the run never appended its summary"
            take_over(home, replacement, local.api_url)  # the run waits in its summary, run.json written
            fcntl.fcntl(reader, fcntl.F_SETFL, 0)
            with os.fdopen(reader, "rb") as appended:
                appended.read()
            stdout, stderr = process.communicate(timeout=180)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
            server.stop(home)
    [folder] = list((tmp_path / "state" / "runs").iterdir())
    document = json.loads((folder / "run.json").read_text())
    assert document["status"] == "PASS", document.get("error")
    assert process.returncode == 0, stdout + stderr
    assert "verdict: PASS · exit 0" in stdout and "number 19" in stdout, stdout
    warning = (
        f"warning: lost the Prefect API at {local.api_url}: the server answering there does not know this run's "
        "flow run "
    )
    assert warning in stderr and "its verdict stands" in stderr, stderr
    assert len([line for line in stderr.splitlines() if line.startswith("warning: lost")]) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr and "ObjectNotFound" not in stderr, stderr
