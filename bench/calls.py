"""What one run costs Prefect, per row shape: its API calls (by route and answer), the events it
sends, SQLite's refusals of row subflow creations, and the CPU time of the client and the server.

    python bench/calls.py [--rounds 3] [--out bench/results/calls.json]

The matrix is bench/overhead.py's (20 rows x repeat 10 of ``true``), run on a reused local server
in a brand-new Prefect home, once per shape and round, interleaved: ``default`` (each row a
subflow run) and ``tasks`` (``--rows-as-tasks``). Each run is a child process that counts, in
itself, every HTTP request its Prefect clients send (an httpx hook: the route with ids elided, the
status), every event its events worker sends, and every creation SQLite refused (HTTP 503, tried
again at once by ``flows.flow.row_subflow``); its CPU time comes from ``wait4``, the server's from
``/proc`` (from the run's start until 3 s after its end, when the server has recorded its events).
Figures are medians over the rounds; the counts barely move, the times do with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402
from overhead import fixture as true_fixture  # noqa: E402

ROWS, REPEAT = 20, 10
SHAPES = {"default": (), "tasks": ("--rows-as-tasks",)}
SETTLE_S = 3.0
# The child: count, then run the command line in this process; print the counts as one JSON line on stderr.
CHILD = r"""
import collections, json, re, sys, threading
import httpx
calls, lock = collections.Counter(), threading.Lock()
ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
def counted(send):
    def wrapper(self, request, *args, **kwargs):
        try:
            response = send(self, request, *args, **kwargs)
        except Exception as exc:
            key = f"{request.method} {ids.sub('{id}', request.url.path)} {type(exc).__name__}"
            with lock:
                calls[key] += 1
            raise
        with lock:
            calls[f"{request.method} {ids.sub('{id}', request.url.path)} {response.status_code}"] += 1
        return response
    return wrapper
async def asend(self, request, *args, **kwargs):
    try:
        response = await original_async(self, request, *args, **kwargs)
    except Exception as exc:
        with lock:
            calls[f"{request.method} {ids.sub('{id}', request.url.path)} {type(exc).__name__}"] += 1
        raise
    with lock:
        calls[f"{request.method} {ids.sub('{id}', request.url.path)} {response.status_code}"] += 1
    return response
original_async = httpx.AsyncClient.send
httpx.AsyncClient.send = asend
httpx.Client.send = counted(httpx.Client.send)
from flows.server.prefect_env import quiet_prefect
quiet_prefect()
from prefect.events.worker import EventsWorker
events = collections.Counter()
handle = EventsWorker._handle
async def counting_handle(self, event):
    events[event.event] += 1
    return await handle(self, event)
EventsWorker._handle = counting_handle
import flows.flow.row_subflow as row_subflow
refused = collections.Counter()
refuse = row_subflow._refuse
def counting_refuse(response):
    if response.status_code == 503:
        refused[ids.sub("{id}", response.request.url.path)] += 1
    return refuse(response)
row_subflow._refuse = counting_refuse
from flows.cli import main as run
code = run.main(sys.argv[1:])
print(json.dumps({"exit": code, "calls": calls, "events": events, "refused": refused}), file=sys.stderr, flush=True)
sys.exit(code)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each shape (3)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "calls.json"), help="JSON file")
    args = parser.parse_args(argv)
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-calls-"))
    home = (work / "prefect-home").resolve()
    try:
        document = run_all(args.rounds, work, home)
    finally:
        from flows.server.local import stop

        stop(home)
        after = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = after
    return c.close(args.out, document, print_report)


def run_all(rounds: int, work: Path, home: Path) -> dict[str, object]:
    from flows.server.local import find

    env = c.child_env(prefect_home=home, server="local", ASSAY_PREFECT_PORT=str(c.free_port()))
    env["PYTHONPATH"] = str(c.REPO)
    big = true_fixture(work, ROWS, REPEAT)
    started = c.measure([c.python(), "-m", "flows.run", "server", "start"], env=env, cwd=work, timeout=300)
    server = find(home)
    assert server is not None, started.stderr_tail
    runs: dict[str, list[dict[str, object]]] = {shape: [] for shape in SHAPES}
    for number in range(rounds):
        print(f"round {number + 1} of {rounds}", file=sys.stderr)
        for shape, extra in SHAPES.items():
            runs[shape].append(_one(big, work, env, server.pid, extra))
    return {"machine": c.machine(), "rounds": rounds, "rows": ROWS, "repeat": REPEAT, "runs": runs}


def _one(fixture: Path, work: Path, env: dict[str, str], server_pid: int, extra: tuple[str, ...]) -> dict[str, object]:
    argv = [c.python(), "-c", CHILD, "run", str(fixture), "--out", str(work / "state"), "--progress", "off", *extra]
    server_before = _cpu_s(server_pid)
    began = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, _, usage = os.wait4(child.pid, 0)  # its own CPU time (Popen's wait would not give it)
    child.returncode = 0  # reaped here
    wall = time.perf_counter() - began
    time.sleep(SETTLE_S)
    counts = c.last_json_line(stderr) or {}
    client = usage.ru_utime + usage.ru_stime
    return {"wall_s": wall, "client_cpu_s": client, "server_cpu_s": _cpu_s(server_pid) - server_before, **counts}


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def print_report(document: dict[str, object]) -> None:
    runs: dict[str, list[dict[str, object]]] = document["runs"]  # type: ignore[assignment]
    machine = document["machine"]
    print(f"\nassay calls bench: {machine['cpus']} CPUs, load {machine['loadavg']}, {machine['date']}")  # type: ignore[index]
    median = statistics.median
    rows = []
    for shape, done in runs.items():
        requests = [sum(r["calls"].values()) for r in done]  # type: ignore[union-attr]
        refused = [sum(r["refused"].values()) for r in done]  # type: ignore[union-attr]
        events = [sum(r["events"].values()) for r in done]  # type: ignore[union-attr]
        rows.append([shape, median(r["wall_s"] for r in done), median(r["client_cpu_s"] for r in done),  # type: ignore[misc]
                     median(r["server_cpu_s"] for r in done), median(requests), median(refused), median(events)])  # type: ignore[misc]  # fmt: skip
    print(c.table(["shape", "wall s", "client CPU s", "server CPU s", "requests", "refused 503", "events"], rows))
    exits = {shape: sorted({r.get("exit") for r in done}, key=str) for shape, done in runs.items()}
    print(f"exit codes: {exits}")
    for shape, done in runs.items():
        first = done[-1]
        print(f"\n{shape}: requests by route and answer (last round)")
        for route, count in sorted(first["calls"].items(), key=lambda kv: -kv[1]):  # type: ignore[union-attr]
            print(f"  {count:5d}  {route}")
        print(f"  events: {json.dumps(first['events'])}; refused creations: {json.dumps(first['refused'])}")


if __name__ == "__main__":
    c.run_script(main)
