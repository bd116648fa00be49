"""The README's command on a fresh machine that is busy, and the local server's safety.

A brand-new Prefect home means the server's first start runs the database
migrations, which on 2 busy cores take far longer than Prefect's default
20 s start-up wait: the first run must still print the report and exit 1.
These are the few tests that pay for a server start of their own.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import termios
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fixtures_core.execution.daemons import free_port
from flows.server import idle_stop
from flows.server import local as server
from tests.integration.conftest import REPO
from tests.processes import gone_soon, processes_with

F_SETPIPE_SZ = 1031  # Linux fcntl: set a pipe's capacity

HOG = "while True: pass"
# A plain progress line: a run that lasts longer than the progress interval (30 s) prints them, and under
# the CPU hog it may; they are all a quiet run's stderr may hold.
PROGRESS = re.compile(r"assay: \d+/\d+ samples, \d+/\d+ rows done, .*")


def without_progress(stderr: str) -> str:
    return "".join(line for line in stderr.splitlines(keepends=True) if not PROGRESS.fullmatch(line.rstrip("\n")))


class ForeignServer(ThreadingHTTPServer):
    """Someone else's server on a port: healthy, but serving another Prefect home. Counts requests."""

    requests: list[str]


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        body = json.dumps({"home": "/somewhere/else"} if self.path.endswith("/admin/settings") else True).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
        pass


@contextlib.contextmanager
def foreign_server() -> Iterator[ForeignServer]:
    found = ForeignServer(("127.0.0.1", 0), _Handler)
    found.requests = []
    thread = threading.Thread(target=found.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.shutdown()
        found.server_close()


@contextlib.contextmanager
def cpu_hog() -> Iterator[None]:
    """A busy loop on every core the other test workers leave free, for as long as the block runs.

    Each other pytest-xdist worker already keeps a core busy; a hog there too would only slow them.
    """
    others = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) - 1
    count = max(1, (os.cpu_count() or 2) - others)
    hogs = [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def readme_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "ASSAY_PREFECT_PORT")}
    env.update(PYTHONPATH=str(REPO), PREFECT_HOME=str(home), COLUMNS="200", **extra)
    return env


def test_readme_command_on_a_fresh_busy_machine_starts_and_reuses_a_local_server(tmp_path: Path) -> None:
    """First run: a brand-new Prefect home, a CPU hog on every core, and Prefect's port 4200 stand-in
    (ASSAY_PREFECT_PORT) taken by someone else's server. Also a temporary-server run, fresh too."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    home, temporary_home = tmp_path / "fresh-home", tmp_path / "fresh-temporary-home"
    marker = uuid.uuid4().hex
    readme = [sys.executable, "-m", "flows.run", "examples/matrix.md"]  # README's quick start, as typed
    with foreign_server() as taken:
        env = readme_env(home, ASSAY_PREFECT_PORT=str(taken.server_address[1]))
        temporary_env = readme_env(temporary_home, ASSAY_PREFECT_SERVER="temporary", ASSAY_TEST_MARK=marker)
        try:
            with cpu_hog():  # the first runs on the busy machine; the second run only reuses the server
                runs = [
                    subprocess.Popen(
                        readme, cwd=tmp_path, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
                    )
                    for e in (env, temporary_env)
                ]
                (out, err), (temporary_out, temporary_err) = (run.communicate(timeout=600) for run in runs)
            local = server.find(home.resolve())

            assert runs[0].returncode == 1, out + err
            assert "CLI high" in out and out.rstrip().splitlines()[-3].startswith("FAIL")
            assert local is not None and local.port != taken.server_address[1]
            assert err.startswith(f"assay: starting a local Prefect server on 127.0.0.1:{local.port} (home {home})")
            assert "Traceback" not in err and "error" not in without_progress(err)  # progress says "0 errored"
            assert f"Prefect flow run: http://127.0.0.1:{local.port}/runs/flow-run/" in out
            assert taken.requests == [], "assay talked to someone else's server"

            assert runs[1].returncode == 1, temporary_out + temporary_err
            assert "CLI high" in temporary_out and without_progress(temporary_err) == "", temporary_err
            assert "Prefect flow run:" not in temporary_out, "a temporary server's UI is gone after the run"
            assert processes_with(marker) == [], "the temporary server outlived its run"

            # Second run: the same server, no start message.
            again = subprocess.run(readme, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
            assert again.returncode == 1 and without_progress(again.stderr) == "", again.stderr
            assert server.find(home.resolve()) == local
        finally:
            companion = int((home / idle_stop.PID_FILE).read_text())
            stopped = server.stop(home.resolve())
    assert stopped is not None and gone_soon(stopped.pid)
    assert not (home / server.PID_FILE).exists()
    assert gone_soon(companion), "assay server stop stops the server's idle stop too"


@pytest.mark.usefixtures("prefect_server")
def test_server_commands_report_the_session_server_and_prefect_api_url_wins(tmp_path: Path) -> None:
    from tests.integration.conftest import SESSION_HOME, run_cli

    status = run_cli(["server", "status"], cwd=tmp_path)
    assert status.returncode == 0 and status.stdout.startswith("local Prefect server running: pid ")
    assert status.stdout.rstrip().endswith("answering")

    # A configured PREFECT_API_URL wins: the run goes there, nothing starts in this (empty) home.
    found = server.find(SESSION_HOME)
    assert found is not None
    empty_home = tmp_path / "unused-home"
    fixture = tmp_path / "quick.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | `true` |\n")
    done = run_cli(
        [str(fixture), "--out", str(tmp_path / "state")], cwd=tmp_path,
        env={"PREFECT_API_URL": found.api_url, "PREFECT_HOME": str(empty_home)},
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert f"Prefect flow run: {found.ui_url}/runs/flow-run/" in done.stdout
    assert not (empty_home / server.PID_FILE).exists()

    # ... also when the active Prefect profile sets it (as `prefect config set PREFECT_API_URL=...` does).
    profiled_home = tmp_path / "profiled-home"
    profiled_home.mkdir()
    (profiled_home / "profiles.toml").write_text(
        f'active = "team"\n\n[profiles.team]\nPREFECT_API_URL = "{found.api_url}"\n'
    )
    done = run_cli(
        [str(fixture), "--out", str(tmp_path / "state")], cwd=tmp_path, env={"PREFECT_HOME": str(profiled_home)}
    )
    assert done.returncode == 0 and f"Prefect flow run: {found.ui_url}/runs/flow-run/" in done.stdout, done.stderr
    assert not (profiled_home / server.PID_FILE).exists()

    none = run_cli(["server", "status"], cwd=tmp_path, env={"PREFECT_HOME": str(empty_home)})
    assert none.returncode == 1 and none.stdout.startswith("no local Prefect server for ")


def test_an_unreachable_prefect_api_url_is_one_line(tmp_path: Path) -> None:
    from tests.integration.conftest import run_cli

    dead = f"http://127.0.0.1:{free_port()}/api"
    fixture = tmp_path / "quick.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | `true` |\n")
    done = run_cli([str(fixture), "--out", str(tmp_path / "state")], cwd=tmp_path, env={"PREFECT_API_URL": dead})
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: cannot reach the Prefect API at {dead} (PREFECT_API_URL): ")
    assert len(done.stderr.splitlines()) == 1 and "internal error" not in done.stderr


def test_a_postgres_home_never_comes_up_on_sqlite_while_postgres_is_down(tmp_path: Path) -> None:
    """A home set up by deployments/postgres_server.py, restarted by `assay server start` with PostgreSQL down."""
    from deployments.postgres_server import pin_database
    from tests.integration.conftest import run_cli

    home = tmp_path / "team" / "prefect-home"
    closed = free_port()
    pin_database(home, f"postgresql+asyncpg://postgres@127.0.0.1:{closed}/prefect")
    shown = subprocess.run(
        [sys.executable, "-c", "from prefect.settings import get_current_settings as s; "
         "print(s().server.database.connection_url.get_secret_value())"],
        env=dict(os.environ, PREFECT_HOME=str(home)), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert shown.stdout.strip() == f"postgresql+asyncpg://postgres@127.0.0.1:{closed}/prefect", shown.stderr

    done = run_cli(["server", "start"], cwd=tmp_path, env={"PREFECT_HOME": str(home)})
    assert done.returncode == 2
    assert done.stderr == (
        f"error: the Prefect home {home} keeps its database in PostgreSQL at 127.0.0.1:{closed}, which is not "
        f"running: start it first (python deployments/postgres_server.py start --dir {home.parent})\n"
    )
    assert not (home / "prefect.db").exists() and server.find(home) is None


def test_a_stale_pid_file_never_kills_or_reuses_another_process(tmp_path: Path) -> None:
    """The PID file names a live process that is not a Prefect server (the PID was reused)."""
    home = tmp_path / "home"
    home.mkdir()
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        (home / server.PID_FILE).write_text(str(stranger.pid))
        assert server.find(home) is None
        assert server.stop(home) is None
        assert stranger.poll() is None, "stop killed a process that was not its server"
        assert not (home / server.PID_FILE).exists()
    finally:
        stranger.kill()
        stranger.wait()


def test_a_foreign_server_on_the_port_is_not_ours(tmp_path: Path) -> None:
    with foreign_server() as taken:
        pretender = server.LocalServer(os.getpid(), "127.0.0.1", taken.server_address[1], tmp_path.resolve())
        assert not server.serves_home(pretender)
        assert taken.requests == ["/api/admin/settings"]


def test_a_temporary_server_that_starts_too_slowly_is_one_line_and_stopped(tmp_path: Path) -> None:
    """A brand-new home needs migrations: with a 1 s start-up wait, the temporary server misses it."""
    marker = uuid.uuid4().hex
    fixture = tmp_path / "quick.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | `true` |\n")
    env = readme_env(tmp_path / "fresh-home", ASSAY_PREFECT_SERVER="temporary", ASSAY_TEST_MARK=marker,
                     PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS="1")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "flows.run", str(fixture)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith("error: the temporary Prefect server did not start in time")
    assert len(done.stderr.splitlines()) == 1
    assert processes_with(marker) == [], "the temporary server outlived the failed run"


def test_losing_the_server_mid_run_gives_a_report_a_run_document_and_an_exit_code_that_agree(
    prefect_server: object, tmp_path: Path
) -> None:
    """The local server stops while a row runs: assay gives up on it within the row's budget, stops
    the samples, and reports ERR everywhere (the row that finished keeps its PASS)."""
    import sqlite3

    from tests.integration.conftest import SESSION_HOME, WIDE

    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(home / "prefect.db") as copy:
        source.backup(copy)  # a copy of the session server's database: no migrations to wait for
    local = server.ensure_started(home.resolve(), free_port())
    started = tmp_path / "started"
    fixture = tmp_path / "long.md"
    fixture.write_text(
        "---\ntimeout: 900s\n---\n\n| Name | Command |\n|---|---|\n| quick | `true` |\n"
        f"| long | `touch {started}; sleep 600` |\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(home), **WIDE)
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state"), "--parallel", "1"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(3000):  # bounded wait for the long sample to start (not a timing assertion)
            if started.exists() or process.poll() is not None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.02)
        assert started.exists(), process.communicate(timeout=30)
        assert server.stop(home.resolve()) is not None
        stdout, stderr = process.communicate(timeout=120)  # far inside the row's 900 s budget
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        server.stop(home.resolve())
    assert process.returncode == 2, stdout + stderr
    [folder] = list((tmp_path / "state" / "runs").iterdir())
    document = json.loads((folder / "run.json").read_text())
    lost = f"lost the Prefect API at {local.api_url}: it refused every connection for "
    assert document["status"] == "ERR" and document["error"].startswith(lost), document["error"]
    rows = {row["name"]: row for row in document["fixtures"][0]["rows"]}
    assert rows["quick"]["status"] == "PASS"
    assert rows["long"]["status"] == "ERR" and rows["long"]["error"].startswith(lost)
    assert "verdict: ERR · exit 2" in stdout and "ERR long" in stdout, stdout
    assert "Traceback" not in stderr and "Error logging to API" not in stderr and "EventsWorker" not in stderr


def test_losing_the_server_after_the_run_was_recorded_keeps_its_verdict_and_report(
    prefect_server: object, tmp_path: Path
) -> None:
    """The local server stops once every row finished and run.json is written: the report prints, the
    exit code is run.json's verdict, and one warning says that the Prefect record may be incomplete.

    The moment: the step summary is a FIFO, appended to right after run.json is written; with the
    pipe one page long and a summary longer than that, the run waits there until the test reads it
    (the run's checks that it can append open it too, and write nothing)."""
    import sqlite3

    from tests.integration.conftest import SESSION_HOME, WIDE

    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(home / "prefect.db") as copy:
        source.backup(copy)  # a copy of the session server's database: no migrations to wait for
    local = server.ensure_started(home.resolve(), free_port())
    summary = tmp_path / "summary"
    os.mkfifo(summary)
    fixture = tmp_path / "quick.md"
    padding = "and longer " * 20  # 20 rows of 260 characters: a summary longer than the pipe's page
    rows = "".join(f"| a row whose name makes the summary long {padding}number {n} | `true` |\n" for n in range(20))
    fixture.write_text("| Name | Command |\n|---|---|\n" + rows)
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(home), GITHUB_STEP_SUMMARY=str(summary), **WIDE)
    env.pop("PREFECT_API_URL", None)
    # Opened before the run (without waiting for a writer), so that the pipe is one page long before
    # anything is written; the run's checks open and close it without writing.
    reader = os.open(summary, os.O_RDONLY | os.O_NONBLOCK)
    fcntl.fcntl(reader, F_SETPIPE_SZ, 4096)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(6000):  # bounded wait for the summary's first bytes (not a timing assertion)
            if _waiting(reader) or process.poll() is not None:
                break
            time.sleep(0.02)
        assert _waiting(reader) > 0, "the run never appended its summary"
        assert server.stop(home.resolve()) is not None  # the run waits in its summary, run.json written
        fcntl.fcntl(reader, fcntl.F_SETFL, 0)  # blocking again: read to the writer's end
        with os.fdopen(reader, "rb") as appended:
            assert b"verdict: PASS" in appended.read()
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        server.stop(home.resolve())
    [folder] = list((tmp_path / "state" / "runs").iterdir())
    document = json.loads((folder / "run.json").read_text())
    assert document["status"] == "PASS", document.get("error")
    assert process.returncode == 0, stdout + stderr
    assert "verdict: PASS · exit 0" in stdout and "number 19" in stdout, stdout
    lost = f"warning: lost the Prefect API at {local.api_url}"
    assert lost in stderr and "may be incomplete" in stderr, stdout + stderr
    assert "Traceback" not in stderr and "nothing ran" not in stderr


def _waiting(fd: int) -> int:
    """How many bytes a FIFO holds, reading none."""
    waiting = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, waiting)
    return waiting[0]


def test_an_unused_local_server_stops_itself_after_the_idle_time(
    prefect_server: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ASSAY_SERVER_IDLE_MINUTES: the server assay started is stopped by its companion once unused, also when
    its last run was killed and left Running."""
    import sqlite3

    from tests.integration.conftest import SESSION_HOME

    home = (tmp_path / "home").resolve()
    home.mkdir()
    with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(home / "prefect.db") as copy:
        source.backup(copy)
        # Other tests of the session leave deployments (which keep a server up for good) and may run flows.
        copy.execute("DELETE FROM deployment")
        copy.execute("UPDATE flow_run SET state_type = 'COMPLETED' WHERE state_type <> 'COMPLETED'")
    monkeypatch.setenv("ASSAY_SERVER_IDLE_MINUTES", "0.1")  # 6 s
    monkeypatch.delenv("ASSAY_TEST_MARK", raising=False)
    try:
        # A CI job's only run starts the home's server, and is SIGKILLed by the job's timeout: its flow run
        # stays Running, with no process.
        killed = killed_run(tmp_path, home)
        companion = int((home / idle_stop.PID_FILE).read_text())
        for _ in range(1200):  # bounded wait for the companion's stop (not a timing assertion)
            if server.find(home) is None:
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(["sleep", "0.1"], timeout=5)
        assert server.find(home) is None, "the idle server was not stopped"
        assert gone_soon(companion) and not (home / idle_stop.PID_FILE).exists()
    finally:
        server.stop(home)
    with contextlib.closing(sqlite3.connect(home / "prefect.db")) as database:
        [(state,)] = database.execute("SELECT state_type FROM flow_run WHERE id = ?", (killed,)).fetchall()
    assert state == "RUNNING", "the killed run was left Running, and the server stopped all the same"


def killed_run(tmp_path: Path, home: Path) -> str:
    """Start ``assay run`` of a slow fixture on the home's server, SIGKILL it once a sample runs; its flow run id."""
    started = tmp_path / "started"
    fixture = tmp_path / "slow.md"
    fixture.write_text(f"| Name | Command |\n|---|---|\n| slow | `sh -c 'touch {started}; sleep 60'` |\n")
    with open(tmp_path / "stderr", "w+b") as stderr:  # a file: a pipe nobody reads could fill and block the run
        process = subprocess.Popen(
            [sys.executable, "-m", "flows.run", str(fixture), "--out", str(tmp_path / "state")], cwd=tmp_path,
            env=readme_env(home, ASSAY_PREFECT_PORT=str(free_port())), stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    try:
        for _ in range(3000):  # bounded wait for the sample to start (not a timing assertion)
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.02)
        said = (tmp_path / "stderr").read_text(errors="replace")
        assert started.exists(), f"the run never started its sample (exit {process.poll()}): {said}"
        [run_id] = [folder.name for folder in (tmp_path / "state" / "runs").iterdir()]
        local = server.find(home)
        assert local is not None
        found = json.loads(_post(f"{local.api_url}/flow_runs/filter", {"flow_runs": {"name": {"any_": [run_id]}}}))
        assert [run["state_type"] for run in found] == ["RUNNING"]
    finally:
        process.kill()
        process.wait()
    return str(found[0]["id"])


def _post(url: str, body: dict[str, object]) -> bytes:
    import urllib.request

    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - the test's own server
        return bytes(answer.read())


@pytest.mark.parametrize(
    ("value", "seconds"), [("", 7200.0), ("0", None), ("1.5", 90.0)], ids=["default", "never", "minutes"]
)
def test_the_idle_time_is_read_in_minutes(value: str, seconds: float | None) -> None:
    from flows.server.idle_stop import idle_seconds

    assert idle_seconds({"ASSAY_SERVER_IDLE_MINUTES": value}) == seconds


def test_a_bad_idle_time_is_one_line(tmp_path: Path) -> None:
    from tests.integration.conftest import run_cli

    done = run_cli(["server", "start"], cwd=tmp_path,
                   env={"PREFECT_HOME": str(tmp_path / "h"), "ASSAY_SERVER_IDLE_MINUTES": "soon"})  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "error: ASSAY_SERVER_IDLE_MINUTES='soon' is not a number of minutes (0 keeps servers up)\n"


def test_servers_of_two_homes_started_at_the_same_moment_each_get_a_port(
    prefect_server: object, tmp_path: Path
) -> None:
    """Both find the preferred port free (a server binds it only once its database is ready): one loses it, and
    starts again on another port instead of failing."""
    import sqlite3

    from tests.integration.conftest import SESSION_HOME

    homes = [(tmp_path / name).resolve() for name in ("a", "b")]
    for home in homes:
        home.mkdir()
        with sqlite3.connect(SESSION_HOME / "prefect.db") as source, sqlite3.connect(home / "prefect.db") as copy:
            source.backup(copy)  # migrated: each start takes seconds, not a minute
    port = str(free_port())
    env = {k: v for k, v in os.environ.items() if k != "ASSAY_TEST_MARK"}  # the servers outlive the commands
    try:
        with contextlib.ExitStack() as stack:
            starts = [
                stack.enter_context(
                    subprocess.Popen(
                        [sys.executable, "-m", "flows.run", "server", "start"],
                        cwd=tmp_path,
                        text=True,
                        env={**env, "PYTHONPATH": str(REPO), "PREFECT_HOME": str(home), "ASSAY_PREFECT_PORT": port},
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                    )  # fmt: skip
                )
                for home in homes
            ]
            ended = [start.communicate(timeout=300) for start in starts]
        assert [start.returncode for start in starts] == [0, 0], ended
        found = [server.find(home) for home in homes]
        assert all(found) and len({s.port for s in found if s}) == 2, found
        assert port in {str(s.port) for s in found if s}, "one of them has the preferred port"
        assert all(server.serves_home(s) for s in found if s)
    finally:
        for home in homes:
            server.stop(home)
