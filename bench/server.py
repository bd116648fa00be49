"""The local Prefect server's start-up, restart and API authentication costs, as assay starts it now.

    python bench/server.py [--rounds 3] [--requests 200] [--out bench/results/server.json]

Once: a brand-new Prefect home gets its database (``assay server start``), and is stopped; every server
below starts on a copy of that database (no migrations). Then ``--rounds`` rounds, interleaved:

  background   Prefect's ``prefect server start --background`` (how assay started it before issue 42)
  uvicorn      Prefect's own server command line (what ``--background`` runs), as assay's supervisor runs it
  foreground   a foreground ``prefect server start`` (the other way a supervisor could run it)
  assay        ``assay server start`` end to end: the supervisor, its server, the wait for its answer

each timed from its start to the server answering as its home's (``/api/admin/settings``), with the
server process's CPU seconds by then and its resident memory. Then, on ``assay``'s server: the
supervisor's own memory, and a restart (SIGKILL to the server, to answering again). Last, the cost of
Prefect's API authentication: ``--requests`` small API calls (``POST /flows/filter``) against a server
of a home with a secret and one without, interleaved, median milliseconds per call.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

WAYS = ("background", "uvicorn", "foreground", "assay")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--out", default=str(c.REPO / "bench" / "results" / "server.json"))
    args = parser.parse_args()
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-server-"))
    document: dict[str, object] = {"machine": c.machine(), "rounds": args.rounds}
    try:
        database = migrated_database(work)
        starts: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
        for number in range(args.rounds):
            for way in WAYS:
                starts[way].append(start_once(way, work / f"{way}-{number}", database))
                print(f"round {number + 1}, {way}: {starts[way][-1]}", file=sys.stderr, flush=True)
        document["starts"] = starts
        document["supervised"] = supervised_figures(work / "supervised", database)
        document["auth_ms_per_call"] = auth_cost(work, database, args.requests)
    finally:
        for home in work.iterdir():
            stop(home)
        document["leftover_processes"] = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    return c.close(args.out, document, report)


def migrated_database(work: Path) -> Path:
    """A Prefect database made by a first ``assay server start`` (its migrations run once, here)."""
    home = work / "first"
    assay_start(home)
    stop(home)
    return home / "prefect.db"


def fresh_home(home: Path, database: Path) -> Path:
    home.mkdir(parents=True)
    shutil.copy(database, home / "prefect.db")
    return home.resolve()


def server_env(home: Path, port: int) -> dict[str, str]:
    """The environment assay gives its server (flows.server.local._start), without its supervisor."""
    env = c.child_env(home, server="local")
    env.update(
        PREFECT_SERVER_API_HOST="127.0.0.1", PREFECT_SERVER_API_PORT=str(port), PREFECT_SERVER_LOGGING_LEVEL="WARNING",
        PREFECT__SERVER_FINAL="1", PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL="NOTSET",
    )  # fmt: skip
    return env


def start_once(way: str, home: Path, database: Path) -> dict[str, float]:
    """Start a server ``way`` in a fresh home; seconds to its answer, its CPU seconds and MB by then."""
    from flows.server.local import LocalServer, server_command

    home = fresh_home(home, database)
    port = c.free_port()
    env = server_env(home, port)
    started = time.monotonic()
    if way == "assay":
        pid = assay_start(home, port)
    elif way == "background":
        command = [c.python(), "-m", "prefect", "server", "start", "--background", "--host", "127.0.0.1"]
        c.spawn([*command, "--port", str(port)], env=env, cwd=home, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).wait(timeout=300)  # fmt: skip
        pid = int((home / "server.pid").read_text())
    else:
        command = (
            server_command("127.0.0.1", port, env)
            if way == "uvicorn"
            else [c.python(), "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)]
        )
        process = c.spawn(command, env=env, cwd=home, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (home / "bench-server.pid").write_text(str(process.pid))
        pid = process.pid
    wait(lambda: answers(LocalServer(pid, "127.0.0.1", port, home)), f"{way} server answering")
    figures = {"seconds": time.monotonic() - started, "cpu_s": cpu_seconds(pid), "rss_mb": rss_mb(pid)}
    stop(home)
    return figures


def supervised_figures(home: Path, database: Path) -> dict[str, float]:
    """The supervisor's memory, and how long a killed server takes to answer again."""
    from flows.server import local, supervisor

    home = fresh_home(home, database)
    assay_start(home)
    server = local.find(home)
    watcher = supervisor.supervisor_pid(home)
    assert server is not None and watcher is not None
    figures = {"supervisor_rss_mb": rss_mb(watcher), "server_rss_mb": rss_mb(server.pid)}
    killed = time.monotonic()
    os.kill(server.pid, signal.SIGKILL)
    wait(lambda: (s := local.find(home)) is not None and s.pid != server.pid and local.serves_home(s), "restarted")
    figures["restart_s"] = time.monotonic() - killed
    stop(home)
    return figures


def auth_cost(work: Path, database: Path, requests: int) -> dict[str, float]:
    """Median milliseconds of a small API call, with Prefect's API authentication and without."""
    from flows.server import local
    from flows.server.credentials import authorization, create_secret

    homes = {name: fresh_home(work / f"auth-{name}", database) for name in ("off", "on")}
    secret = create_secret(homes["on"])
    for home in homes.values():
        assay_start(home)
    servers = {name: local.find(home) for name, home in homes.items()}
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(requests):
        for name, server in servers.items():
            assert server is not None
            headers = {"Content-Type": "application/json"}
            if name == "on":
                headers["Authorization"] = authorization(secret)
            request = urllib.request.Request(f"{server.api_url}/flows/filter", data=b'{"limit": 1}', headers=headers)
            began = time.perf_counter()
            with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - our own server
                answer.read()
            times[name].append((time.perf_counter() - began) * 1000)
    for home in homes.values():
        stop(home)
    return {name: c.median(values) for name, values in times.items()}


def assay_start(home: Path, port: int | None = None) -> int:
    """``assay server start`` in a child process; the server's pid."""
    env = c.child_env(home, server="local", ASSAY_SERVER_IDLE_MINUTES="0")
    if port is not None:
        env["ASSAY_PREFECT_PORT"] = str(port)
    done = c.spawn([c.python(), "-m", "flows.run", "server", "start"], env={**env, "PYTHONPATH": str(c.REPO)},
                   cwd=c.REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    out, err = done.communicate(timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"assay server start failed: {err.decode(errors='replace')}")
    return int((home / "server.pid").read_text())


def stop(home: Path) -> None:
    """Stop whatever server this script started in ``home``."""
    from flows.server.local import stop as stop_local

    stop_local(home.resolve())
    with_pid = home / "bench-server.pid"
    if with_pid.exists():
        pid = int(with_pid.read_text())
        with_pid.unlink()
        c.kill_group(pid, signal.SIGTERM)
        wait(lambda: not alive(pid), "the server stopped")


def answers(server: object) -> bool:
    from flows.server.local import serves_home

    return serves_home(server)  # type: ignore[arg-type]


def wait(condition: Callable[[], object], what: str, within_s: float = 600.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"never happened: {what}")
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def report(document: dict[str, object]) -> None:
    starts = document["starts"]
    assert isinstance(starts, dict)
    rows = [
        (way, c.median([r["seconds"] for r in runs]), c.median([r["cpu_s"] for r in runs]),
         c.median([r["rss_mb"] for r in runs]))
        for way, runs in starts.items()
    ]  # fmt: skip
    print(c.table(["start", "to answer (s)", "server CPU (s)", "server RSS (MB)"], rows))
    print(json.dumps({"supervised": document["supervised"], "auth_ms_per_call": document["auth_ms_per_call"]}))
    print(f"load average at start: {document['machine']['loadavg']}")  # type: ignore[index]


if __name__ == "__main__":
    c.run_script(main)
