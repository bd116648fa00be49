"""Shared helpers of the bench scripts: child-process measurement, synthetic results, output.

Only the standard library at import time; project modules are imported lazily
by the functions that need them, so ``--help`` is instant.

Peak RSS is measured two ways for every child process, because neither alone
is right for a tree of processes (a flow process plus its temporary Prefect
server, plus the commands under test):

* ``max_rss_mb``: ``os.wait4`` rusage ``ru_maxrss`` of the child, which the
  kernel computes exactly: the largest single process among the child and
  every descendant it reaped (the maximum, not the sum). This is what
  ``/usr/bin/time -f %M`` prints, without the extra process.
  Caveat: Linux also counts the memory of the forked copy before exec, so
  this is never below the measuring (parent) process's own RSS (~25 MB).
* ``tree_peak_mb``: the largest SUM of proportional set size (PSS, from
  ``/proc/PID/smaps_rollup``; shared pages divided among sharers, so shared
  libraries are not counted twice) over the whole process tree (descendants
  found through ``/proc/*/stat`` parent links), sampled every ``interval``
  seconds (default 50 ms). Children that have not exec'd yet (vfork/fork
  copies of their parent, which would count the parent a second time) are
  skipped. A spike shorter than the interval can be missed.
* ``root_hwm_mb``: ``VmHWM`` of the child process itself: its own RSS
  high-water mark, kept by the kernel, read at every sample (the last read,
  at most ``interval`` before exit, is kept). This is the headline "peak
  RSS" of a child.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

PAGE = os.sysconf("SC_PAGE_SIZE")
REPO = Path(__file__).resolve().parent.parent
MB = 1024 * 1024


# --- process measurement ----------------------------------------------------------


def _load_procfs() -> ModuleType:
    """assay's reader of ``/proc`` (standard library only), loaded by itself: importing the
    ``fixtures_core`` package would grow this measuring process by ~30 MB, and with it the
    ``max_rss_mb`` floor of every child (see above)."""
    spec = importlib.util.spec_from_file_location("_bench_procfs", REPO / "fixtures_core" / "execution" / "procfs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up while it is defined
    spec.loader.exec_module(module)
    return module


procfs = _load_procfs()


def stat_field(fields: Sequence[bytes], number: int) -> int:
    """Field ``number`` of ``/proc/PID/stat`` as numbered in proc(5), from ``procfs.stat_fields``."""
    return int(fields[number - 3])


def _proc_table() -> dict[int, tuple[int, int, tuple[int, ...]]]:
    """pid -> (ppid, rss bytes, address-space key) of every process we can see.

    The key (vsize, startcode, endcode, startstack) is equal to the parent's
    for a child that has not exec'd yet (a vfork child shares its parent's
    memory outright; a fork child still maps the parent's image).
    """
    table: dict[int, tuple[int, int, tuple[int, ...]]] = {}
    for pid in procfs.pids():
        fields = procfs.stat_fields(pid)
        if fields is None:
            continue
        key = tuple(stat_field(fields, number) for number in (23, 26, 27, 28))
        table[pid] = (stat_field(fields, 4), stat_field(fields, 24) * PAGE, key)
    return table


def descendants(root: int, table: Mapping[int, tuple[int, int, tuple[int, ...]]] | None = None) -> list[int]:
    """``root`` and every process below it (by parent links)."""
    table = _proc_table() if table is None else table
    children: dict[int, list[int]] = {}
    for pid, (ppid, _rss, _key) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in table:
            found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _proc_kib(path: str, field: bytes) -> int | None:
    """A ``Field:  N kB`` line of a /proc file, in bytes; None when the process is gone."""
    try:
        with open(path, "rb") as handle:
            for line in handle:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _pss(pid: int) -> int | None:
    """Proportional set size (bytes): shared pages divided among the processes sharing them."""
    return _proc_kib(f"/proc/{pid}/smaps_rollup", b"Pss:")


def tree_memory(root: int) -> tuple[int, list[int]]:
    """Summed PSS (bytes) of ``root``'s tree, counting only processes with their own address
    space (a child that has not exec'd yet shares or copies its parent's and is skipped)."""
    table = _proc_table()
    pids = descendants(root, table)
    total = 0
    for pid in pids:
        ppid, rss, key = table[pid]
        if pid != root and ppid in table and table[ppid][2] == key:
            continue
        pss = _pss(pid)
        total += rss if pss is None else pss
    return total, pids


def tree_rss(root: int) -> int:
    """Current summed memory (PSS, bytes) of ``root``'s process tree."""
    return tree_memory(root)[0]


def _vm_hwm(pid: int) -> int | None:
    """The kernel's high-water mark of the process's resident memory (bytes)."""
    return _proc_kib(f"/proc/{pid}/status", b"VmHWM:")


class TreeSampler(threading.Thread):
    """Samples the summed RSS of a process tree and the root's VmHWM until stopped."""

    def __init__(self, root: int, interval: float) -> None:
        super().__init__(daemon=True, name="rss-sampler")
        self.root, self.interval = root, interval
        self.peak = 0
        self.root_hwm = 0
        self.pids_seen: set[int] = set()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while True:
            self.sample()
            if self._stop_event.wait(self.interval):
                return

    def sample(self) -> None:
        total, pids = tree_memory(self.root)
        self.pids_seen.update(pids)
        self.peak = max(self.peak, total)
        hwm = _vm_hwm(self.root)
        if hwm is not None:
            self.root_hwm = max(self.root_hwm, hwm)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


@dataclass
class Measured:
    """One child process: wall time, exit code, memory, and its output tails."""

    argv: list[str]
    wall_s: float
    returncode: int | None
    max_rss_mb: float
    tree_peak_mb: float
    root_hwm_mb: float
    processes: int
    timed_out: bool = False
    stdout_tail: str = ""
    stderr_tail: str = ""
    stdout: str = field(default="", repr=False)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def brief(self) -> dict[str, object]:
        data = asdict(self)
        data.pop("stdout")
        if self.ok:
            data.pop("stdout_tail")
            data.pop("stderr_tail")
        return data


def measure(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    timeout: float = 300.0,
    interval: float = 0.05,
) -> Measured:
    """Run ``argv`` in its own process group; time it and measure its memory.

    The child's whole process group is SIGKILLed afterwards, so nothing it
    started (a temporary Prefect server that failed to stop, a stray
    command) outlives the measurement; on ``timeout`` the group is killed.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = spawn(
            argv, env=dict(env) if env is not None else None, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err
        )
        sampler = TreeSampler(process.pid, interval)
        sampler.start()
        timed_out = threading.Event()

        def kill_on_timeout() -> None:
            timed_out.set()
            kill_group(process.pid)

        timer = threading.Timer(timeout, kill_on_timeout)
        timer.start()
        try:
            _pid, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
        finally:
            timer.cancel()
            sampler.stop()
            kill_group(process.pid)  # whatever the child left in its group
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    return Measured(
        argv=list(argv),
        wall_s=wall,
        returncode=process.returncode,
        max_rss_mb=usage.ru_maxrss * 1024 / MB,  # Linux reports KiB
        tree_peak_mb=sampler.peak / MB,
        root_hwm_mb=sampler.root_hwm / MB,
        processes=len(sampler.pids_seen),
        timed_out=timed_out.is_set(),
        stdout_tail=stdout[-1500:],
        stderr_tail=stderr[-1500:],
        stdout=stdout,
    )


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def last_json_line(text: str) -> dict[str, object] | None:
    """The last line of ``text`` that parses as a JSON object."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    return value
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Every child this script starts gets its own session (start_new_session=True), whose id
# is the child's pid; a process left in one of these sessions was started by us.
OUR_SESSIONS: set[int] = set()


def spawn(argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
    """Popen in a new session, remembered for ``leftovers``."""
    process = subprocess.Popen(list(argv), start_new_session=True, **kwargs)  # type: ignore[call-overload]
    OUR_SESSIONS.add(process.pid)
    return process  # type: ignore[no-any-return]


def leftovers() -> list[str]:
    """Processes still alive in a session this script created (should be none)."""
    found = []
    for pid in procfs.pids():
        stat = procfs.stat(pid)
        if stat is None or stat.session not in OUR_SESSIONS:
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        found.append(f"{pid}: {cmdline[:160]}")
    return found


def kill_leftovers() -> list[str]:
    """SIGKILL every process group of our sessions that still has a member; return what was found."""
    found = leftovers()
    for sid in OUR_SESSIONS:
        kill_group(sid)
    return found


def raise_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt so that ``finally`` blocks stop what we started."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, handler)


# --- environment and figures ---------------------------------------------------------


QUIET_PREFECT = {  # what flows.server.prefect_env sets (logs still go to the API, as in the product)
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "DO_NOT_TRACK": "1",
}
ASSAY_ENV = ("PREFECT_API_URL", "ASSAY_PREFECT_SERVER", "ASSAY_PREFECT_PORT")


def child_env(
    prefect_home: Path | None = None, api_url: str | None = None, server: str = "temporary", **extra: str
) -> dict[str, str]:
    """os.environ with quiet Prefect and an own PREFECT_HOME; the Prefect API is ``api_url`` when
    given, else ``server``: "temporary" (Prefect's temporary server per run, ASSAY_PREFECT_SERVER)
    or "local" (the home's background server, started on first use and reused)."""
    env = {k: v for k, v in os.environ.items() if k not in ASSAY_ENV}
    env.update(QUIET_PREFECT)
    if prefect_home is not None:
        env["PREFECT_HOME"] = str(prefect_home)
    if api_url is not None:
        env["PREFECT_API_URL"] = api_url
    elif server == "temporary":
        env["ASSAY_PREFECT_SERVER"] = "temporary"
    env.update(extra)
    return env


def machine() -> dict[str, object]:
    """Where the figures were measured."""
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    try:
        from importlib import metadata

        prefect_version = metadata.version("prefect")
    except Exception:  # noqa: BLE001 - informational only
        prefect_version = "unknown"
    mem_total = ""
    with contextlib.suppress(OSError):
        mem_total = Path("/proc/meminfo").read_text().splitlines()[0].split(":", 1)[1].strip()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "cpus": os.cpu_count(),
        "cpu_model": model,
        "memory": mem_total,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "prefect": prefect_version,
        "loadavg": os.getloadavg(),
    }


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": median(values), "min": min(values), "max": max(values)} if values else {}


def write_json(path: str | Path, document: object) -> Path:
    from fixtures_core.files import write_json_atomic  # imported where used, as the other assay imports here

    target = Path(path)
    write_json_atomic(target, document)
    return target


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain fixed-width text table."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = [
        all(v is None or isinstance(v, (int, float)) for v in (row[i] for row in rows)) for i in range(len(headers))
    ]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                cell.rjust(width) if n and i and right[i] else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value != value:  # nan
            return "-"
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


# --- synthetic results (finalize benchmarks) ---------------------------------------------


def synthetic_matrix(rows: int, samples: int, metrics: int, file: str = "bench/synthetic.md"):  # type: ignore[no-untyped-def]
    """RowSpecs and RowResults of ``rows`` fast, passing rows, built directly (nothing runs).

    Every row has ``samples`` samples and ``metrics`` metrics (mean, direction
    lower, a threshold max); every metric after the first has row 0 as its
    baseline row with ``regressionPercent``, so comparisons are exercised too.
    """
    from fixtures_core.results import Check, MetricValue, Outcomes, RowResult, SampleResult
    from fixtures_core.spec import Expectation, MetricSpec, RowSpec, Threshold

    specs, results = [], []
    first = "row-00000"
    for r in range(rows):
        name = f"row-{r:05d}"
        metric_specs = tuple(
            MetricSpec(
                name=f"m{m}",
                extract=f"json.m{m}",
                unit="ms",
                file=file,
                line=3 + m,
                aggregate=("mean", "median", "p95")[m % 3],
                direction="lower",  # type: ignore[arg-type]
                baseline=first if m else None,
                threshold=Threshold(max=1e9, regression_percent=50.0 if m else None),
            )  # fmt: skip
            for m in range(metrics)
        )
        spec = RowSpec(
            file=file, line=20 + r, name=name, argv=("true",), expect=Expectation(),
            properties={"selector": f"sel-{r % 7}", "prompt": f"p{r % 13}"}, repeat=samples, metrics=metric_specs,
        )  # fmt: skip
        sample_results = tuple(
            SampleResult(
                index=i,
                status="PASS",
                duration_ms=1.5 + (r + i) % 5,
                exit_code=0,
                stdout="",
                stderr="",
                command=Check("pass"),
                metrics={f"m{m}": MetricValue("pass", float(100 + (r * 7 + i * 3 + m) % 17)) for m in range(metrics)},
            )  # fmt: skip
            for i in range(samples)
        )
        result = RowResult(
            id=spec.id, file=file, name=name, line=spec.line, status="PASS", repeat=samples, command=spec.argv,
            properties=dict(spec.properties), samples=sample_results,
            outcomes=Outcomes(command="pass", assertions="not_evaluated"),
        )  # fmt: skip
        specs.append(spec)
        results.append(result)
    return specs, results


def finalize_in_process(specs, results) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Time finalize_rows, summarize, to_document (and json.dumps, reported apart) in this process."""
    from fixtures_core.analysis.finalize import finalize_rows, summarize
    from fixtures_core.records.rundoc import FixtureResult, RunResult, to_document
    from fixtures_core.runs.ab import run_status

    t0 = time.perf_counter()
    finished = finalize_rows(specs, results, None)
    t1 = time.perf_counter()
    summary = summarize(finished, None, ("selector",))
    t2 = time.perf_counter()
    run = RunResult(
        run_id="bench", started_at="2000-01-01T00:00:00Z", finished_at="2000-01-01T00:00:01Z",
        status=run_status(specs, finished, ()), summary=summary,
        fixtures=(FixtureResult(specs[0].file, "0" * 64, tuple(finished)),),
    )  # fmt: skip
    document = to_document(run)
    t3 = time.perf_counter()
    text = json.dumps(document, indent=1, default=str)
    t4 = time.perf_counter()
    return {
        "finalize_rows_s": t1 - t0,
        "summarize_s": t2 - t1,
        "to_document_s": t3 - t2,
        "finalize_total_s": t3 - t0,
        "json_dumps_s": t4 - t3,
        "document_mb": len(text) / MB,
    }


def python() -> str:
    return sys.executable


def run_script(main: Callable[[], int]) -> None:
    """A bench script's entry point: exit with ``main()``'s code; Ctrl-C exits 130, quietly."""
    try:
        raise SystemExit(main())
    except KeyboardInterrupt:
        print("interrupted: every process this script started was stopped", file=sys.stderr)
        raise SystemExit(130) from None


def close(out: str | Path, document: dict[str, object], report: Callable[[dict[str, object]], None]) -> int:
    """Write the figures, print the report and the JSON path; exit 1 if a process was left behind."""
    path = write_json(out, document)
    report(document)
    print(f"\nJSON: {path}")
    return 1 if document.get("leftover_processes") else 0
