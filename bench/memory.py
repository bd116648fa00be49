"""Memory: a run of chatty samples, and the finalize step of a 10,000-row matrix.

    python bench/memory.py [--runs 1] [--out bench/results/memory.json]

1. Peak RSS of ``python -m flows.run`` on 20 samples (20 rows x repeat 1, 4 in
   parallel) that each print 10 MiB to stdout; assay keeps the first 1 MiB
   of each stream (the capture cap) and drains the rest. Local engine and
   Prefect engine (temporary server, as without PREFECT_API_URL). The same
   run of ``true`` is measured too, so the cost of the output is visible.
2. Peak RSS and time of the finalize step (finalize_rows + summarize +
   to_document) on a synthetic matrix built in-process (default 10,000 rows
   x 1 sample, no metrics: "fast rows"), in a child process that does
   nothing else. The peak of the finalize step alone is exact: the kernel's
   RSS high-water mark is reset (``/proc/self/clear_refs``) after the
   objects are built, and read after finalize.

3. Peak RSS against the number of samples (issue 31): 40 and then 400 rows
   x 1 sample, each printing 2 MiB (above the 1 MiB capture cap), local and
   Prefect engines. Memory is bounded by the capture cap when the 400-sample
   run peaks within 1.5x of the 40-sample run (``--parts 3`` runs only this).
4. The CEL ``files`` map (issue 42): each sample writes 64 files of 1 MiB
   under ``ASSAY_TMPDIR`` (ASCII text, or random bytes), with 1 and then 4
   samples in flight (local engine), checked by an expression that reads one
   file's text (``files["f00.txt"]``, and ``size(files)``), by one that reads
   every text (``files.all(k, files[k].size() > 0)``), and by one that does
   not name ``files`` (the floor). ``--source DIR`` measures another checkout
   of assay (``--source /work/main`` gives the figures before the change).

See bench/README.md for what each figure means.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

ROWS = 20
OUTPUT_BYTES = 10 * 1024 * 1024
TARGET_RUN_MB = 300.0
SCALING_COUNTS = (40, 400)
SCALING_BYTES = 2 * 1024 * 1024
SCALING_BOUND = 1.5  # the 400-sample run's peak RSS over the 40-sample run's
FILES_COUNT, FILES_BYTES = 64, 1024 * 1024
FILES_IN_FLIGHT = (1, 4)
FILES_CHECKS = {
    "none": "exitCode == 0",
    "one": 'files["f00.txt"].size() > 0 && size(files) == 64',
    "every": "files.all(k, files[k].size() > 0)",
}
FILES_CONTENT = {
    "text": "open(p, 'w').write('0123456789abcdef' * (B // 16))",
    "binary": "open(p, 'wb').write(os.urandom(B))",
}


def chatty_fixture(folder: Path, rows: int, output_bytes: int, name: str = "chatty") -> Path:
    script = f"yes 0123456789abcdef | head -c {output_bytes}"
    lines = ["---", "exec: sh", "args:", "  - -c", f'  - "{script}"', "timeout: 120s", "---", "",
             "# memory bench: every sample prints a lot", "", "| Name |", "|------|"]  # fmt: skip
    lines += [f"| chatty-{i:03d} |" for i in range(rows)]
    path = folder / f"{name}.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def quiet_fixture(folder: Path, rows: int) -> Path:
    lines = ["---", 'exec: "true"', "---", "", "| Name |", "|------|"] + [f"| quiet-{i:02d} |" for i in range(rows)]
    path = folder / "quiet.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_document_facts(state: Path) -> dict[str, object]:
    """What the run kept: status, how many samples were truncated, stdout sizes, evidence on disk."""
    latest = state / "latest.json"
    if not latest.is_file():
        return {"error": "no latest.json"}
    document = json.loads(latest.read_text(encoding="utf-8"))
    samples = [s for f in document["fixtures"] for r in f["rows"] for s in r.get("samples", [])]
    disk = sum(p.stat().st_size for p in state.rglob("*") if p.is_file())
    return {
        "status": document.get("status"),
        "samples": len(samples),
        "truncated_samples": sum(bool(s.get("truncated")) for s in samples),
        "max_stdout_chars": max((len(s.get("stdout", "")) for s in samples), default=0),
        "state_folder_mb": disk / c.MB,
    }


def run_variant(name: str, fixture: Path, engine: str, work: Path, runs: int, timeout: float) -> dict[str, object]:
    home = work / f"prefect-home-{engine}"  # one per engine: the first Prefect run creates its database
    env = c.child_env(prefect_home=home)
    measured = []
    facts: dict[str, object] = {}
    for n in range(runs):
        state = work / f"state-{name}-{n}"
        argv = [c.python(), "-m", "flows.run", str(fixture), "--out", str(state), "--engine", engine]
        done = c.measure(argv, env=env, cwd=work, timeout=timeout)
        print(f"  {name} run {n + 1}: {done.wall_s:.2f} s, exit {done.returncode}, RSS {done.root_hwm_mb:.0f} MB, "
              f"tree {done.tree_peak_mb:.0f} MB", file=sys.stderr)  # fmt: skip
        measured.append(done)
        facts = run_document_facts(state)
        if done.returncode not in (0, 1):  # 1 would be a FAIL verdict, still a complete run
            return {"error": f"exit {done.returncode}: {done.stderr_tail[-600:]}", "runs": [done.brief()]}
    return {
        "engine": engine,
        "wall_s": c.median([m.wall_s for m in measured]),
        "peak_rss_mb": c.median([m.root_hwm_mb for m in measured]),
        "tree_peak_mb": c.median([m.tree_peak_mb for m in measured]),
        "wait4_max_rss_mb": c.median([m.max_rss_mb for m in measured]),
        "run": facts,
        "runs": [m.brief() for m in measured],
    }


# --- finalize child --------------------------------------------------------------------


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def finalize_child(rows: int, samples: int, metrics: int, trace: bool) -> None:
    """Build the synthetic matrix, reset the RSS high-water mark, finalize; print JSON figures."""
    import fixtures_core.analysis.finalize  # noqa: F401 - imports are not part of the measurement
    import fixtures_core.records.rundoc  # noqa: F401

    rss_imported = _status_kb("VmRSS")
    t0 = time.perf_counter()
    specs, results = c.synthetic_matrix(rows, samples, metrics)
    build_s = time.perf_counter() - t0
    rss_built = _status_kb("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        hwm_reset = True
    except OSError:
        hwm_reset = False
    rss_start = _status_kb("VmRSS")
    if trace:
        import tracemalloc

        tracemalloc.start()
    timings = c.finalize_in_process(specs, results)
    figures: dict[str, object] = {"rows": rows, "samples": samples, "metrics": metrics, "build_s": build_s, **timings}
    if trace:
        import tracemalloc

        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        figures["tracemalloc_peak_mb"] = peak / c.MB
    hwm = _status_kb("VmHWM")
    figures.update(
        rss_after_imports_mb=rss_imported / 1024,
        rss_after_build_mb=rss_built / 1024,
        hwm_reset=hwm_reset,
        process_peak_rss_mb=hwm / 1024,
        finalize_peak_extra_mb=(hwm - rss_start) / 1024 if hwm_reset else None,
    )
    print(json.dumps(figures))


def run_finalize(shape: tuple[int, int, int], trace: bool, timeout: float, cwd: Path) -> dict[str, object]:
    rows, samples, metrics = shape
    argv = [c.python(), str(Path(__file__).resolve()), "--finalize-child", f"{rows}x{samples}x{metrics}"]
    if trace:
        argv.append("--tracemalloc")
    done = c.measure(argv, env=c.child_env(), cwd=cwd, timeout=timeout)
    figures = c.last_json_line(done.stdout)
    if not done.ok or figures is None:
        return {"error": f"exit {done.returncode}: {done.stderr_tail[-800:]}"}
    figures["child_wall_s"] = done.wall_s
    figures["child_peak_rss_mb"] = done.root_hwm_mb
    return figures


def parse_shape(text: str) -> tuple[int, int, int]:
    try:
        rows, samples, metrics = (int(p) for p in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ROWSxSAMPLESxMETRICS, e.g. 10000x1x0, got {text!r}") from None
    if rows < 1 or samples < 1 or metrics < 0:
        raise argparse.ArgumentTypeError(f"rows and samples must be >= 1, metrics >= 0: {text!r}")
    return rows, samples, metrics


def run_scaling(engines: list[str], work: Path, runs: int, timeout: float) -> dict[str, object]:
    """Part 3: the same chatty sample 40 and 400 times, per engine; the peak RSS ratio of the two."""
    figures: dict[str, object] = {}
    for engine in engines:
        for count in SCALING_COUNTS:
            name = f"{engine}-{count}x2MiB"
            print(f"scaling: {name}", file=sys.stderr)
            fixture = chatty_fixture(work, count, SCALING_BYTES, f"scaling-{count}")
            figures[name] = run_variant(name, fixture, engine, work, runs, timeout)
    return figures


def files_fixture(folder: Path, content: str, check: str, in_flight: int) -> Path:
    """``in_flight`` rows (run with ``--parallel`` as many), each writing ``FILES_COUNT`` files of
    ``FILES_BYTES`` and checking them with ``FILES_CHECKS[check]``."""
    write = FILES_CONTENT[content]
    script = (f"import os; B = {FILES_BYTES}; d = os.environ['ASSAY_TMPDIR']; "
              f"[(lambda p: {write})(os.path.join(d, 'f%02d.txt' % i)) for i in range({FILES_COUNT})]")  # fmt: skip
    rows = "".join(f"| files-{i} | `{FILES_CHECKS[check]}` |\n" for i in range(in_flight))
    path = folder / f"files-{content}-{check}-{in_flight}.md"
    path.write_text(f"---\nexec: python3\nargs: {json.dumps(['-c', script])}\ntimeout: 300s\n---\n\n"
                    f"| Name | CEL |\n|---|---|\n{rows}", encoding="utf-8")  # fmt: skip
    return path


def run_files(work: Path, runs: int, timeout: float, source: Path | None) -> dict[str, object]:
    """Part 4: peak RSS of samples whose checks read the ``files`` map, per content, check and samples in flight."""
    env = c.child_env(PYTHONPATH=str(source)) if source is not None else c.child_env()
    figures: dict[str, object] = {}
    for content in FILES_CONTENT:
        for check in FILES_CHECKS:
            for in_flight in FILES_IN_FLIGHT:
                name = f"{content}-{check}-{in_flight}"
                fixture = files_fixture(work, content, check, in_flight)
                measured = []
                for n in range(runs):
                    argv = [c.python(), "-m", "flows.run", str(fixture), "--out", str(work / f"state-{name}-{n}"),
                            "--engine", "local", "--parallel", str(in_flight)]  # fmt: skip
                    done = c.measure(argv, env=env, cwd=work, timeout=timeout)
                    print(f"  files {name} run {n + 1}: {done.wall_s:.1f} s, exit {done.returncode}, "
                          f"RSS {done.root_hwm_mb:.0f} MB", file=sys.stderr)  # fmt: skip
                    if done.returncode != 0:
                        figures[name] = {"error": f"exit {done.returncode}: {done.stdout_tail[-400:]}"}
                        break
                    measured.append(done)
                else:
                    figures[name] = {"peak_rss_mb": c.median([m.root_hwm_mb for m in measured]),
                                     "wall_s": c.median([m.wall_s for m in measured])}  # fmt: skip
    return {"source": str(source or c.REPO), "runs": figures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1, help="runs of each engine variant; the median is kept (1)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "memory.json"), help="JSON file")
    parser.add_argument("--engines", default="local,prefect", help="engines for parts 1 and 3 (local,prefect)")
    parser.add_argument("--parts", default="1,2,3,4", help="which parts to run (1,2,3,4)")
    parser.add_argument("--source", type=Path, help="part 4: the checkout of assay to measure (this one)")
    parser.add_argument(
        "--finalize-shape", type=parse_shape, action="append", metavar="RxSxM",
        help="synthetic matrix for part 2, rows x samples x metrics; repeatable (10000x1x0)",
    )  # fmt: skip
    parser.add_argument("--no-tracemalloc", action="store_true", help="skip the tracemalloc pass of part 2")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one child is killed (300)")
    parser.add_argument("--finalize-child", type=parse_shape, help=argparse.SUPPRESS)
    parser.add_argument("--tracemalloc", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.finalize_child:
        finalize_child(*args.finalize_child, trace=args.tracemalloc)
        return 0
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    c.raise_on_sigterm()
    shapes = args.finalize_shape or [(10_000, 1, 0)]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    work = Path(tempfile.mkdtemp(prefix="assay-bench-memory-"))
    document: dict[str, object] = {"machine": c.machine(), "rows": ROWS, "output_bytes_per_sample": OUTPUT_BYTES}
    parts = {p.strip() for p in args.parts.split(",")}
    try:
        runs: dict[str, object] = {}
        if "1" in parts:
            chatty, quiet = chatty_fixture(work, ROWS, OUTPUT_BYTES), quiet_fixture(work, ROWS)
            for engine in engines:
                print(f"run: {engine} engine", file=sys.stderr)
                runs[f"{engine}-10MiB"] = run_variant(f"{engine}-10MiB", chatty, engine, work, args.runs, args.timeout)
                runs[f"{engine}-true"] = run_variant(f"{engine}-true", quiet, engine, work, args.runs, args.timeout)
        document["runs"] = runs
        finalize: list[dict[str, object]] = []
        for shape in shapes if "2" in parts else []:
            print(f"finalize: {shape[0]} rows x {shape[1]} samples x {shape[2]} metrics", file=sys.stderr)
            figures = run_finalize(shape, False, args.timeout, work)
            if not args.no_tracemalloc and "error" not in figures:
                traced = run_finalize(shape, True, args.timeout, work)
                figures["tracemalloc_peak_mb"] = traced.get("tracemalloc_peak_mb")
            finalize.append(figures)
        document["finalize"] = finalize
        document["scaling"] = run_scaling(engines, work, args.runs, args.timeout) if "3" in parts else {}
        document["files"] = run_files(work, args.runs, args.timeout, args.source) if "4" in parts else {}
    finally:
        leftover = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = leftover
    return c.close(args.out, document, report)


def report(document: dict[str, object]) -> None:
    machine = document["machine"]  # type: ignore[index]
    print(f"\nassay memory; {machine['cpus']} CPUs, {machine['date']}")  # type: ignore[index]
    if document["runs"]:
        report_runs(document)
    if document["finalize"]:
        report_finalize(document)
    report_scaling(document.get("scaling") or {})  # type: ignore[arg-type]
    report_files(document.get("files") or {})  # type: ignore[arg-type]


def report_runs(document: dict[str, object]) -> None:
    """Part 1's table and targets."""
    print(f"1. {ROWS} samples, each printing {OUTPUT_BYTES // c.MB} MiB to stdout (capture cap keeps 1 MiB); "
          "`-true` = same run of `true`")  # fmt: skip
    rows = []
    for name, v in document["runs"].items():  # type: ignore[union-attr]
        if "error" in v:
            rows.append([name, v["error"][:60], None, None, None, None, None])
            continue
        run = v["run"]
        rows.append([name, v["wall_s"], v["peak_rss_mb"], v["tree_peak_mb"], run.get("truncated_samples"),
                     run.get("max_stdout_chars"), run.get("state_folder_mb")])  # fmt: skip
    print(c.table(["run", "wall s", "peak RSS MB", "tree PSS MB", "truncated", "max stdout", "state MB"], rows))
    for name, v in document["runs"].items():  # type: ignore[union-attr]
        if name.endswith("10MiB") and "peak_rss_mb" in v:
            met = v["peak_rss_mb"] <= TARGET_RUN_MB
            print(f"  [{'met ' if met else 'MISS'}] {name}: peak RSS {v['peak_rss_mb']:.0f} MB (<= {TARGET_RUN_MB:g})"
                  f"; whole tree {v['tree_peak_mb']:.0f} MB")  # fmt: skip


def report_finalize(document: dict[str, object]) -> None:
    """Part 2's table."""
    print("\n2. finalize step (finalize_rows + summarize + to_document), synthetic rows, in a child process")
    rows = []
    for f in document["finalize"]:  # type: ignore[union-attr]
        if "error" in f:
            rows.append(["-", f["error"][:60]] + [None] * 6)
            continue
        rows.append([f"{f['rows']}x{f['samples']}x{f['metrics']}", f["finalize_total_s"], f["json_dumps_s"],
                     f["finalize_peak_extra_mb"], f.get("tracemalloc_peak_mb"), f["rss_after_build_mb"],
                     f["process_peak_rss_mb"], f["document_mb"]])  # fmt: skip
    print(c.table(["rows x smp x met", "finalize s", "json s", "peak +MB", "tracemalloc MB", "RSS built MB",
                   "process peak MB", "doc MB"], rows))  # fmt: skip


def report_scaling(scaling: dict[str, dict[str, object]]) -> None:
    """Part 3's table, and whether each engine's 400-sample peak is within the bound of its 40-sample peak."""
    if not scaling:
        return
    few, many = SCALING_COUNTS
    print(f"\n3. {few} then {many} samples, each printing {SCALING_BYTES // c.MB} MiB (capture cap keeps 1 MiB)")
    rows = []
    for name, v in scaling.items():
        if "error" in v:
            rows.append([name, str(v["error"])[:60], None, None, None])
            continue
        run = v["run"]
        assert isinstance(run, dict)
        rows.append([name, v["wall_s"], v["peak_rss_mb"], v["tree_peak_mb"], run.get("samples")])
    print(c.table(["run", "wall s", "peak RSS MB", "tree PSS MB", "samples"], rows))
    for engine in sorted({name.split("-")[0] for name in scaling}):
        small, large = scaling.get(f"{engine}-{few}x2MiB", {}), scaling.get(f"{engine}-{many}x2MiB", {})
        if "peak_rss_mb" not in small or "peak_rss_mb" not in large:
            continue
        ratio = float(large["peak_rss_mb"]) / float(small["peak_rss_mb"])  # type: ignore[arg-type]
        met = ratio <= SCALING_BOUND
        print(f"  [{'met ' if met else 'MISS'}] {engine}: {many} samples peak {large['peak_rss_mb']:.0f} MB = "
              f"{ratio:.2f}x the {few}-sample peak {small['peak_rss_mb']:.0f} MB (<= {SCALING_BOUND}x)")  # fmt: skip


def report_files(files: dict[str, object]) -> None:
    """Part 4's table: peak RSS per content and check, by samples in flight."""
    if not files:
        return
    runs = files["runs"]
    assert isinstance(runs, dict)
    print(f"\n4. the CEL files map: each sample writes {FILES_COUNT} files of {FILES_BYTES // c.MB} MiB; "
          f"peak RSS MB by samples in flight ({files['source']})")  # fmt: skip
    rows = []
    for content in FILES_CONTENT:
        for check, expression in FILES_CHECKS.items():
            cells: list[object] = [content, expression]
            for in_flight in FILES_IN_FLIGHT:
                figures = runs.get(f"{content}-{check}-{in_flight}", {})
                cells.append(figures.get("peak_rss_mb", str(figures.get("error", "-"))[:30]))
            rows.append(cells)
    print(c.table(["content", "check", *(f"{n} in flight" for n in FILES_IN_FLIGHT)], rows))


if __name__ == "__main__":
    c.run_script(main)
