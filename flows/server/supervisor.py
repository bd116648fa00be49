"""The supervisor of a home's Prefect server: starts it, keeps its output in a log, restarts it when it dies.

Why not ``prefect server start --background``: that command leaves the server's stdout and stderr on
pipes that nobody reads once it returns. The first line the server then logs (any warning or error: a
database error, a duplicate concurrency-limit name) meets a broken pipe, and the rich console Prefect
logs through answers a broken pipe with ``SystemExit(1)``. That escapes every ``except Exception`` on its
way out of the request: the server shuts down (exit status 1), and requests in flight meanwhile hang or
get 500.

So assay starts the server under this small process (standard library only, about 20 MB):

- the server is Prefect's own command line (``python -m uvicorn ... prefect.server.api.server:create_app``,
  as ``--background`` runs it), its pid in Prefect's PID file, so ``prefect server stop`` still works;
- its output goes straight into ``assay-server.log`` in the home, bounded (``flows.server.rotated_log``):
  a file never breaks like a pipe, even when this process is gone;
- when the server dies, the log says how (exit status or signal) and it is started again, after 1 s,
  doubling up to 60 s while restarts do not answer;
- a server stopped by SIGTERM or SIGINT (as ``prefect server stop``, ``assay server stop`` and ``kill PID``
  stop it: uvicorn shuts down, then ends by that signal) or that exited with status 0, or whose PID file no
  longer names it, was stopped on purpose: not restarted;
- a server that exits before it ever answered as this home's server (its port taken, its database down at
  the first start) is not restarted either: the command that started it reports that, with the log's last
  line. "Answered" is the server on its port reporting this home (``/api/admin/settings``, with the home's
  API secret when it has one), as ``flows.server.local`` proves it: another home's server that won the port
  answers health checks too;
- SIGTERM stops the server (SIGKILL after 20 s), then the supervisor.

    python -m flows.server.supervisor HOME API_URL MAX_LOG_BYTES -- COMMAND...
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from types import FrameType

from flows.server.rotated_log import STARTED_NOTE, RotatedLog

SERVER_PID_FILE = "server.pid"  # Prefect's name for it (prefect.cli._server_utils.SERVER_PID_FILE_NAME)
PID_FILE = "assay-server-supervisor.pid"
LOG_FILE = "assay-server.log"
LOG_MAX_BYTES = 10 * 1024 * 1024
LOG_GENERATIONS = 3
FIRST_PAUSE_S = 1.0
LONGEST_PAUSE_S = 60.0
STOP_GRACE_S = 20.0
STOPPED_ON_PURPOSE = (0, -signal.SIGTERM, -signal.SIGINT)  # a shutdown someone asked for, never a crash
_LOOK_EVERY_S = 1.0  # how often the log's size (and, until it answers, the server's health) is looked at
_MODULE = "flows.server.supervisor"


def log_of(home: Path, max_bytes: int = LOG_MAX_BYTES) -> RotatedLog:
    return RotatedLog(home / LOG_FILE, max_bytes, LOG_GENERATIONS)


def start(home: Path, command: list[str], env: dict[str, str], api_url: str, max_log_bytes: int = LOG_MAX_BYTES) -> int:
    """Start the supervisor of ``command`` (the server of ``home``, at ``api_url``), detached; its pid.

    Its own errors (a traceback, should it ever fail) go to the log as well. The server's API secret, if
    any, is ``env``'s ``PREFECT_SERVER_API_AUTH_STRING``.
    """
    log = log_of(home, max_log_bytes)
    log.note(f"starting the Prefect server: {' '.join(command)}")
    descriptor = log.open_append()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", _MODULE, str(home), api_url, str(max_log_bytes), "--", *command],
            cwd=Path(__file__).resolve().parents[2],  # where ``flows`` is importable from
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=descriptor,
            start_new_session=True,  # outlives the run that started it, never gets its terminal's Ctrl-C
        )
    finally:
        os.close(descriptor)
    _write_atomically(home / PID_FILE, str(process.pid))
    return process.pid


def supervisor_pid(home: Path) -> int | None:
    """The pid of this home's live supervisor, if any."""
    # Here, not at the top: the ``fixtures_core`` package costs the supervisor process seconds and megabytes.
    from fixtures_core.execution import procfs

    try:
        pid = int((home / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    found = procfs.stat(pid)
    argv = procfs.argv(pid) or []
    alive = found is not None and not found.state.startswith(("Z", "X"))
    return pid if alive and _MODULE in argv and str(home) in argv else None


def stop(home: Path) -> int | None:
    """Ask this home's supervisor to stop its server and itself (SIGTERM); its pid, if one ran."""
    pid = supervisor_pid(home)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    return pid


class _Stop:
    """SIGTERM or SIGINT: stop the server, then the supervisor."""

    def __init__(self) -> None:
        self.asked_at: float | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self._signalled: int | None = None
        self._asked = threading.Event()
        signal.signal(signal.SIGTERM, self._handle)
        signal.signal(signal.SIGINT, self._handle)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.asked_at is None:
            self.asked_at = time.monotonic()
        self._asked.set()
        self.terminate_child()

    def terminate_child(self) -> None:
        """SIGTERM to the server once asked to stop (once: it shuts down gracefully on the first)."""
        child = self.child
        if self.asked_at is None or child is None or self._signalled == child.pid or child.poll() is not None:
            return
        self._signalled = child.pid
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signal.SIGTERM)

    @property
    def asked(self) -> bool:
        return self.asked_at is not None

    def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless asked to stop meanwhile; True when asked."""
        return self._asked.wait(seconds)


def supervise(home: Path, api_url: str, command: list[str], log: RotatedLog) -> int:
    """Run the server until asked to stop or it stops on purpose (0), or it never started (1)."""
    stopping = _Stop()
    answered_ever = False
    pause = FIRST_PAUSE_S
    while not stopping.asked:
        try:
            child = _spawn(command, home, log)
        except OSError as exc:
            log.note(f"could not start the Prefect server: {exc}")
            return 1
        stopping.child = child
        _write_atomically(home / SERVER_PID_FILE, str(child.pid))
        log.note(f"{STARTED_NOTE} {child.pid}")
        started = time.monotonic()
        answered = _watch(child, home, api_url, log, stopping)
        answered_ever = answered_ever or answered
        how = describe_exit(child.returncode)
        if stopping.asked:
            log.note(f"stopped the Prefect server (pid {child.pid}): {how}")
            _forget(home, child.pid)
            return 0
        if not _names(home, child.pid):
            outside = f"the Prefect server (pid {child.pid}) was stopped from outside ({how})"
            log.note(f"{outside}: its PID file no longer names it")
            return 0
        if child.returncode in STOPPED_ON_PURPOSE:
            log.note(f"the Prefect server (pid {child.pid}) was stopped on purpose ({how}): not restarted")
            _forget(home, child.pid)
            return 0
        if not answered_ever:
            log.note(f"the Prefect server (pid {child.pid}) exited while starting ({how}): not restarted")
            _forget(home, child.pid)
            return 1
        pause = FIRST_PAUSE_S if answered else min(pause * 2, LONGEST_PAUSE_S)
        ran = time.monotonic() - started
        log.note(f"the Prefect server (pid {child.pid}) died: {how} after {ran:.0f} s; restarting it in {pause:.0f} s")
        stopping.wait(pause)
    log.note("stopped before restarting the Prefect server")
    _forget_any(home)
    return 0


def _spawn(command: list[str], home: Path, log: RotatedLog) -> subprocess.Popen[bytes]:
    descriptor = log.open_append()
    try:
        return subprocess.Popen(command, cwd=home, stdin=subprocess.DEVNULL, stdout=descriptor, stderr=descriptor)
    finally:
        os.close(descriptor)


def _watch(child: subprocess.Popen[bytes], home: Path, api_url: str, log: RotatedLog, stopping: _Stop) -> bool:
    """Wait for the server to exit, keeping the log bounded; True when it answered as ``home``'s meanwhile.
    Asked to stop, it gets SIGTERM (from the signal handler) and SIGKILL after ``STOP_GRACE_S``."""
    answered = False
    started = time.monotonic()
    while True:
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(timeout=_LOOK_EVERY_S)
        if child.returncode is not None:
            return answered
        if not answered and _serves(home, api_url):
            answered = True
            took = time.monotonic() - started
            log.note(f"the Prefect server (pid {child.pid}) answers on {api_url} after {took:.0f} s")
        log.rotate_if_full()
        stopping.terminate_child()  # asked between its start and its being known to the signal handler
        if stopping.asked_at is not None and time.monotonic() - stopping.asked_at > STOP_GRACE_S:
            log.note(f"the Prefect server (pid {child.pid}) did not stop within {STOP_GRACE_S:.0f} s: SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                child.kill()


def _serves(home: Path, api_url: str) -> bool:
    """Whether the server on ``api_url`` answers as ``home``'s (its settings name that home)."""
    parts = urllib.parse.urlsplit(api_url)
    headers = {"Accept": "application/json"}
    secret = os.environ.get("PREFECT_SERVER_API_AUTH_STRING")
    if secret:
        headers["Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port or 80, timeout=5.0)
    try:
        connection.request("GET", f"{parts.path.rstrip('/')}/admin/settings", headers=headers)
        answer = connection.getresponse()
        settings = json.loads(answer.read()) if answer.status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return False
    finally:
        connection.close()
    reported = settings.get("home") if isinstance(settings, dict) else None
    return isinstance(reported, str) and Path(reported).expanduser().resolve() == home.resolve()


def describe_exit(returncode: int | None) -> str:
    """``exit status 1``, ``killed by SIGKILL (signal 9)``."""
    if returncode is None:
        return "still running"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name} (signal {-returncode})"
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _names(home: Path, pid: int) -> bool:
    try:
        return (home / SERVER_PID_FILE).read_text().strip() == str(pid)
    except OSError:
        return False


def _forget(home: Path, pid: int) -> None:
    """Remove the server's PID file when it still names ``pid`` (never a server started another way since)."""
    if _names(home, pid):
        (home / SERVER_PID_FILE).unlink(missing_ok=True)


def _forget_any(home: Path) -> None:
    """Remove the PID file of a server that is gone (stopped while waiting to restart it)."""
    try:
        pid = int((home / SERVER_PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        _forget(home, pid)
    except PermissionError:
        pass  # alive, and another user's: not ours to forget


def _write_atomically(path: Path, text: str) -> None:
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    draft.write_text(text)
    os.replace(draft, path)


def main(argv: list[str]) -> int:
    """``HOME HEALTH_URL MAX_LOG_BYTES -- COMMAND...``; the supervisor's PID file goes with this process."""
    split = argv.index("--")
    home, api_url, max_bytes = Path(argv[0]), argv[1], int(argv[2])
    command = argv[split + 1 :]
    try:
        return supervise(home, api_url, command, log_of(home, max_bytes))
    finally:
        with contextlib.suppress(OSError):
            if (home / PID_FILE).read_text().strip() == str(os.getpid()):
                (home / PID_FILE).unlink()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
