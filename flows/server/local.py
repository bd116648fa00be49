"""Which Prefect API a run talks to, and the local server assay starts for ad-hoc runs.

In order:

1. ``PREFECT_API_URL``, when set (in the environment, the active Prefect
   profile, ``prefect.toml`` ...: wherever Prefect reads it), always wins:
   assay checks that it answers and never starts or stops anything.
2. ``ASSAY_PREFECT_SERVER=temporary``: Prefect's own temporary server for
   this run only (8-14 s per run; it keeps little history). Its start-up
   wait is raised to what a first start needs (database migrations).
3. Otherwise (the default): Prefect's server of this Prefect home, started on
   first use and reused by every later run; ``assay server stop`` stops it.
   It runs under assay's supervisor (``flows.server.supervisor``: its output
   in a log in the home, restarted when it dies), as Prefect's own command
   line with its PID file in ``PREFECT_HOME``. It listens on 127.0.0.1, port
   4200 (or ``ASSAY_PREFECT_PORT``) when free, else a free port. A home with
   an API secret (``flows.server.credentials``) gets a server that requires
   it, and assay's clients send it.

A server is only used when it proves to be the one this Prefect home
started: its PID file names a live Prefect server process, and the server
answering on that process's port reports this Prefect home. A port taken by
someone else's server is never talked to by accident.

Starting, finding and stopping the local server needs only the standard
library (``assay server status`` stays fast); only reading Prefect's own
settings imports Prefect.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fixtures_core.errors import AssayError
from fixtures_core.execution import procfs
from fixtures_core.execution.containment import HELPER_VARIABLE, helper_mark
from fixtures_core.execution.daemons import free_port
from flows.server import supervisor
from flows.server.credentials import authorization, read_secret, secret_path
from flows.server.idle_stop import idle_seconds, stamp_used, start_companion, stop_companion
from flows.server.prefect_env import RECORDING

PID_FILE = supervisor.SERVER_PID_FILE  # Prefect's own, so that ``prefect server stop`` stops it too
LOCK_FILE = "assay-server.lock"  # held while a server of the home is found or started
DEFAULT_PORT = 4200  # Prefect's default, where its docs send people's browsers
HOST = "127.0.0.1"
EVERY_INTERFACE = ("0.0.0.0", "::", "")
STARTUP_TIMEOUT_S = 180.0  # a first start runs the migrations: ~25 s idle, 45 s+ busy on 2 cores
STOP_TIMEOUT_S = 20.0
TEMPORARY = "temporary"
LOCAL = "local"  # a Backend's source: this home's own server
MODE_VARIABLE = "ASSAY_PREFECT_SERVER"
PORT_VARIABLE = "ASSAY_PREFECT_PORT"
REFUSED_WAIT_S = 3.0  # nothing listens at a configured URL: say so soon
BUSY_WAIT_S = 30.0  # it answers 503 or times out: a busy or starting server gets longer
RESTART_WAIT_S = supervisor.LONGEST_PAUSE_S + 60.0  # a supervisor between two servers: its pause, then a start
AUTH_VARIABLE = "PREFECT_SERVER_API_AUTH_STRING"

Say = Callable[[str], None]


class ServerError(AssayError):
    """The Prefect API cannot be reached or the local server cannot be started; says what to do."""


def _silent(message: str) -> None:
    """The default ``say``: nothing."""


@dataclass(frozen=True)
class Backend:
    """The Prefect API a run uses: its URL (None: a temporary server) and its UI, when one stays up."""

    api_url: str | None
    ui_url: str | None = None
    source: str = "configured"  # configured (PREFECT_API_URL) | local (this home's server) | temporary
    auth_string: str | None = field(default=None, repr=False)  # this home's API secret, for its own server

    @property
    def temporary(self) -> bool:
        return self.source == TEMPORARY

    def prefect_settings(self) -> dict[str, str]:
        """The Prefect settings a client of this API needs (``temporary_settings(updates=...)``); a configured
        API's credentials are Prefect's own settings already (``PREFECT_API_AUTH_STRING``)."""
        updates = {"api.url": self.api_url} if self.api_url else {}
        return updates | ({"api.auth_string": self.auth_string} if self.auth_string else {})


@dataclass(frozen=True)
class LocalServer:
    """The Prefect server of one Prefect home, as its PID file and process show it."""

    pid: int
    host: str
    port: int
    home: Path

    @property
    def address(self) -> str:
        """Where this machine reaches it: loopback for a server on every interface."""
        reached = {"0.0.0.0": HOST, "": HOST, "::": "::1"}.get(self.host, self.host)
        return f"[{reached}]" if ":" in reached else reached

    @property
    def ui_url(self) -> str:
        return f"http://{self.address}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.ui_url}/api"

    @property
    def public_api_url(self) -> str:
        """Where other machines reach its API: this machine's name when it listens on every interface."""
        shown = socket.getfqdn() if self.host in EVERY_INTERFACE else self.host
        return f"http://{f'[{shown}]' if ':' in shown else shown}:{self.port}/api"


def prefect_home() -> Path:
    """The Prefect home of this process (``PREFECT_HOME``, Prefect's default ``~/.prefect``)."""
    return Path(os.path.expanduser(os.environ.get("PREFECT_HOME") or "~/.prefect")).resolve()


def resolve_backend(say: Say = _silent) -> Backend:
    """The API an ad-hoc run uses (see the module docstring); starts the local server if needed."""
    configured, credentials = configured_api()
    if configured:
        wait_for_api(configured, what="PREFECT_API_URL", auth_string=credentials)
        return Backend(configured.rstrip("/"), configured.rstrip("/").removesuffix("/api"), "configured")
    mode = os.environ.get(MODE_VARIABLE, "").strip().lower()
    if mode == TEMPORARY:
        return Backend(None, None, TEMPORARY)
    if mode not in ("", LOCAL):
        raise ServerError(f"{MODE_VARIABLE}={mode!r}: use 'local' (the default) or '{TEMPORARY}'")
    home = prefect_home()
    server = ensure_started(home, say=say)
    stamp_used(home)  # the idle stop (flows.server.idle_stop) counts from the last run
    return Backend(server.api_url, server.ui_url, LOCAL, read_secret(home))


def configured_api_url() -> str | None:
    """PREFECT_API_URL as Prefect resolves it (environment, active profile, prefect.toml, ...), or None."""
    return configured_api()[0]


def configured_api() -> tuple[str | None, str | None]:
    """PREFECT_API_URL and PREFECT_API_AUTH_STRING as Prefect resolves them (None when unset)."""
    from flows.server.prefect_env import quiet_prefect

    quiet_prefect()  # before Prefect's first import
    from prefect.settings import get_current_settings

    api = get_current_settings().api
    return (str(api.url) if api.url else None), (api.auth_string.get_secret_value() if api.auth_string else None)


def find(home: Path) -> LocalServer | None:
    """This home's server when its PID file names a live Prefect server process."""
    try:
        pid = int((home / PID_FILE).read_text().strip())
    except (OSError, ValueError):
        return None
    address = _server_address(pid)
    return LocalServer(pid, *address, home) if address else None


def _server_address(pid: int) -> tuple[str, int] | None:
    """(host, port) of a live Prefect server process (uvicorn serving Prefect's app), else None."""
    found = _process(pid)
    if found is None:
        return None
    argv, state = found
    if state.startswith(("Z", "X")) or "prefect.server.api.server:create_app" not in argv:
        return None
    try:
        host = argv[argv.index("--host") + 1]
        port = int(argv[argv.index("--port") + 1])
    except (ValueError, IndexError):
        return None
    return host, port


def _process(pid: int) -> tuple[list[str], str] | None:
    """(argv, state letter) of a process: from /proc on Linux, else from ``ps``; None when it is gone."""
    if Path("/proc/self").exists():
        argv = procfs.argv(pid)
        found = procfs.stat(pid)
        return (argv, found.state) if argv is not None and found is not None else None
    shown = subprocess.run(["ps", "-o", "stat=", "-o", "args=", "-p", str(pid)], capture_output=True, text=True)
    fields = shown.stdout.split()
    return (fields[1:], fields[0]) if shown.returncode == 0 and fields else None


def serves_home(server: LocalServer, timeout: float = 2.0) -> bool:
    """True when the server answering on ``server``'s port is healthy and reports ``server.home``
    (asked with the home's API secret, when it has one: a server of another home never gets it)."""
    try:
        settings = _get_json(f"{server.api_url}/admin/settings", timeout, read_secret(server.home))
    except (OSError, ValueError):
        return False
    home = settings.get("home") if isinstance(settings, dict) else None
    return isinstance(home, str) and Path(home).expanduser().resolve() == server.home


class _PortTaken(ServerError):
    """The new server could not have its port: another process took it while it started."""


_START_ATTEMPTS = 4  # a port lost to a server of another home starting at the same moment: try another


def ensure_started(home: Path, port: int | None = None, say: Say = _silent, host: str = HOST) -> LocalServer:
    """This home's server, started (under assay's supervisor) if none runs; ``host`` is where it listens.

    Two starts in one home at the same moment agree on one server (the home's lock). Servers of other homes
    starting at the same moment may all find the same port free (a server binds it only once its database is
    ready): the one that loses it starts again on another, unless ``port`` was given.
    """
    for attempt in range(1, _START_ATTEMPTS + 1):
        try:
            with _home_lock(home):
                server = find(home) or _restarted(home, say)
                if server is None:
                    _remove_stale_pid_file(home)
                    server = _start(home, port, say, host)
            return _wait_ready(server, say)
        except _PortTaken as lost:
            if port is not None or attempt == _START_ATTEMPTS:
                raise ServerError(str(lost)) from None
            say(f"{lost}; starting it on another port")
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _home_lock(home: Path) -> Iterator[None]:
    """Hold the home's start lock (released by the kernel, too, if this process dies)."""
    home.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _restarted(home: Path, say: Say) -> LocalServer | None:
    """The server a live supervisor is restarting (it died a moment ago), once it runs; None without one."""
    watcher = supervisor.supervisor_pid(home)
    if watcher is None:
        return None
    say(f"the local Prefect server of {home} is being restarted by its supervisor (pid {watcher})")
    deadline = time.monotonic() + RESTART_WAIT_S
    while time.monotonic() < deadline:
        server = find(home)
        if server is not None:
            return server
        if supervisor.supervisor_pid(home) is None:
            return None
        time.sleep(0.25)
    raise ServerError(
        f"the local Prefect server of {home} was not restarted within {RESTART_WAIT_S:.0f} s: "
        f"{_log_says(home)}; `assay server stop` and start it again"
    )


def _log_says(home: Path) -> str:
    """The server's last line in its log and where the log is, for a one-line error."""
    log = supervisor.log_of(home)
    last = log.last_output_line()
    said = f"its log says {last[:200]!r}" if last else "its log says nothing"
    return f"{said} ({log.path})"


DATABASE_VARIABLES = ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL")


def _require_pinned_database(home: Path, env: dict[str, str]) -> str | None:
    """The PostgreSQL URL a home's profile pins (``deployments/postgres_server.py``), checked; None when unpinned.

    ServerError when another database would be used: a URL in the environment, or any other source Prefect
    reads (``PREFECT_PROFILE``, ``.env``, ``prefect.toml``, ``pyproject.toml`` in the server's folder); or
    when nothing listens where PostgreSQL should: Prefect would fail, or quietly start on a new SQLite file.
    """
    url = pinned_database(home)
    if url is None or not url.startswith("postgresql"):
        return None
    named = [(name, env[name]) for name in DATABASE_VARIABLES if env.get(name) and env[name] != url]
    resolved = named[0][1] if named else _resolved_database(home, env)
    if resolved is not None and resolved != url:
        source = (
            f"{named[0][0]} in the environment"
            if named
            else f"a setting beside the profile (PREFECT_PROFILE, or .env, prefect.toml or pyproject.toml in {home})"
        )
        raise ServerError(
            f"the Prefect home {home} keeps its database in PostgreSQL ({_masked(url)}, its profiles.toml), but "
            f"{source} names another one ({_masked(resolved)}): remove that setting, or use another PREFECT_HOME"
        )
    address = urllib.parse.urlsplit(url)
    host, port = address.hostname or HOST, address.port or 5432
    with socket.socket() as probe:
        probe.settimeout(2.0)
        if probe.connect_ex((host, port)) == 0:
            return url
    raise ServerError(
        f"the Prefect home {home} keeps its database in PostgreSQL at {host}:{port}, which is not running: "
        f"start it first (python deployments/postgres_server.py start --dir {home.parent})"
    )


_RESOLVE = (
    "from prefect.settings import get_current_settings as s; u = s().server.database.connection_url; "
    "print(u.get_secret_value() if u else '')"
)


def _resolved_database(home: Path, env: dict[str, str]) -> str | None:
    """The database URL Prefect's own settings give a server started here ('' for its default SQLite file);
    None when that cannot be told (the server is then started with the pinned URL all the same)."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _RESOLVE], env=env, cwd=home, stdin=subprocess.DEVNULL, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return None
    return lines[-1].strip() or f"sqlite: {home / 'prefect.db'}"


def _masked(url: str) -> str:
    """A database URL for a message: its password hidden, at most 80 characters."""
    parts = urllib.parse.urlsplit(url)
    if parts.password:
        url = url.replace(f":{parts.password}@", ":***@", 1)
    return url if len(url) <= 80 else url[:20] + "…" + url[-59:]  # the driver, and the host or file


def pinned_database(home: Path) -> str | None:
    """The database URL of the home's active profile (``deployments/postgres_server.py`` writes it), if any."""
    try:
        profiles = tomllib.loads((home / "profiles.toml").read_text())
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return None
    active = profiles.get("profiles", {}).get(profiles.get("active", "default"), {})
    url = active.get("PREFECT_API_DATABASE_CONNECTION_URL") if isinstance(active, dict) else None
    return url if isinstance(url, str) else None


def preferred_port() -> int:
    """The port a new local server tries first: ``ASSAY_PREFECT_PORT``, else Prefect's 4200."""
    value = os.environ.get(PORT_VARIABLE, "").strip()
    if not value:
        return DEFAULT_PORT
    if not value.isdigit() or not 0 < int(value) < 65536:
        raise ServerError(f"{PORT_VARIABLE}={value!r} is not a port number (1-65535)")
    return int(value)


_SPAWN_WAIT_S = 30.0  # from the supervisor's start to its server's PID file: milliseconds, or seconds when busy


def _start(home: Path, port: int | None, say: Say, host: str = HOST) -> LocalServer:
    """Start the home's server under its supervisor; the server once its PID file names it (not yet answering)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", AUTH_VARIABLE)}
    env["PREFECT_HOME"] = str(home)
    pinned = _require_pinned_database(home, env)
    if pinned is not None:  # the profile's URL, above every other source Prefect reads
        env.update(dict.fromkeys(DATABASE_VARIABLES, pinned))
    idle_seconds()  # a bad ASSAY_SERVER_IDLE_MINUTES is one line before anything starts
    secret = read_secret(home)  # a home's secret that others may read is one line before anything starts
    preferred = preferred_port()
    chosen = port or (preferred if port_is_free(preferred, host) else free_port())
    first = not (home / "prefect.db").exists() and pinned is None
    say(
        f"starting a local Prefect server on {host}:{chosen} (home {home})"
        + (": a first start creates its database, a minute or more on a busy machine" if first else "")
    )
    env.update(
        PREFECT_SERVER_API_HOST=host,
        PREFECT_SERVER_API_PORT=str(chosen),  # the UI calls the API on this port (else on 4200)
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        DO_NOT_TRACK="1",
        PREFECT__SERVER_FINAL="1",  # as Prefect's own start sets it for this command line
        # Its warnings and errors go to its log: the console levels a quiet client sets (QUIET) are not the server's.
        PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL="NOTSET",
        PREFECT_LOGGING_HANDLERS_DEBUG_LEVEL="NOTSET",
        **{HELPER_VARIABLE: helper_mark("prefect-server")},  # a run open meanwhile adopts it: never sweep it
    )
    if secret is not None:
        env[AUTH_VARIABLE] = secret
    listening = LocalServer(0, host, chosen, home)
    if host != HOST:  # a browser elsewhere must call the API where it is reached, not on 0.0.0.0
        env.setdefault("PREFECT_UI_API_URL", listening.public_api_url)
    for key, value in RECORDING.items():  # unless the user's environment says otherwise
        env.setdefault(key, value)
    watcher = supervisor.start(home, server_command(host, chosen, env), env, listening.api_url)
    deadline = time.monotonic() + _SPAWN_WAIT_S
    while time.monotonic() < deadline:
        server = find(home)
        if server is not None:
            start_companion(home)
            return server
        if not _lives(watcher):  # not its argv: it may not have exec'd yet, a moment after its start
            break  # it gave up: its server could not even start
        time.sleep(0.02)
    failed = _PortTaken if not port_is_free(chosen, host) else ServerError
    raise failed(f"could not start a local Prefect server on {host}:{chosen}: {_log_says(home)}")


def _lives(pid: int) -> bool:
    """Whether a process runs (a zombie, waiting for its parent to read its status, does not)."""
    found = procfs.stat(pid)
    return found is not None and not found.zombie


def server_command(host: str, port: int, env: dict[str, str]) -> list[str]:
    """Prefect's own command line for its server (what ``prefect server start --background`` runs), with the
    log level its foreground start gives uvicorn. Prefect's package is found, not imported (seconds)."""
    spec = importlib.util.find_spec("prefect")
    if spec is None or spec.origin is None:
        raise ServerError("Prefect is not installed in this Python: pip install prefect")
    return [
        sys.executable, "-m", "uvicorn", "--app-dir", str(Path(spec.origin).parent.parent),
        "--factory", "prefect.server.api.server:create_app", "--host", host, "--port", str(port),
        "--timeout-keep-alive", env.get("PREFECT_SERVER_API_KEEPALIVE_TIMEOUT", "5"), "--workers", "1",
        "--ws-ping-interval", "20.0", "--ws-ping-timeout", "20.0",
        "--log-level", env.get("PREFECT_SERVER_LOGGING_LEVEL", "WARNING").lower(),
    ]  # fmt: skip


def _wait_ready(server: LocalServer, say: Say, timeout: float = STARTUP_TIMEOUT_S) -> LocalServer:
    started = time.monotonic()
    deadline = started + timeout
    said = False
    while time.monotonic() < deadline:
        if serves_home(server):
            return server
        if _server_address(server.pid) is None:
            again = find(server.home)
            if again is not None:  # its supervisor restarted it
                server = again
                continue
            if supervisor.supervisor_pid(server.home) is not None:
                time.sleep(0.25)  # between two servers
                continue
            failed = _PortTaken if not port_is_free(server.port, server.host) else ServerError
            raise failed(
                f"the local Prefect server (pid {server.pid}, port {server.port}) exited while starting: "
                f"{_log_says(server.home)}"
            )
        if not said and time.monotonic() > started + 5:
            say(f"waiting for the local Prefect server on port {server.port} (pid {server.pid}) to answer")
            said = True
        time.sleep(0.25)
    raise ServerError(
        f"the local Prefect server (pid {server.pid}) did not answer on {server.api_url} within {timeout:.0f} s "
        f"(a busy machine?): try again, or `assay server stop` and retry"
    )


def stop(home: Path, timeout: float = STOP_TIMEOUT_S) -> LocalServer | None:
    """Stop this home's server (and its supervisor) and wait until it is gone.

    Its supervisor first (it would start it again), then what ``prefect server stop`` does (SIGTERM to the
    PID file's process, the file removed), done here: that command starts Python and imports Prefect first,
    seconds on a busy machine.
    """
    stop_companion(home)
    watcher = supervisor.stop(home)
    server = find(home)
    if server is not None:
        with contextlib.suppress(ProcessLookupError):  # it may have ended on its own meanwhile
            os.kill(server.pid, signal.SIGTERM)
        (home / PID_FILE).unlink(missing_ok=True)
        _wait_gone(server.pid, lambda: _server_address(server.pid) is not None, timeout)
    if watcher is not None:
        _wait_gone(watcher, lambda: supervisor.supervisor_pid(home) == watcher, timeout)
    _remove_stale_pid_file(home)
    return server


def _wait_gone(pid: int, alive: Callable[[], bool], timeout: float) -> None:
    """Wait until ``alive()`` is False; SIGKILL to ``pid`` each ``timeout`` until then."""
    deadline = time.monotonic() + timeout
    while alive():
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + timeout
        time.sleep(0.1)


def _remove_stale_pid_file(home: Path) -> None:
    """Remove a PID file that names no live Prefect server (else Prefect refuses to start one)."""
    if find(home) is None:
        (home / PID_FILE).unlink(missing_ok=True)


def status(home: Path) -> str:
    """One line: is this home's server running, where, its log, its API authentication, does it answer."""
    server = find(home)
    watcher = supervisor.supervisor_pid(home)
    log = supervisor.log_of(home).path
    if server is None:
        restarting = f"; its supervisor (pid {watcher}) is restarting it, see {log}" if watcher else ""
        return f"no local Prefect server for {home} (`assay server start` starts one){restarting}"
    logged = (
        f"log {log} (supervisor pid {watcher})"
        if watcher is not None
        else "no log (started without assay's supervisor: `assay server stop`, then start it again)"
    )
    answering = serves_home(server)
    answer = "answering" if answering else "not answering (starting, or busy)"
    return (
        f"local Prefect server running: pid {server.pid}, {server.api_url}, UI {server.ui_url}, {logged}, "
        f"{_authentication(server, answering)}, {answer}"
    )


def _authentication(server: LocalServer, answering: bool) -> str:
    """Whether the server requires the home's API secret, as it answers a request without it."""
    path = secret_path(server.home)
    if read_secret(server.home) is None:
        return "API authentication off"
    if answering and _refuses_strangers(server.api_url) is False:
        return f"API authentication OFF although {path} holds a secret (`assay server stop`, then start it again)"
    return f"API authentication on (the secret: {path})"


def _refuses_strangers(api_url: str) -> bool | None:
    """Whether the API answers 401 to a request without credentials (None: it did not answer)."""
    try:
        _get_json(f"{api_url}/admin/version", timeout=5.0)
    except urllib.error.HTTPError as exc:
        return exc.code == 401
    except (OSError, ValueError):
        return None
    return False


def wait_for_api(url: str, what: str, auth_string: str | None = None) -> None:
    """Wait (bounded) until a configured Prefect API answers its health check and takes the credentials
    (``auth_string``: PREFECT_API_AUTH_STRING); ServerError if it never does.

    A refused connection (nothing listens there) is retried for a few seconds;
    a server that answers 503 or times out (busy, or still starting) gets
    longer. The error says what to do.
    """
    started = time.monotonic()
    while True:
        try:
            _get_json(f"{url.rstrip('/')}/health", timeout=5.0)
            _require_credentials(url, what, auth_string)
            return
        except ServerError:
            raise
        except (OSError, ValueError) as exc:
            refused = isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, ConnectionRefusedError)
            if time.monotonic() - started >= (REFUSED_WAIT_S if refused else BUSY_WAIT_S):
                reason = _reason(exc)
                raise ServerError(
                    f"cannot reach the Prefect API at {url} ({what}): {reason}; start that server, or unset "
                    "PREFECT_API_URL (`prefect config unset PREFECT_API_URL` if a profile sets it) "
                    "to use the local server"
                ) from None
            time.sleep(0.5)


def _require_credentials(url: str, what: str, auth_string: str | None) -> None:
    """ServerError when the API answers 401 (Prefect's API authentication) to the credentials given."""
    try:
        _get_json(f"{url.rstrip('/')}/admin/version", 10.0, auth_string)
    except urllib.error.HTTPError as exc:
        if exc.code != 401:
            return  # not Prefect's server authentication (a cloud API has no such endpoint): its own errors later
        if auth_string is None:
            raise ServerError(
                f"the Prefect API at {url} ({what}) requires credentials (HTTP 401): set PREFECT_API_AUTH_STRING "
                "to its secret (`python deployments/postgres_server.py start` prints how)"
            ) from None
        raise ServerError(
            f"the Prefect API at {url} ({what}) refused the credentials in PREFECT_API_AUTH_STRING (HTTP 401): "
            "set it to that server's secret"
        ) from None
    except (OSError, ValueError):
        return  # it answered its health check a moment ago: a slow answer here is not a credentials problem


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return str(exc) or type(exc).__name__


def _get_json(url: str, timeout: float, auth_string: str | None = None) -> object:
    headers = {"Accept": "application/json"}
    if auth_string is not None:
        headers["Authorization"] = authorization(auth_string)
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 - a loopback or configured URL
        return json.loads(response.read() or b"null")


def port_is_free(port: int, host: str = HOST) -> bool:
    """True when nothing listens on ``host:port`` (binding it succeeds)."""
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def url_answers(url: str, timeout: float = 1.0) -> bool:
    """True when ``url`` answers HTTP 2xx/3xx (a UI worth linking to)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout):  # noqa: S310 - the run's own Prefect UI
            return True
    except (OSError, ValueError):
        return False
