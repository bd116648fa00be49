"""Shared provider caps across processes: how soon a freed slot is taken by a sample waiting elsewhere.

A fixture with ``limits: {provider: 1}`` and two rows of one provider, each
``--repeat`` samples of ``sleep --work`` seconds, split in two shards
(``--filter 'a*'`` and ``--filter 'b*'``) that run at the same time and share
the provider's Prefect global concurrency limit (``assay:provider=VALUE``).
Every sample writes its start and end time (wall clock) to one log, so the
figures are what the commands themselves saw:

  handover   start of a sample minus the end of the sample before it, for every
             sample that started while the other shard was running too (so a
             sample was waiting for the freed slot); "across" counts only the
             handovers from one shard to the other
  wall       first start to last end, against the sum of the samples' work
  server     CPU seconds the Prefect server spent per second of that wall time

Variants, side by side in one invocation (a brand-new Prefect home; its local
server on a free port, started before the timed rounds):

  pool   the nightly shape: a process work pool from deployments/process-pool.json,
         one deployment per shard from deployments/prefect.yaml (``prefect deploy
         --name ... --param filter=...``), two ``prefect worker start --pool P --limit 1``;
         both shards' flow runs created at once
  runs   two ``python -m flows.run FIXTURE --filter ...`` started at once
  alone  one of those runs by itself: nobody else waits, so its gaps are what taking
         turns costs a run that has the cap to itself (its next sample lets others look first)
  limits assay's global limits alone, without flows or Prefect tasks: two processes, each a
         ``GlobalLimits`` taking the provider's slot for each of its samples (a sleep) in turn;
         the handover of the mechanism itself, apart from what a sample costs around it

Goal (issue 42): median handover within 0.5 s.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

GOAL_S = 0.5
WORKERS: list[subprocess.Popen[bytes]] = []  # the pool variant's two workers
SHARDS = ("a", "b")
VARIANTS = ("pool", "runs", "alone", "limits")


def fixture(folder: Path, log: Path, repeat: int, work_s: float) -> Path:
    """One row per shard, one provider, cap 1: every sample logs ``start|end WALL SHARD INDEX``, and each row's
    ``skip`` command (it runs once the row has its first slot of its own run, just before its first sample asks for
    the provider's global slot; it never skips) logs ``ready WALL SHARD -``."""

    def stamp(event: str, shard: str, index: str = "$ASSAY_SAMPLE") -> str:
        return f"echo {event} $(date +%s.%N) {shard} {index} >> {log}"

    def row(shard: str) -> str:
        command = f"bash -c '{stamp('start', shard)}; sleep {work_s}; {stamp('end', shard)}'"
        ready = f"bash -c '{stamp('ready', shard, '-')}; exit 1'"
        return f"| {shard}-row | bench | `{ready}` | `{command}` |"

    rows = "\n".join(row(shard) for shard in SHARDS)
    path = folder / "handover.md"
    path.write_text(
        f"---\nrepeat: {repeat}\ntimeout: 10m\nlimits: {{provider: 1}}\n---\n\n"
        f"| Name | provider | skip | Command |\n|---|---|---|---|\n{rows}\n",
        encoding="utf-8",
    )
    return path


def samples(log: Path) -> tuple[list[tuple[float, float, str]], dict[str, float]]:
    """(start, end, shard) of every sample in the log, by start; and when each shard's row was ready."""
    stamps: dict[str, dict[tuple[str, str], float]] = {"start": {}, "end": {}, "ready": {}}
    for line in log.read_text(encoding="utf-8").splitlines():
        event, wall, shard, index = line.split()
        stamps[event][(shard, index)] = float(wall)
    starts, ends = stamps["start"], stamps["end"]
    ready = {shard: wall for (shard, _index), wall in stamps["ready"].items()}
    return sorted((starts[key], ends[key], key[0]) for key in starts if key in ends), ready


def figures(found: list[tuple[float, float, str]], ready: dict[str, float], work_s: float) -> dict[str, object]:
    """The handovers while both shards wanted the slot (see the module's docstring), and the wall time."""
    shards = sorted({shard for _s, _e, shard in found})
    last_end = {shard: max(e for _s, e, sh in found if sh == shard) for shard in shards}
    both_from, both_until = max(ready.values()), min(last_end.values())
    gaps, across = [], []
    for (_s0, end, shard0), (start, _e1, shard1) in zip(found, found[1:], strict=False):
        if end <= both_from or end >= both_until:
            continue  # one shard alone: nobody else waited for the slot
        gaps.append(start - end)
        if shard0 != shard1:
            across.append(start - end)
    overlaps = sum(1 for (_s0, end, _sh0), (start, _e1, _sh1) in zip(found, found[1:], strict=False) if start < end)
    origin = min(s for s, _e, _sh in found)
    wall = max(e for _s, e, _sh in found) - origin
    return {
        "samples": len(found),
        "handovers": len(gaps),
        "handover_s": _stats(gaps),
        "across_s": _stats(across),
        "overlaps": overlaps,  # samples that started before the one before them ended: the cap broke
        "wall_s": wall,
        "work_s": len(found) * work_s,
        "timeline": {
            "ready": {shard: round(wall - origin, 3) for shard, wall in ready.items()},
            "samples": [[round(start - origin, 3), round(end - origin, 3), shard] for start, end, shard in found],
        },
    }


def _stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return {"median": c.median(ordered), "p95": p95, "min": ordered[0], "max": ordered[-1], "n": len(ordered)}


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of the server process so far."""
    fields = c.procfs.stat_fields(pid)
    if fields is None:
        return float("nan")
    return (c.stat_field(fields, 14) + c.stat_field(fields, 15)) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every variant (3)")
    parser.add_argument("--repeat", type=int, default=12, help="samples per shard (12)")
    parser.add_argument("--work", type=float, default=1.0, help="seconds each sample sleeps (1.0)")
    parser.add_argument("--only", choices=VARIANTS, action="append", help="run only this variant (repeatable)")
    parser.add_argument("--limits-child", nargs=3, metavar=("LOG", "SHARD", "PROVIDER"), help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "handover.json"), help="JSON file")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a round is abandoned (600)")
    args = parser.parse_args(argv)
    if args.limits_child:
        return limits_child(Path(args.limits_child[0]), args.limits_child[1], args.limits_child[2], args)
    if args.rounds < 1 or args.repeat < 2 or args.work <= 0:
        parser.error("--rounds >= 1, --repeat >= 2 and --work > 0")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-handover-"))
    home = work / "prefect-home"
    try:
        document = run_all(args, work, home)
    finally:
        from flows.server.local import stop

        for worker in WORKERS:  # the pool's workers live across rounds: stopped here, not counted as left over
            c.kill_group(worker.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                worker.wait(timeout=30)
        stop(home.resolve())
        after = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = after
    return c.close(args.out, document, print_report)


def run_all(args: argparse.Namespace, work: Path, home: Path) -> dict[str, object]:
    from flows.server.local import find

    py = c.python()
    env = c.child_env(prefect_home=home, server="local", ASSAY_PREFECT_PORT=str(c.free_port()))
    started = c.measure([py, "-m", "flows.run", "server", "start"], env=env, cwd=work, timeout=args.timeout)
    server = find(home.resolve())
    if not started.ok or server is None:
        raise SystemExit(f"the local Prefect server did not start: {started.stderr_tail}")
    api = f"http://{server.host}:{server.port}/api"
    env = c.child_env(prefect_home=home, api_url=api)
    document: dict[str, object] = {
        "machine": c.machine(),
        "rounds": args.rounds,
        "matrix": f"2 shards x {args.repeat} samples of sleep {args.work} s, limits: {{provider: 1}}",
    }
    variants: dict[str, Callable[[Path], None]] = {}
    chosen = args.only or list(VARIANTS)
    if "pool" in chosen:
        variants["pool"] = pool_variant(py, env, work, args)
    if "runs" in chosen:
        variants["runs"] = lambda folder: two_runs(py, env, folder, args)
    if "alone" in chosen:
        variants["alone"] = lambda folder: two_runs(py, env, folder, args, shards=SHARDS[:1])
    if "limits" in chosen:
        variants["limits"] = lambda folder: two_limits(py, env, folder, args)
    results: dict[str, list[dict[str, object]]] = {name: [] for name in variants}
    for number in range(args.rounds):
        for name, variant in variants.items():
            print(f"round {number + 1} of {args.rounds}: {name}", file=sys.stderr)
            folder = work / f"{name}-{number}"
            folder.mkdir()
            cpu_before, clock_before = server_cpu_s(server.pid), time.monotonic()
            variant(folder)
            cpu = server_cpu_s(server.pid) - cpu_before
            found = figures(*samples(folder / "log"), args.work)
            found["server_cpu_per_s"] = cpu / (time.monotonic() - clock_before)
            results[name].append(found)
    document["variants"] = results
    return document


def two_runs(
    py: str, env: dict[str, str], folder: Path, args: argparse.Namespace, shards: Sequence[str] = SHARDS
) -> None:
    path = fixture(folder, folder / "log", args.repeat, args.work)
    runs = [
        c.spawn(
            [py, "-m", "flows.run", str(path), "--filter", f"{shard}*", "--out", str(folder / "state")],
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for shard in shards
    ]
    for run in runs:
        _out, err = run.communicate(timeout=args.timeout)
        if run.returncode != 0:
            raise SystemExit(f"a shard run failed (exit {run.returncode}): {err.decode()[-800:]}")


def two_limits(py: str, env: dict[str, str], folder: Path, args: argparse.Namespace) -> None:
    """Two processes sharing one provider's global limit through ``GlobalLimits``, started together."""
    log, provider = folder / "log", f"bench-{folder.name}"
    children = [
        c.spawn(
            [
                py,
                str(Path(__file__).resolve()),
                "--limits-child",
                str(log),
                shard,
                provider,
                "--repeat",
                str(args.repeat),
                "--work",
                str(args.work),
            ],
            env=env,
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        for shard in SHARDS
    ]
    for child in children:
        _out, err = child.communicate(timeout=args.timeout)
        if child.returncode != 0:
            raise SystemExit(f"a limits child failed (exit {child.returncode}): {err.decode()[-800:]}")


def limits_child(log: Path, shard: str, provider: str, args: argparse.Namespace) -> int:
    """One process of the ``limits`` variant: ``--repeat`` samples, each holding the provider's slot."""
    from fixtures_core.spec import Limit
    from flows.flow.concurrency import GlobalLimits
    from flows.server.prefect_env import quiet_prefect

    quiet_prefect()
    key = ("provider", provider)
    limits = GlobalLimits([Limit("provider", concurrency=1)], [key])
    try:
        with log.open("a", encoding="utf-8") as out:
            out.write(f"ready {time.time():.6f} {shard} -\n")
            out.flush()
            for index in range(args.repeat):
                with limits.hold((key,), lambda: None) as held:
                    assert held
                    out.write(f"start {time.time():.6f} {shard} {index}\n")
                    out.flush()
                    time.sleep(args.work)
                    out.write(f"end {time.time():.6f} {shard} {index}\n")
                    out.flush()
    finally:
        limits.close()
    return 0


def pool_variant(py: str, env: dict[str, str], work: Path, args: argparse.Namespace) -> Callable[[Path], None]:
    """Create the pool, one deployment per shard and two workers now; the returned round runs both shards."""
    pool = "bench-handover"

    def prefect(*words: str, extra_env: dict[str, str] | None = None) -> str:
        done = subprocess.run([py, "-m", "prefect", *words], cwd=c.REPO, env={**env, **(extra_env or {})},
                              capture_output=True, text=True, timeout=args.timeout)  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"prefect {' '.join(words)}: {done.stdout[-500:]} {done.stderr[-500:]}")
        return done.stdout

    prefect("work-pool", "create", pool, "--type", "process", "--base-job-template", "deployments/process-pool.json")
    allowed = json.dumps({"assay_allowed_roots": str(work)})
    folder = work / "pool-fixture"
    folder.mkdir()
    for shard in SHARDS:
        shard_parameters = ["--param", f'filter=["{shard}*"]', "--param", f"label=shard-{shard}"]
        prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--name", f"shard-{shard}", "--pool", pool,
                *shard_parameters, "--job-variable", allowed)  # fmt: skip
    worker_env = {**env, "PREFECT_WORKER_QUERY_SECONDS": "1"}
    for _ in range(2):
        WORKERS.append(
            c.spawn(
                [py, "-m", "prefect", "worker", "start", "--pool", pool, "--limit", "1"],
                env=worker_env,
                cwd=work,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
        )

    def round_(folder: Path) -> None:
        from prefect.client.orchestration import get_client
        from prefect.settings import PREFECT_API_URL, temporary_settings

        path = fixture(folder, folder / "log", args.repeat, args.work)
        parameters = {"paths": [str(path)], "out": str(folder / "state")}
        with temporary_settings({PREFECT_API_URL: env["PREFECT_API_URL"]}), get_client(sync_client=True) as client:
            ids = [
                client.create_flow_run_from_deployment(
                    client.read_deployment_by_name(f"assay-matrix/shard-{shard}").id, parameters=parameters
                ).id
                for shard in SHARDS
            ]
            deadline = time.monotonic() + args.timeout
            while time.monotonic() < deadline:
                runs = [client.read_flow_run(i) for i in ids]
                if all(r.state is not None and r.state.is_final() for r in runs):
                    break
                time.sleep(0.5)
            else:
                raise SystemExit("the shards' flow runs did not end in time")
            for run in runs:
                if run.state is None or not run.state.is_completed():
                    raise SystemExit(f"shard run {run.name}: {run.state.name if run.state else None}: "
                                     f"{run.state.message if run.state else ''}")  # fmt: skip

    return round_


def print_report(document: dict[str, object]) -> None:
    machine = document["machine"]  # type: ignore[index]
    print(f"\nassay handover bench: {document['matrix']}; {machine['cpus']} CPUs, load {machine['loadavg']}, "  # type: ignore[index]
          f"{machine['date']}")  # type: ignore[index]  # fmt: skip
    rows = []
    variants: dict[str, list[dict[str, object]]] = document["variants"]  # type: ignore[assignment]
    for name, rounds in variants.items():
        for number, found in enumerate(rounds, 1):
            handover: dict[str, float] = found["handover_s"]  # type: ignore[assignment]
            across: dict[str, float] = found["across_s"]  # type: ignore[assignment]
            median = handover.get("median", float("nan"))
            rows.append([f"{name} #{number}", found["handovers"], median, handover.get("p95"), handover.get("max"),
                         across.get("median"), found["wall_s"], found["work_s"], found["server_cpu_per_s"],
                         found["overlaps"], "met" if median <= GOAL_S else "MISSED"])  # fmt: skip
    print(c.table(["variant", "handovers", "median s", "p95 s", "max s", "across median s", "wall s", "work s",
                   "server CPU/s", "overlaps", f"goal {GOAL_S} s"], rows))  # fmt: skip


if __name__ == "__main__":
    c.run_script(main)
