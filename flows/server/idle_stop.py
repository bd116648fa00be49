"""Stops a local Prefect server nobody has used for a while (``ASSAY_SERVER_IDLE_MINUTES``, default 120).

Every Prefect home gets its own background server, which otherwise runs
for good (about 250 MB each): a CI job or a test suite with a fresh home
per run would leave one behind every time. When assay starts a home's
server it also starts this small companion (standard library only, about
10 MB), detached like the server. Every ``assay run`` on the server stamps
the home (``assay-last-used``); the companion stops the server once the
stamp is older than the idle time, no flow run is pending or running (one
whose recorded process is gone, killed with its run, does not count), and
the server has no deployments (a home that serves schedules or workers is
infrastructure, never idle). It exits when the server is gone, however it
went. ``ASSAY_SERVER_IDLE_MINUTES=0`` keeps servers up for good.

    python -m flows.server.idle_watch HOME SECONDS   (the companion; started by ``start_companion``)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

from fixtures_core.errors import AssayError
from fixtures_core.execution import procfs
from fixtures_core.execution.containment import HELPER_VARIABLE, helper_mark
from flows.server import owners
from flows.server.credentials import authorization

IDLE_VARIABLE = "ASSAY_SERVER_IDLE_MINUTES"
DEFAULT_IDLE_MINUTES = 120.0
STAMP = "assay-last-used"
PID_FILE = "assay-idle-stop.pid"
_LIVE_STATES = ["PENDING", "RUNNING", "CANCELLING", "PAUSED"]
_PAGE = 200  # live flow runs read at once; a server with more is in use


def idle_seconds(environ: dict[str, str] | None = None) -> float | None:
    """How long a server may sit unused (None: for good), from ``ASSAY_SERVER_IDLE_MINUTES``."""
    value = (environ if environ is not None else dict(os.environ)).get(IDLE_VARIABLE, "").strip()
    if not value:
        return DEFAULT_IDLE_MINUTES * 60
    try:
        minutes = float(value)
    except ValueError:
        raise AssayError(f"{IDLE_VARIABLE}={value!r} is not a number of minutes (0 keeps servers up)") from None
    if not minutes >= 0 or minutes == float("inf"):
        raise AssayError(f"{IDLE_VARIABLE}={value!r} is not a number of minutes (0 keeps servers up)")
    return None if minutes == 0 else minutes * 60


def stamp_used(home: Path) -> None:
    """Record that a run used this home's server now."""
    with contextlib.suppress(OSError):  # a read-only home only loses the idle stop's information
        (home / STAMP).touch()


def start_companion(home: Path, environ: dict[str, str] | None = None) -> int | None:
    """Start the idle stop of this home's server unless one runs or servers stay up; its pid."""
    after = idle_seconds(environ)
    if after is None or companion_pid(home) is not None:
        return None
    stamp_used(home)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.server.idle_watch", str(home), repr(after)],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # like the server: outlives the run, never gets its terminal's Ctrl-C
        env={**os.environ, HELPER_VARIABLE: helper_mark("idle-stop")},
    )
    (home / PID_FILE).write_text(str(process.pid))
    return process.pid


def stop_companion(home: Path) -> None:
    """Stop this home's idle stop (the server is being stopped another way)."""
    pid = companion_pid(home)
    if pid is not None and pid != os.getpid():
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        (home / PID_FILE).unlink(missing_ok=True)


def companion_pid(home: Path) -> int | None:
    """The pid of a live idle stop of this home, if any."""
    try:
        pid = int((home / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    command = procfs.argv(pid) or []
    return pid if procfs.alive(pid) and "flows.server.idle_watch" in command else None


def _post(api_url: str, path: str, body: dict[str, object], auth_string: str | None) -> object:
    """The server's JSON answer; None when it does not answer (busy or going: not known to be idle)."""
    headers = {"Content-Type": "application/json"}
    if auth_string is not None:
        headers["Authorization"] = authorization(auth_string)
    request = urllib.request.Request(f"{api_url}/{path}", data=json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - this home's own server
            return json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def in_use(api_url: str, auth_string: str | None = None) -> bool:
    """True unless the server answers that it has no deployments and no live flow runs (asked with the home's
    API secret, when it has one). A run left Running by a process that is gone (SIGKILLed, its machine
    rebooted: ``flows.server.owners``) is not live."""
    deployments = _post(api_url, "deployments/count", {}, auth_string)
    live = _post(api_url, "flow_runs/filter", {"flow_runs": {"state": {"type": {"any_": _LIVE_STATES}}},
                                               "limit": _PAGE}, auth_string)  # fmt: skip
    if not isinstance(deployments, int) or deployments > 0 or not isinstance(live, list) or len(live) >= _PAGE:
        return True
    host = socket.gethostname()
    return any(not _abandoned(run, host) for run in live)


def _abandoned(run: object, host: str) -> bool:
    """True for a flow run (as the API gives it) whose recorded process ran here and is gone."""
    if not isinstance(run, dict):
        return False
    labels = run.get("labels") if isinstance(run.get("labels"), dict) else None
    owner = owners.owner_of(run.get("infrastructure_pid"), labels)
    return owners.is_gone(owner, _epoch(run.get("start_time") or run.get("expected_start_time")), host)


def _epoch(text: object) -> float | None:
    try:
        return datetime.fromisoformat(text).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None
