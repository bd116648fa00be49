"""The supervisor with a stand-in server: a small HTTP server that answers like Prefect's (its settings name its home).

Real processes, real signals and a real log on disk; seconds, not the minute a Prefect server costs
(tests/integration/test_server_supervisor.py does the same to Prefect's own server).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.execution.daemons import free_port
from flows.server import supervisor
from flows.server.rotated_log import RotatedLog
from tests.polling import wait_until
from tests.processes import gone_soon, is_gone

STAND_IN = r"""
import http.server, json, os, sys, threading, time
port, chatty = int(sys.argv[1]), sys.argv[2] == "chatty"
if os.path.exists("fail-to-start"):
    sys.exit("cannot start: told so")
if sys.argv[2] == "slow":
    time.sleep(3)  # as Prefect's app starts up (seconds) before uvicorn binds its port

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        answers = {"/api/health": True, "/api/admin/settings": {"home": os.getcwd()}}  # started in its home
        self.send_response(200 if self.path in answers else 404)
        self.end_headers()
        if self.path in answers:
            self.wfile.write(json.dumps(answers[self.path]).encode())

    def log_message(self, *args):
        pass

def chatter():
    for number in range(10**9):
        print(f"line {number:08d} " + "x" * 80, flush=True)
        time.sleep(0.02)

print(f"stand-in server {os.getpid()} on port {port}", flush=True)
if chatty:
    threading.Thread(target=chatter, daemon=True).start()
http.server.HTTPServer(("127.0.0.1", port), Health).serve_forever()
"""
NEVER_STARTS = "import sys; print('cannot bind: address already in use', flush=True); sys.exit(1)"


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A home whose supervisor and server are stopped after the test, whatever it left."""
    folder = tmp_path / "home"
    folder.mkdir()
    yield folder
    watcher = supervisor.supervisor_pid(folder)
    server = server_pid(folder)
    for pid in (watcher, server):
        if pid is not None:
            os.kill(pid, signal.SIGKILL)


def start(home: Path, code: str, *args: str, max_log_bytes: int = supervisor.LOG_MAX_BYTES) -> tuple[int, int]:
    """Supervise the stand-in on a free port; (supervisor pid, port)."""
    port = free_port()
    command = [sys.executable, "-c", code, str(port), *args]
    return supervisor.start(home, command, dict(os.environ), f"http://127.0.0.1:{port}/api", max_log_bytes), port


def server_pid(home: Path) -> int | None:
    """The live process the PID file names, if any."""
    try:
        pid = int((home / supervisor.SERVER_PID_FILE).read_text())
    except (OSError, ValueError):
        return None
    return pid if procfs.alive(pid) else None


def log_text(home: Path) -> str:
    return (home / supervisor.LOG_FILE).read_text()


def answered(home: Path, pid: int) -> bool:
    return f"the Prefect server (pid {pid}) answers on http://127.0.0.1:" in log_text(home)


def test_a_killed_server_is_restarted_and_the_log_says_how_it_died(home: Path) -> None:
    watcher, port = start(home, STAND_IN, "quiet")
    wait_until(lambda: server_pid(home) is not None, "the server's PID file")
    first = server_pid(home)
    assert first is not None
    wait_until(lambda: answered(home, first), "the first server answers")

    os.kill(first, signal.SIGKILL)
    wait_until(lambda: server_pid(home) not in (None, first), "a restarted server")
    second = server_pid(home)
    assert second is not None
    wait_until(lambda: answered(home, second), "the restarted server answers")
    said = log_text(home)
    assert f"the Prefect server (pid {first}) died: killed by SIGKILL (signal 9) after " in said
    assert "; restarting it in 1 s" in said
    assert f"stand-in server {first} on port {port}" in said and f"stand-in server {second} on port {port}" in said

    assert supervisor.stop(home) == watcher
    assert gone_soon(second) and gone_soon(watcher)
    assert f"stopped the Prefect server (pid {second}): " in log_text(home)
    assert not (home / supervisor.SERVER_PID_FILE).exists() and not (home / supervisor.PID_FILE).exists()


def test_restarts_that_do_not_come_back_wait_longer_each_time(home: Path) -> None:
    """1 s after a server that had answered; then doubling while the restarts die before answering."""
    start(home, STAND_IN, "quiet")
    wait_until(lambda: server_pid(home) is not None, "the server's PID file")
    first = server_pid(home)
    assert first is not None
    wait_until(lambda: answered(home, first), "the server answers")
    (home / "fail-to-start").touch()  # the next starts exit at once
    os.kill(first, signal.SIGKILL)
    wait_until(lambda: "restarting it in 4 s" in log_text(home), "three restarts", within_s=60)
    (home / "fail-to-start").unlink()
    wait_until(lambda: server_pid(home) not in (None, first) and answered(home, server_pid(home) or 0),
               "a restart that answers", within_s=60)  # fmt: skip
    pauses = [
        line.rsplit("restarting it in ", 1)[1] for line in log_text(home).splitlines() if "restarting it in" in line
    ]
    assert pauses[:3] == ["1 s", "2 s", "4 s"], pauses
    assert "cannot start: told so" in log_text(home)


def test_a_server_stopped_on_purpose_is_not_restarted(home: Path) -> None:
    """SIGTERM to the server itself (``kill PID``; ``prefect server stop`` also removes the PID file)."""
    watcher, _ = start(home, STAND_IN, "quiet")
    wait_until(lambda: server_pid(home) is not None, "the server's PID file")
    first = server_pid(home)
    assert first is not None
    wait_until(lambda: answered(home, first), "the server answers")
    os.kill(first, signal.SIGTERM)
    assert gone_soon(first)
    wait_until(lambda: is_gone(watcher), "the supervisor exits")  # its pid: it is None before it exec'd too
    assert f"the Prefect server (pid {first}) was stopped on purpose (killed by SIGTERM (signal 15))" in log_text(home)
    assert server_pid(home) is None and not (home / supervisor.SERVER_PID_FILE).exists()
    assert gone_soon(watcher)


def test_a_server_that_never_answered_is_not_restarted_and_its_last_words_are_kept(home: Path) -> None:
    watcher, _ = start(home, NEVER_STARTS)
    wait_until(lambda: is_gone(watcher), "the supervisor gives up")
    said = log_text(home)
    assert "exited while starting (exit status 1): not restarted" in said
    assert said.count("the Prefect server runs: pid") == 1
    assert supervisor.log_of(home).last_output_line() == "cannot bind: address already in use"
    assert not (home / supervisor.SERVER_PID_FILE).exists()
    assert gone_soon(watcher)


def test_another_homes_server_answering_on_the_port_is_not_taken_for_this_one(home: Path, tmp_path: Path) -> None:
    """Two homes' servers started on one port: the loser cannot bind it, and the winner answers health checks
    there; the loser's supervisor must see that its own server never answered, and give up (its starter then
    tries another port)."""
    port = free_port()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    winner = subprocess.Popen([sys.executable, "-c", STAND_IN, str(port), "quiet"], cwd=elsewhere,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert winner.stdout is not None and winner.stdout.readline().startswith("stand-in server")
        command = [sys.executable, "-c", STAND_IN, str(port), "slow"]
        loser = supervisor.start(home, command, dict(os.environ), f"http://127.0.0.1:{port}/api")
        wait_until(lambda: is_gone(loser), "the supervisor gives up")
    finally:
        winner.kill()
        winner.wait()
    said = log_text(home)
    assert said.count("the Prefect server runs: pid") == 1 and "exited while starting (exit status 1)" in said
    assert "Address already in use" in said and " answers on " not in said


def test_the_server_outlives_a_killed_supervisor_and_its_output_still_reaches_the_log(home: Path) -> None:
    """The output goes to a file, not a pipe the supervisor reads: nothing breaks when it is gone."""
    watcher, _ = start(home, STAND_IN, "chatty")
    wait_until(lambda: server_pid(home) is not None, "the server's PID file")
    server = server_pid(home)
    assert server is not None
    os.kill(watcher, signal.SIGKILL)
    assert gone_soon(watcher)
    size = (home / supervisor.LOG_FILE).stat().st_size
    wait_until(lambda: (home / supervisor.LOG_FILE).stat().st_size > size + 1000, "more output in the log")
    assert procfs.alive(server)


def test_the_log_is_bounded_to_a_few_generations(home: Path) -> None:
    """A chatty server (about 5 KB a second) and a 4 KB log: copied to .1, .2, .3, never a fourth."""
    start(home, STAND_IN, "chatty", max_log_bytes=4096)
    log = supervisor.log_of(home, 4096)
    wait_until(lambda: log.generation(3).exists(), "three older generations", within_s=120)
    wait_until(lambda: log.path.read_text().count("its earlier lines are in") >= 1, "a rotation after the third")
    assert not log.generation(4).exists()
    numbers = [int(line.split()[1]) for path in (log.generation(1), log.path) for line in path.read_text().splitlines()
               if line.startswith("line ")]  # fmt: skip
    assert numbers == sorted(numbers), "the generations hold the output in order"


def test_rotation_moves_each_generation_down_and_drops_the_oldest(tmp_path: Path) -> None:
    log = RotatedLog(tmp_path / "server.log", max_bytes=200, generations=2)
    texts = [f"{name} {'x' * 250}\n" for name in ("first", "second", "third")]
    for text in texts:
        log.path.write_text(text)
        assert log.rotate_if_full()
    assert log.generation(1).read_text() == texts[2]
    assert log.generation(2).read_text() == texts[1]
    assert not log.generation(3).exists()
    assert "its earlier lines are in server.log.1" in log.path.read_text()
    assert not log.rotate_if_full(), "a note alone is under the size"
    assert os.stat(log.generation(1)).st_mode & 0o777 == 0o600


def test_how_a_server_ended_is_said_in_words() -> None:
    assert supervisor.describe_exit(1) == "exit status 1"
    assert supervisor.describe_exit(-9) == "killed by SIGKILL (signal 9)"
    assert supervisor.describe_exit(subprocess.Popen(["true"]).wait()) == "exit status 0"
