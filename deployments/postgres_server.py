"""A Prefect server on PostgreSQL, for a team (SQLite answers 503 under concurrent writes).

    python deployments/postgres_server.py start --dir /srv/assay-prefect   # prints PREFECT_API_URL=...
    python deployments/postgres_server.py status --dir /srv/assay-prefect
    python deployments/postgres_server.py stop --dir /srv/assay-prefect

``start`` creates a PostgreSQL cluster in ``DIR/pgdata`` (Debian's
``postgresql`` package: ``apt-get install postgresql``) listening on
127.0.0.1 only, with a ``prefect`` database, then starts Prefect's background
server (``prefect server start --background``, its home in
``DIR/prefect-home``) on that database. Both are reused when already running.
The database URL is pinned in that home's ``profiles.toml``: a server of
that home restarted another way uses PostgreSQL too, and ``assay server
start`` refuses to start it while PostgreSQL is down (never SQLite).
PostgreSQL refuses to run as root: as root, the cluster runs as the
``postgres`` user (and ``DIR`` is handed to it). Connections are trusted on
loopback; put a password and TLS in front of it before exposing the server.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
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


def start(root: Path, pg_port: int | None = None, port: int | None = None) -> str:
    """PostgreSQL and Prefect's server on it, both started if needed; the API URL."""
    from fixtures_core.execution.daemons import free_port
    from flows.server.local import ensure_started

    cluster = start_cluster(root, pg_port or _port_of(root) or free_port())
    home = root.resolve() / "prefect-home"
    pin_database(home, cluster.url)
    os.environ["PREFECT_API_DATABASE_CONNECTION_URL"] = cluster.url
    server = ensure_started(home, port, say=_say)
    return server.api_url


def pin_database(home: Path, url: str) -> None:
    """Write the database URL into the Prefect home's profile, so that its server uses PostgreSQL
    however it is restarted (``prefect server start``, ``assay server start``), never a new SQLite file."""
    home.mkdir(parents=True, exist_ok=True)
    profile = (
        "# Written by deployments/postgres_server.py: this home's server keeps its database in PostgreSQL.\n"
        'active = "postgres"\n\n[profiles.postgres]\n'
        f"PREFECT_API_DATABASE_CONNECTION_URL = {json.dumps(url)}\n"
    )
    temporary = home / "profiles.toml.tmp"
    temporary.write_text(profile)
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
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from flows.server.local import ServerError, status

    try:
        if args.command == "start":
            print(f"PREFECT_API_URL={start(args.dir, args.pg_port, args.port)}")
        elif args.command == "stop":
            stop(args.dir)
        else:
            port = _port_of(args.dir)
            print(f"PostgreSQL: {'running on 127.0.0.1:' + str(port) if port else 'not running'}")
            print(status(args.dir.resolve() / "prefect-home"))
    except (PostgresError, ServerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
