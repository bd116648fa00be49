"""A Prefect server on PostgreSQL, for a team (SQLite answers 503 under concurrent writes).

    python deployments/postgres_server.py start --dir /srv/assay-prefect   # prints PREFECT_API_URL=...
    python deployments/postgres_server.py status --dir /srv/assay-prefect
    python deployments/postgres_server.py stop --dir /srv/assay-prefect

``start`` creates a PostgreSQL cluster in ``DIR/pgdata`` (Debian's
``postgresql`` package: ``apt-get install postgresql``) listening on
127.0.0.1 only, with a ``prefect`` database, then starts Prefect's server on
it, under assay's supervisor (``flows.server.supervisor``: its output in
``DIR/prefect-home/assay-server.log``, restarted when it dies), its home in
``DIR/prefect-home``. Both are reused when already running.

Safe by default: the server listens on 127.0.0.1 unless ``--host`` says
otherwise, and requires Prefect's API authentication. Its secret is made at
the first start (``DIR/prefect-home/assay-api-auth``, mode 0600); every
client needs it as ``PREFECT_API_AUTH_STRING`` (``start`` prints how a worker
on another machine gets it), and the UI asks for it as its password.

The database URL and the secret are pinned in that home's ``profiles.toml``
(mode 0600): a server of that home restarted another way uses PostgreSQL and
requires the secret too, and ``assay server start`` refuses to start it
while PostgreSQL is down (never SQLite). PostgreSQL refuses to run as root:
as root, the cluster runs as the ``postgres`` user (and ``DIR`` is handed to
it). Database connections are trusted on loopback. The API speaks plain
HTTP: put TLS in front of it before workers reach it across a network.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

DATABASE = "prefect"


class PostgresError(Exception):
    """PostgreSQL cannot be found, set up or started; the message says what to do."""


@dataclass(frozen=True)
class Cluster:
    """A PostgreSQL cluster in ``DIR/pgdata`` and how to reach it."""

    root: Path
    port: int

    @property
    def data(self) -> Path:
        return self.root / "pgdata"

    @property
    def url(self) -> str:
        """The database URL Prefect's server takes (``PREFECT_API_DATABASE_CONNECTION_URL``)."""
        return f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/{DATABASE}"


def postgres_bin(name: str) -> str:
    """A PostgreSQL program: on PATH, or where Debian's package puts it (/usr/lib/postgresql/N/bin)."""
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        raise PostgresError(f"{name} not found: install PostgreSQL (apt-get install postgresql)")
    return found


def _as_owner(argv: list[str]) -> list[str]:
    """Run as the postgres user when we are root (PostgreSQL refuses root)."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise PostgresError(f"{what} failed: {' '.join((done.stderr or done.stdout).split())[-400:]}")
    return done.stdout


def start_cluster(root: Path, port: int) -> Cluster:
    """Create (first time) and start the cluster in ``root/pgdata`` on 127.0.0.1:``port``; wait for it."""
    cluster = Cluster(root.resolve(), port)
    root.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(cluster.root, "postgres", "postgres")
    if not (cluster.data / "PG_VERSION").exists():
        _run(
            _as_owner(
                [
                    postgres_bin("initdb"),
                    "-D",
                    str(cluster.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=UTF8",
                    "--no-instructions",
                ]
            ),  # fmt: skip
            "initdb",
        )
    if not is_running(cluster):
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories=''"
        _run(
            _as_owner(
                [
                    postgres_bin("pg_ctl"),
                    "-D",
                    str(cluster.data),
                    "-l",
                    str(cluster.data / "server.log"),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    "120",
                    "start",
                ]
            ),  # fmt: skip
            f"starting PostgreSQL on port {port} (see {cluster.data / 'server.log'})",
        )
    _wait_ready(cluster)
    databases = _run([postgres_bin("psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "-Atc",
                      "SELECT datname FROM pg_database"], "listing databases")  # fmt: skip
    if DATABASE not in databases.split():
        _run([postgres_bin("createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", DATABASE], "createdb")
    return cluster


def _wait_ready(cluster: Cluster, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    ready = [postgres_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(cluster.port)]
    while subprocess.run(ready, capture_output=True, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise PostgresError(f"PostgreSQL did not accept connections on port {cluster.port} within {timeout:.0f} s")
        time.sleep(0.2)


def is_running(cluster: Cluster) -> bool:
    """True when the cluster's postmaster runs (``pg_ctl status``)."""
    if not (cluster.data / "PG_VERSION").exists():
        return False
    status = subprocess.run(_as_owner([postgres_bin("pg_ctl"), "-D", str(cluster.data), "status"]),
                            capture_output=True, check=False)  # fmt: skip
    return status.returncode == 0


def stop_cluster(root: Path) -> None:
    """Stop the cluster in ``root/pgdata`` (fast shutdown) and wait for it."""
    data = root.resolve() / "pgdata"
    if (data / "postmaster.pid").exists():
        _run(_as_owner([postgres_bin("pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]), "stopping PostgreSQL")


def _port_of(root: Path) -> int | None:
    """The port a running cluster listens on (line 4 of postmaster.pid)."""
    try:
        return int((root.resolve() / "pgdata" / "postmaster.pid").read_text().splitlines()[3])
    except (OSError, ValueError, IndexError):
        return None


LOOPBACK = "127.0.0.1"
LOOPBACKS = (LOOPBACK, "localhost", "::1")


def start(root: Path, pg_port: int | None = None, port: int | None = None, host: str = LOOPBACK) -> str:
    """PostgreSQL and Prefect's server on it (API authentication on), both started if needed; the API URL
    a client on another machine uses (this machine's name when it listens on every interface)."""
    from fixtures_core.execution.daemons import free_port
    from flows.server.credentials import create_secret
    from flows.server.local import ServerError, ensure_started, find

    home = root.resolve() / "prefect-home"
    running = find(home)
    if running is not None and running.host != host:
        raise ServerError(
            f"the server of {home} already listens on {running.host}:{running.port}: "
            f"`python deployments/postgres_server.py stop --dir {root}` first, to have it listen on {host}"
        )
    cluster = start_cluster(root, pg_port or _port_of(root) or free_port())
    secret = create_secret(home)  # made at the first start, kept after
    pin_database(home, cluster.url, secret)
    os.environ["PREFECT_API_DATABASE_CONNECTION_URL"] = cluster.url
    server = ensure_started(home, port, say=_say, host=host)
    for line in credentials_help(home, server.host, server.port):
        _say(line)
    return server.public_api_url


def credentials_help(home: Path, host: str, port: int) -> list[str]:
    """How a client, on this machine or another, gets the API's address and its secret."""
    from flows.server.credentials import SECRET_FILE
    from flows.server.local import EVERY_INTERFACE

    secret = home / SECRET_FILE
    machine = socket.getfqdn()
    reached = machine if host in EVERY_INTERFACE else host
    lines = [
        f"Prefect's API authentication is on: every client needs PREFECT_API_AUTH_STRING set to the secret in "
        f"{secret} (owner-only); the UI asks for it as its password",
        f'a client on this machine: export PREFECT_API_AUTH_STRING="$(cat {secret})"',
    ]
    if host in LOOPBACKS:
        lines.append(
            f"it listens on {host} only: for workers on other machines, stop it and start it again with "
            "--host 0.0.0.0 (or this machine's address), behind TLS: the API speaks plain HTTP"
        )
        reached = machine
    lines += [
        "a worker on another machine (copy the secret over a channel you trust, never in a command line or a log):",
        f"  export PREFECT_API_URL=http://{reached}:{port}/api",
        f'  export PREFECT_API_AUTH_STRING="$(ssh {machine} cat {secret})"',
    ]
    return lines


def pin_database(home: Path, url: str, auth_string: str | None = None) -> None:
    """Write the database URL (and the API secret) into the Prefect home's profile, so that its server uses
    PostgreSQL and requires the secret however it is restarted (``prefect server start``, ``assay server
    start``), never a new SQLite file. The file is its owner's only: it may hold the secret."""
    home.mkdir(parents=True, exist_ok=True)
    profile = (
        "# Written by deployments/postgres_server.py: this home's server keeps its database in PostgreSQL.\n"
        'active = "postgres"\n\n[profiles.postgres]\n'
        f"PREFECT_API_DATABASE_CONNECTION_URL = {json.dumps(url)}\n"
    )
    if auth_string is not None:
        profile += f"PREFECT_SERVER_API_AUTH_STRING = {json.dumps(auth_string)}\n"
    temporary = home / "profiles.toml.tmp"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as written:
        os.fchmod(written.fileno(), 0o600)
        written.write(profile)
    temporary.replace(home / "profiles.toml")


def _say(message: str) -> None:
    print(f"postgres_server: {message}", file=sys.stderr)


def stop(root: Path) -> None:
    """Stop Prefect's server, then PostgreSQL."""
    from flows.server.local import stop as stop_server

    stop_server(root.resolve() / "prefect-home")
    stop_cluster(root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A Prefect server on PostgreSQL.")
    parser.add_argument("command", choices=("start", "stop", "status"))
    parser.add_argument("--dir", required=True, type=Path, help="folder of the cluster and the Prefect home")
    parser.add_argument("--pg-port", type=int, help="PostgreSQL port (default: a free one)")
    parser.add_argument("--port", type=int, help="Prefect server port (default: 4200 when free, else a free one)")
    parser.add_argument(
        "--host", default=LOOPBACK, help="address the Prefect server listens on (default: 127.0.0.1, this machine only)"
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from fixtures_core.errors import AssayError
    from flows.server.local import status

    try:
        if args.command == "start":
            print(f"PREFECT_API_URL={start(args.dir, args.pg_port, args.port, args.host)}")
        elif args.command == "stop":
            stop(args.dir)
        else:
            port = _port_of(args.dir)
            print(f"PostgreSQL: {'running on 127.0.0.1:' + str(port) if port else 'not running'}")
            print(status(args.dir.resolve() / "prefect-home"))
    except (PostgresError, AssayError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
