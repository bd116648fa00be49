"""Orchestration overhead: one 200-sample matrix of ``true`` under every engine.

    python bench/overhead.py [--runs 3] [--out bench/results/overhead.json]

Generates a fixture (20 rows x repeat 10 of ``true``, no CEL) in a temp dir and
times it under:

  a   reference: ThreadPoolExecutor(4) of 20 row jobs x 10 subprocess.run(["true"])
      in this process (a' = the same loop as a ``python -c`` child, for its RSS
      and interpreter start)
  b   python -m flows.run FIXTURE --engine local          (child, whole wall time)
  c   python -m flows.run FIXTURE, no PREFECT_API_URL     (Prefect temporary server)
  c1  c with a 1 row x 1 sample fixture: the fixed cost of a temporary-server run
  d   python -m flows.run FIXTURE against a ``prefect server start`` this script
      starts on 127.0.0.1:<free port> (own PREFECT_HOME in the temp dir) and
      always stops (SIGTERM, then SIGKILL, to its whole process group)
  d1  d with a 1 row x 1 sample fixture: the fixed cost against that server
  e   promptfoo eval of an exec-provider config of the same shape, if on PATH

Every variant: one untimed warm-up run (reported as ``first_s``: the cold
start, e.g. the temporary server creating its database), then the median of
--runs runs. Per-sample overhead = (variant - reference) / 200, in ms. For
b-d the matrix is also timed inside a child (imports excluded). Before each
run against the server (d, d1) the script waits until the server is idle:
it keeps digesting a run's events for seconds after the client exits, and a
run that starts meanwhile meets HTTP 503 (SQLite busy) and 2 s + 4 s client
back-off (--no-settle shows that). See bench/README.md for every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

ROWS, REPEAT = 20, 10
SAMPLES = ROWS * REPEAT

REFERENCE_CODE = """
import subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
rows, repeat = int(sys.argv[1]), int(sys.argv[2])
def row(_):
    for _ in range(repeat):
        subprocess.run(["true"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
t = time.perf_counter()
with ThreadPoolExecutor(4) as pool:
    list(pool.map(row, range(rows)))
print('{"loop_s": %.6f}' % (time.perf_counter() - t))
"""

# Times the matrix itself inside a child: imports first (untimed part), then execute_run.
IN_PROCESS_CODE = """
import json, sys, time
t0 = time.perf_counter()
from flows.cli import run_commands as cli
from fixtures_core.runs.options import RunOptions
engine = sys.argv[3]
if engine == "prefect":
    import flows.flow.matrix
t1 = time.perf_counter()
run = cli.execute_run(RunOptions(paths=(sys.argv[1],), out=sys.argv[2], engine=engine, parallel=4))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "matrix_s": t2 - t1, "status": run.status}))
"""


def fixture(folder: Path, rows: int, repeat: int) -> Path:
    lines = ["---", 'exec: "true"', f"repeat: {repeat}", "timeout: 60s", "---", "", "# overhead bench", "",
             "| Name |", "|------|"]  # fmt: skip
    lines += [f"| row-{i:02d} |" for i in range(rows)]
    path = folder / f"bench-{rows}x{repeat}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def reference_loop(rows: int, repeat: int) -> float:
    def row(_: int) -> None:
        for _ in range(repeat):
            subprocess.run(["true"], capture_output=True, stdin=subprocess.DEVNULL)

    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(row, range(rows)))
    return time.perf_counter() - started


# --- measurement plumbing ------------------------------------------------------------


class Variant:
    """Repeated measurements of one child command."""

    def __init__(self, key: str, label: str, samples: int = SAMPLES) -> None:
        self.key, self.label, self.samples = key, label, samples
        self.runs: list[c.Measured] = []
        self.first: c.Measured | None = None
        self.in_process: list[dict[str, object]] = []
        self.note: str | None = None
        self.error: str | None = None

    def wall(self) -> float:
        return c.median([m.wall_s for m in self.runs])

    def figures(self, reference_s: float) -> dict[str, object]:
        walls = [m.wall_s for m in self.runs]
        data: dict[str, object] = {"label": self.label}
        if self.note:
            data["note"] = self.note
        if self.error:
            data["error"] = self.error
        if walls:
            self._wall_figures(data, walls, reference_s)
        matrix = [float(r["matrix_s"]) for r in self.in_process if "matrix_s" in r]  # type: ignore[arg-type]
        if matrix:
            imports = [float(r["import_s"]) for r in self.in_process if "import_s" in r]  # type: ignore[arg-type]
            data["in_process"] = {
                "matrix_s": c.spread(matrix),
                "import_s": c.median(imports) if imports else None,
                "per_sample_overhead_ms": (c.median(matrix) - reference_s) / SAMPLES * 1000
                if self.samples == SAMPLES
                else None,
                "runs": self.in_process,
            }
        return data

    def _wall_figures(self, data: dict[str, object], walls: list[float], reference_s: float) -> None:
        wall = c.median(walls)
        data.update(
            wall_s=c.spread(walls),
            first_s=self.first.wall_s if self.first else None,
            per_sample_overhead_ms=(wall - reference_s) / SAMPLES * 1000 if self.samples == SAMPLES else None,
            ratio_to_reference=wall / reference_s if self.samples == SAMPLES else None,
            peak_rss_mb=c.median([m.root_hwm_mb for m in self.runs]),
            tree_peak_rss_mb=c.median([m.tree_peak_mb for m in self.runs]),
            wait4_max_rss_mb=c.median([m.max_rss_mb for m in self.runs]),
            runs=[m.brief() for m in self.runs],
        )


class ServerWatch:
    """CPU use of a running Prefect server's process tree: wait for it to go idle, and
    count the CPU a run costs the server (including the events it digests after the
    client exited). Without the wait, a run that starts while the server still writes
    the previous run's events to SQLite gets HTTP 503 and the client backs off 2 s + 4 s."""

    HZ = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.idle_rate = 0.0
        self.settle_s: dict[str, list[float]] = {}
        self.cpu_s: dict[str, list[float]] = {}
        self._mark: tuple[float, float] | None = None

    def cpu(self) -> float:
        total = 0
        for pid in c.descendants(self.pid):
            fields = c.procfs.stat_fields(pid)
            if fields is not None:
                total += c.stat_field(fields, 14) + c.stat_field(fields, 15)  # utime + stime
        return total / self.HZ

    def calibrate(self, seconds: float = 2.0) -> None:
        self.wait_idle()
        start = self.cpu()
        time.sleep(seconds)
        self.idle_rate = (self.cpu() - start) / seconds

    def wait_idle(self, window: float = 0.5, limit: float = 60.0) -> float:
        """Wait until the server uses less than 30% of a core (or twice its idle rate) over ``window``."""
        threshold = max(0.3, 2 * self.idle_rate)
        started = time.monotonic()
        while time.monotonic() - started < limit:
            before = self.cpu()
            time.sleep(window)
            if (self.cpu() - before) / window < threshold:
                break
        return time.monotonic() - started

    def before(self, key: str) -> None:
        self.wait_idle()
        self._mark = (time.monotonic(), self.cpu())

    def after(self, key: str) -> None:
        assert self._mark is not None
        started, cpu = self._mark
        client_done = time.monotonic()
        self.wait_idle()
        self.settle_s.setdefault(key, []).append(time.monotonic() - client_done)
        busy = self.cpu() - cpu - self.idle_rate * (time.monotonic() - started)
        self.cpu_s.setdefault(key, []).append(max(busy, 0.0))


def repeat_measure(
    variant: Variant,
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    runs: int,
    warmup: int,
    timeout: float,
    watch: ServerWatch | None = None,
) -> None:
    for n in range(warmup + runs):
        if watch is not None:
            watch.before("warm-up" if n < warmup else variant.key)
        done = c.measure(argv, env=env, cwd=cwd, timeout=timeout)
        if watch is not None:
            watch.after("warm-up" if n < warmup else variant.key)
        if not done.ok:
            variant.error = (
                f"exit {done.returncode}{' (timed out)' if done.timed_out else ''}: {done.stderr_tail[-600:]}"
            )
            print(f"  {variant.key}: FAILED {variant.error}", file=sys.stderr)
            return
        if n < warmup:
            variant.first = variant.first or done
        else:
            variant.runs.append(done)
        print(f"  {variant.key} {'warm-up' if n < warmup else f'run {n - warmup + 1}'}: {done.wall_s:.3f} s, "
              f"RSS {done.root_hwm_mb:.0f} MB, tree {done.tree_peak_mb:.0f} MB", file=sys.stderr)  # fmt: skip


def in_process(
    variant: Variant,
    fixture_path: Path,
    engine: str,
    env: dict[str, str],
    cwd: Path,
    runs: int,
    timeout: float,
    watch: ServerWatch | None = None,
) -> None:
    for n in range(runs):
        out = cwd / f"state-inproc-{variant.key}-{n}"
        argv = [c.python(), "-c", IN_PROCESS_CODE, str(fixture_path), str(out), engine]
        if watch is not None:
            watch.before(f"{variant.key} in-process")
        done = c.measure(argv, env=env, cwd=cwd, timeout=timeout)
        if watch is not None:
            watch.after(f"{variant.key} in-process")
        figures = c.last_json_line(done.stdout)
        if not done.ok or figures is None:
            variant.note = f"in-process timing failed (exit {done.returncode}): {done.stderr_tail[-400:]}"
            return
        variant.in_process.append(figures)
        print(f"  {variant.key} in-process {n + 1}: matrix {float(figures['matrix_s']):.3f} s", file=sys.stderr)  # type: ignore[arg-type]


# Prefect's own floor for assay's task topology, timed inside a child: one task per
# row on ThreadPoolTaskRunner(4), one nested task per sample running `true`, same
# task options as flows.flow.matrix (no cache, no persistence, no retries), no assay code.
FLOOR_CODE = """
import json, subprocess, sys, time
from flows.server.prefect_env import quiet_prefect
quiet_prefect()
from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.futures import wait
from prefect.settings import temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner
rows, repeat = int(sys.argv[1]), int(sys.argv[2])

@task(retries=0, cache_policy=NO_CACHE, persist_result=False)
def sample(index):
    return subprocess.run(["true"], capture_output=True, stdin=subprocess.DEVNULL).returncode

@task(retries=0, cache_policy=NO_CACHE, persist_result=False)
def row(index):
    return [sample.with_options(name=f"row {index} #{i}")(i) for i in range(repeat)]

@flow(validate_parameters=False)
def bare():
    futures = [row.submit(i) for i in range(rows)]
    wait(futures)
    return [f.result() for f in futures]

with temporary_settings(updates={"flows.heartbeat_frequency": None}):
    t = time.perf_counter()
    bare.with_options(task_runner=ThreadPoolTaskRunner(max_workers=4))()
    print(json.dumps({"matrix_s": time.perf_counter() - t}))
"""


def prefect_floor(
    variant: Variant, rows: int, repeat: int, env: dict[str, str], cwd: Path, runs: int, timeout: float,
    watch: ServerWatch | None,
) -> None:  # fmt: skip
    """Time FLOOR_CODE in a child against the running server (in-process figures only)."""
    for n in range(runs):
        if watch is not None:
            watch.before(variant.key)
        done = c.measure([c.python(), "-c", FLOOR_CODE, str(rows), str(repeat)], env=env, cwd=cwd, timeout=timeout)
        if watch is not None:
            watch.after(variant.key)
        figures = c.last_json_line(done.stdout)
        if not done.ok or figures is None:
            variant.note = f"floor timing failed (exit {done.returncode}): {done.stderr_tail[-400:]}"
            return
        variant.in_process.append(figures)
        print(f"  {variant.key} {n + 1}: {float(figures['matrix_s']):.3f} s", file=sys.stderr)  # type: ignore[arg-type]


@contextlib.contextmanager
def prefect_server(home: Path, timeout: float = 90.0) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``prefect server start`` on a free loopback port; stopped (whole process group) on exit."""
    port = c.free_port()
    env = c.child_env(prefect_home=home)
    log = open(home.parent / "prefect-server.log", "wb")  # noqa: SIM115 - closed in finally
    process = c.spawn(
        ["prefect", "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        health = f"http://127.0.0.1:{port}/api/health"
        started = time.monotonic()
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"prefect server exited with {process.returncode}; see {log.name}")
            with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=2) as answer:
                if answer.status == 200:
                    break
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"prefect server not healthy after {timeout:.0f} s; see {log.name}")
            time.sleep(0.25)
        print(f"  prefect server healthy on port {port} after {time.monotonic() - started:.1f} s", file=sys.stderr)
        yield f"http://127.0.0.1:{port}/api", process
    finally:
        c.kill_group(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
        c.kill_group(process.pid, signal.SIGKILL)  # children of the server too, even if the leader exited
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=5)
        log.close()


def promptfoo_config(folder: Path, rows: int, repeat: int) -> Path:
    tests = "\n".join(f"  - vars: {{i: {i}}}" for i in range(rows))
    text = f"""description: assay overhead bench ({rows} tests x repeat {repeat})
prompts:
  - "sample {{{{i}}}}"
providers:
  - "exec: true"
tests:
{tests}
evaluateOptions:
  maxConcurrency: 4
  repeat: {repeat}
  cache: false
  showProgressBar: false
"""
    path = folder / "promptfooconfig.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- main ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per variant; the median is reported (3)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs before each variant (1)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "overhead.json"), help="JSON file")
    parser.add_argument("--only", default="abcde", help="variants to run, e.g. 'ab' (default: abcde)")
    parser.add_argument("--no-in-process", action="store_true", help="skip the in-process timings of b-d")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before one child is killed (180)")
    parser.add_argument(
        "--no-settle",
        action="store_true",
        help="d: do not wait for the server to go idle between runs (back-to-back runs)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (fixtures, state, server log)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-overhead-"))
    try:
        document = run_all(args, work)
    finally:
        after = c.kill_leftovers()  # also on Ctrl-C / SIGTERM: nothing we started outlives us
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = after
    if after:
        print(f"WARNING: processes were left running (now killed): {after}", file=sys.stderr)
    return c.close(args.out, document, print_report)


def run_all(args: argparse.Namespace, work: Path) -> dict[str, object]:
    runs, warmup, timeout = args.runs, args.warmup, args.timeout
    big = fixture(work, ROWS, REPEAT)
    small = fixture(work, 1, 1)
    client_home = work / "prefect-client-home"
    client_home.mkdir()
    py = c.python()
    document: dict[str, object] = {"machine": c.machine(), "samples": SAMPLES, "rows": ROWS, "repeat": REPEAT,
                                   "runs": runs, "warmup": warmup}  # fmt: skip

    # a: the reference, in this process and as a python -c child.
    print("a: reference loop", file=sys.stderr)
    for _ in range(warmup):
        reference_loop(ROWS, REPEAT)
    reference_runs = [reference_loop(ROWS, REPEAT) for _ in range(runs)]
    reference = c.median(reference_runs)
    ref_child = Variant("a'", "reference loop as a `python -c` child (whole wall)")
    repeat_measure(ref_child, [py, "-c", REFERENCE_CODE, str(ROWS), str(REPEAT)], c.child_env(), work, runs, warmup,
                   timeout)  # fmt: skip
    document["reference"] = {
        "label": "ThreadPoolExecutor(4): 20 row jobs x 10 subprocess.run(['true'], captured), in-process",
        "wall_s": c.spread(reference_runs),
        "per_sample_ms": reference / SAMPLES * 1000,
    }

    # Interpreter and import costs.
    print("start-up costs", file=sys.stderr)
    startup: dict[str, object] = {}
    for key, code in (("python -c pass", "pass"), ("import flows.run", "import flows.run"),
                      ("import flows.flow.matrix", "import flows.flow.matrix")):  # fmt: skip
        probe = Variant(key, key)
        repeat_measure(probe, [py, "-c", code], c.child_env(prefect_home=client_home), work, runs, warmup, timeout)
        startup[key] = {"wall_s": probe.wall(), "peak_rss_mb": c.median([m.root_hwm_mb for m in probe.runs])}
    document["startup"] = startup
    import_run = float(startup["import flows.run"]["wall_s"])  # type: ignore[index]
    import_matrix = float(startup["import flows.flow.matrix"]["wall_s"])  # type: ignore[index]

    variants: dict[str, Variant] = {"a'": ref_child}

    def cli(state: str, fixture_path: Path = big, engine: str | None = None) -> list[str]:
        argv = [py, "-m", "flows.run", str(fixture_path), "--out", str(work / state)]
        return argv + (["--engine", engine] if engine else [])

    if "b" in args.only:
        print("b: --engine local", file=sys.stderr)
        v = variants["b"] = Variant("b", "flows.run --engine local (whole wall)")
        env = c.child_env(prefect_home=client_home)
        repeat_measure(v, cli("state-b", engine="local"), env, work, runs, warmup, timeout)
        if not args.no_in_process:
            in_process(v, big, "local", env, work, runs, timeout)

    if "c" in args.only:
        print("c: Prefect, temporary server", file=sys.stderr)
        v = variants["c"] = Variant("c", "flows.run, Prefect, temporary server (whole wall)")
        env = c.child_env(prefect_home=work / "prefect-ephemeral-home")
        repeat_measure(v, cli("state-c"), env, work, runs, warmup, timeout)
        if not args.no_in_process:
            in_process(v, big, "prefect", env, work, runs, timeout)
        fixed_c = variants["c1"] = Variant("c1", "c fixed cost: 1 row x 1 sample, temporary server", samples=1)
        repeat_measure(fixed_c, cli("state-c1", small), env, work, runs, 0, timeout)

    if "d" in args.only:
        print("d: Prefect, running server", file=sys.stderr)
        v = variants["d"] = Variant("d", "flows.run, Prefect, running server (whole wall)")
        fixed = variants["d1"] = Variant("d1", "d fixed cost: 1 row x 1 sample, same server", samples=1)
        server_home = work / "prefect-server-home"
        server_home.mkdir()
        try:
            with prefect_server(server_home) as (api_url, server):
                env = c.child_env(prefect_home=client_home, api_url=api_url)
                watch = ServerWatch(server.pid) if not args.no_settle else None
                if watch is not None:
                    watch.calibrate()
                repeat_measure(v, cli("state-d"), env, work, runs, warmup, timeout, watch)
                repeat_measure(fixed, cli("state-d1", small), env, work, runs, warmup, timeout, watch)
                if not args.no_in_process:
                    in_process(v, big, "prefect", env, work, runs, timeout, watch)
                    in_process(fixed, small, "prefect", env, work, runs, timeout, watch)
                    floor = variants["f"] = Variant("f", "Prefect floor: same task topology, no assay code")
                    floor1 = variants["f1"] = Variant("f1", "Prefect floor fixed cost: 1 row x 1 sample", samples=1)
                    prefect_floor(floor, ROWS, REPEAT, env, work, runs, timeout, watch)
                    prefect_floor(floor1, 1, 1, env, work, runs, timeout, watch)
                document["prefect_server"] = {
                    "rss_mb_at_end": c.tree_rss(server.pid) / c.MB,
                    "processes": len(c.descendants(server.pid)),
                    "waited_for_idle_before_each_run": watch is not None,
                }
                if watch is not None:
                    document["prefect_server"].update(  # type: ignore[union-attr]
                        idle_cpu_fraction=watch.idle_rate,
                        busy_after_client_exit_s={k: c.median(v) for k, v in watch.settle_s.items()},
                        cpu_s_per_run={k: c.median(v) for k, v in watch.cpu_s.items()},
                    )
        except RuntimeError as exc:
            v.error = str(exc)
            print(f"  d: {exc}", file=sys.stderr)

    if "e" in args.only:
        v = variants["e"] = Variant("e", "promptfoo eval, exec: true, 20 x repeat 10, -j 4")
        promptfoo = shutil.which("promptfoo")
        if promptfoo is None:
            v.note = "skipped: promptfoo is not on PATH (earlier measurements: ~18 ms/sample and 256 MB)"
            print(f"e: {v.note}", file=sys.stderr)
        else:
            print("e: promptfoo", file=sys.stderr)
            config = promptfoo_config(work, ROWS, REPEAT)
            env = c.child_env(PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                              PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-home"))  # fmt: skip
            argv = [promptfoo, "eval", "-c", str(config), "--no-cache", "--no-table", "--no-progress-bar",
                    "-j", "4", "--repeat", str(REPEAT), "-o", str(work / "promptfoo-out.json")]  # fmt: skip
            repeat_measure(v, argv, env, work, runs, warmup, timeout)

    figures = {key: v.figures(reference) for key, v in variants.items()}
    document["variants"] = figures
    document["derived"] = derived(figures, reference, import_run, import_matrix)
    return document


def derived(figures: dict[str, dict[str, object]], reference: float, import_run: float, import_matrix: float):  # type: ignore[no-untyped-def]
    """Start-up-adjusted and fixed-cost-adjusted figures, and the issue-6 targets."""

    def wall(key: str) -> float | None:
        spread = figures.get(key, {}).get("wall_s")
        return float(spread["median"]) if isinstance(spread, dict) else None  # type: ignore[index]

    def inproc(key: str) -> float | None:
        data = figures.get(key, {}).get("in_process")
        return float(data["per_sample_overhead_ms"]) if isinstance(data, dict) else None  # type: ignore[index]

    def inproc_s(key: str) -> float | None:
        data = figures.get(key, {}).get("in_process")
        return float(data["matrix_s"]["median"]) if isinstance(data, dict) else None  # type: ignore[index]

    def per_sample(total: float | None) -> float | None:
        return None if total is None else total / SAMPLES * 1000

    out: dict[str, object] = {}
    b, c_, d, d1 = wall("b"), wall("c"), wall("d"), wall("d1")
    if b is not None:
        out["b_per_sample_ms_raw"] = per_sample(b - reference)
        out["b_per_sample_ms_minus_import_flows_run"] = per_sample(b - import_run - reference)
        out["b_per_sample_ms_in_process"] = inproc("b")
    if c_ is not None:
        out["c_per_sample_ms_raw"] = per_sample(c_ - reference)
        if wall("c1") is not None:
            out["c_fixed_cost_s"] = wall("c1")
            out["c_per_sample_ms_fixed_cost_adjusted"] = per_sample(c_ - wall("c1"))  # type: ignore[operator]
        out["c_per_sample_ms_minus_import_flows_matrix"] = per_sample(c_ - import_matrix - reference)
        out["c_per_sample_ms_in_process"] = inproc("c")
    if d is not None:
        out["d_per_sample_ms_raw"] = per_sample(d - reference)
        out["d_per_sample_ms_minus_import_flows_matrix"] = per_sample(d - import_matrix - reference)
        out["d_per_sample_ms_in_process"] = inproc("d")
        if d1 is not None:
            out["d_fixed_cost_s"] = d1
            out["d_per_sample_ms_fixed_cost_adjusted"] = per_sample(d - d1)
        d_in, d1_in = inproc_s("d"), inproc_s("d1")
        if d_in is not None and d1_in is not None:
            out["d_fixed_cost_in_process_s"] = d1_in
            out["d_per_sample_ms_in_process_fixed_cost_adjusted_minus_reference"] = per_sample(d_in - d1_in - reference)
        f_in, f1_in = inproc_s("f"), inproc_s("f1")
        if f_in is not None and f1_in is not None:
            out["f_prefect_floor_per_sample_ms"] = per_sample(f_in - f1_in - reference)
            if d_in is not None and d1_in is not None:
                out["d_assay_above_prefect_floor_per_sample_ms"] = per_sample((d_in - d1_in) - (f_in - f1_in))
    targets = []

    def target(name: str, value: float | None, limit: float, unit: str) -> None:
        if value is not None:
            targets.append({"target": name, "value": value, "limit": limit, "unit": unit, "met": value <= limit})

    target(
        "local: per-sample overhead (in-process matrix vs reference)", out.get("b_per_sample_ms_in_process"), 1.0, "ms"
    )  # type: ignore[arg-type]
    target("local: whole 200-sample run incl. interpreter start", b, 2.0, "s")
    target("prefect + running server: per-sample overhead (fixed-cost adjusted)",
           out.get("d_per_sample_ms_fixed_cost_adjusted"), 6.0, "ms")  # type: ignore[arg-type]  # fmt: skip
    target("prefect + temporary server: whole run", c_, 12.0, "s")
    out["targets"] = targets
    return out


def print_report(document: dict[str, object]) -> None:
    reference = document["reference"]  # type: ignore[index]
    machine = document["machine"]  # type: ignore[index]
    print(f"\nassay overhead: {document['samples']} samples ({document['rows']} rows x repeat {document['repeat']}) "
          f"of `true`, median of {document['runs']} runs; {machine['cpus']} CPUs, {machine['date']}")  # type: ignore[index]  # fmt: skip
    print(
        f"reference (a, in-process): {reference['wall_s']['median']:.3f} s = "  # type: ignore[index]
        f"{reference['per_sample_ms']:.2f} ms/sample"
    )  # type: ignore[index]
    rows = []
    for key, v in document["variants"].items():  # type: ignore[union-attr]
        if "wall_s" not in v:
            rows.append([key, (v.get("note") or v.get("error") or "no figures")[:52]] + [None] * 8)
            continue
        ip = v.get("in_process") or {}
        rows.append([key, v["label"][:52], v["wall_s"]["median"], v.get("first_s"), v["per_sample_overhead_ms"],
                     v["ratio_to_reference"], v["peak_rss_mb"], v["tree_peak_rss_mb"],
                     ip.get("matrix_s", {}).get("median"), ip.get("per_sample_overhead_ms")])  # fmt: skip
    print(c.table(["", "variant", "wall s", "1st s", "ovh ms/smp", "x ref", "RSS MB", "tree MB",
                   "inproc s", "inproc ms/smp"], rows))  # fmt: skip
    print("\nstart-up: " + ", ".join(f"{k} {v['wall_s']:.2f} s" for k, v in document["startup"].items()))  # type: ignore[union-attr]
    d = document["derived"]  # type: ignore[index]
    print("derived per-sample overhead (ms):")
    for key, value in d.items():  # type: ignore[union-attr]
        if key != "targets" and value is not None:
            print(f"  {key}: {value:.3f}" + (" s" if key.endswith("_s") else ""))
    if "prefect_server" in document:
        print(f"  prefect server RSS at end: {document['prefect_server']['rss_mb_at_end']:.0f} MB")  # type: ignore[index]
    server = document.get("prefect_server")
    if isinstance(server, dict) and "cpu_s_per_run" in server:
        cpu = server["cpu_s_per_run"].get("d")
        busy = server["busy_after_client_exit_s"].get("d")
        if cpu is not None:
            print(f"  prefect server CPU per 200-sample run: {cpu:.2f} s ({cpu / SAMPLES * 1000:.1f} ms/sample), "
                  f"still busy {busy:.1f} s after the client exits")  # fmt: skip
    print("targets:")
    for t in d["targets"]:  # type: ignore[index]
        print(f"  [{'met ' if t['met'] else 'MISS'}] {t['target']}: {t['value']:.2f} {t['unit']} (<= {t['limit']:g})")


if __name__ == "__main__":
    c.run_script(main)
