"""Scale: parse + validate of a big fixture file, and finalize of a big matrix, at growing sizes.

    python bench/scale.py [--sizes 1000,2500,5000,10000] [--out bench/results/scale.json]

1. Parse + validate (fixtures_core.parsing.matrix.load_matrix + fixtures_core.parsing.validate.validate_matrix)
   of one generated fixture file of N table rows: templated exec/args, three
   frontmatter metrics (one with a baseline row and regressionPercent), a
   CEL column. Two flavours: ``shared`` (every row has the same CEL, as most
   matrices do; compiled once thanks to the compile cache) and ``distinct``
   (every row's CEL differs: one compile per row, the worst case).
2. Finalize (finalize_rows + summarize + to_document) of a synthetic run of N
   rows x 5 samples x 3 metrics (built in-process, nothing runs).

Every measurement runs in a fresh child process (no warm caches across sizes)
and excludes imports. Time per row at each size shows whether growth is
linear: per-row time should stay flat. See bench/README.md.
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

TARGET_PARSE_S = 3.0
FRONTMATTER = """---
exec: python3
args: ["{{ .sourceDir }}/agent.py", "{{ .prompt }}", "--runtime", "{{ .selector }}"]
repeat: 5
timeout: 60s
metrics:
  - name: tokens
    extract: json.usage.tokens
    unit: tokens
    aggregate: median
  - name: duration_ms
    extract: json.durationMs
    unit: ms
    aggregate: median
    direction: lower
    baseline: row-00000
    threshold:
      regressionPercent: 25
      max: 120000
  - name: cost_usd
    extract: json.costUsd
    unit: usd
    gate: false
---

# scale bench

| Name | selector | prompt | CEL Validation |
|------|----------|--------|----------------|
"""


def fixture(folder: Path, rows: int, distinct: bool) -> Path:
    def cel(i: int) -> str:
        return f'json.state == "ok" && size(stdout) < {100000 + i if distinct else 100000}'

    lines = [f"| row-{i:05d} | api-{i % 7} | prompt-{i % 13} | {cel(i)} |" for i in range(rows)]
    path = folder / f"scale-{rows}-{'distinct' if distinct else 'shared'}.md"
    path.write_text(FRONTMATTER + "\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- children ----------------------------------------------------------------------------


def parse_child(path: str) -> None:
    from fixtures_core.parsing.matrix import load_matrix
    from fixtures_core.parsing.validate import validate_matrix

    t0 = time.perf_counter()
    matrix = load_matrix([path])
    t1 = time.perf_counter()
    errors = validate_matrix(matrix)
    t2 = time.perf_counter()
    print(json.dumps({"rows": len(matrix.rows), "errors": [str(e) for e in errors[:3]], "parse_s": t1 - t0,
                      "validate_s": t2 - t1, "total_s": t2 - t0}))  # fmt: skip


def finalize_child(rows: int, samples: int, metrics: int) -> None:
    import fixtures_core.analysis.finalize  # noqa: F401 - imports are not part of the measurement
    import fixtures_core.records.rundoc  # noqa: F401

    specs, results = c.synthetic_matrix(rows, samples, metrics)
    print(json.dumps({"rows": rows, **c.finalize_in_process(specs, results)}))


def child(argv: list[str], timeout: float, cwd: Path) -> dict[str, object]:
    done = c.measure([c.python(), str(Path(__file__).resolve()), *argv], env=c.child_env(), cwd=cwd, timeout=timeout)
    figures = c.last_json_line(done.stdout)
    if not done.ok or figures is None:
        return {"error": f"exit {done.returncode}{' (timed out)' if done.timed_out else ''}: {done.stderr_tail[-600:]}"}
    figures["peak_rss_mb"] = done.root_hwm_mb
    return figures


# --- main ----------------------------------------------------------------------------------


def growth(points: list[dict[str, object]], key: str) -> dict[str, object]:
    """Per-row time at each size and the ratio largest/smallest (1.0 = perfectly linear)."""
    good = [p for p in points if key in p]
    if len(good) < 2:
        return {}
    per_row = [float(p[key]) / int(p["rows"]) for p in good]  # type: ignore[arg-type]
    ratio = per_row[-1] / per_row[0]
    return {"per_row_ratio_largest_to_smallest": ratio, "linear": ratio < 1.5}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,2500,5000,10000", help="row counts (1000,2500,5000,10000)")
    parser.add_argument("--runs", type=int, default=3, help="parse+validate runs per size; median kept (3)")
    parser.add_argument("--finalize-runs", type=int, default=1, help="finalize runs per size; median kept (1)")
    parser.add_argument("--samples", type=int, default=5, help="samples per row in the finalize part (5)")
    parser.add_argument("--metrics", type=int, default=3, help="metrics per row in the finalize part (3)")
    parser.add_argument("--skip-finalize", action="store_true", help="only the parse + validate part")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before one child is killed (600)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "scale.json"), help="JSON file")
    parser.add_argument("--parse-child", help=argparse.SUPPRESS)
    parser.add_argument("--finalize-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.parse_child:
        parse_child(args.parse_child)
        return 0
    if args.finalize_child:
        finalize_child(*(int(p) for p in args.finalize_child.split("x")))
        return 0
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if not sizes or sizes[0] < 1 or args.runs < 1 or args.finalize_runs < 1:
        parser.error("sizes and run counts must be >= 1")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-scale-"))
    document: dict[str, object] = {"machine": c.machine(), "sizes": sizes}
    try:
        parse: dict[str, list[dict[str, object]]] = {"shared": [], "distinct": []}
        for flavour in parse:
            for size in sizes:
                path = fixture(work, size, flavour == "distinct")
                runs = [child(["--parse-child", str(path)], args.timeout, work) for _ in range(args.runs)]
                good = [r for r in runs if "error" not in r]
                if not good:
                    parse[flavour].append({"rows": size, "error": runs[0]["error"]})
                    continue
                point = {"rows": size, "file_mb": path.stat().st_size / c.MB,
                         "errors": good[0]["errors"], "peak_rss_mb": c.median([r["peak_rss_mb"] for r in good])}  # type: ignore[misc]  # fmt: skip
                for key in ("parse_s", "validate_s", "total_s"):
                    point[key] = c.median([float(r[key]) for r in good])  # type: ignore[arg-type]
                parse[flavour].append(point)
                print(f"  parse+validate {flavour} {size}: {point['total_s']:.3f} s", file=sys.stderr)
                path.unlink()
        document["parse_validate"] = {f: {"points": p, **growth(p, "total_s")} for f, p in parse.items()}
        if not args.skip_finalize:
            points: list[dict[str, object]] = []
            shape = f"{args.samples}x{args.metrics}"
            for size in sizes:
                runs = [child(["--finalize-child", f"{size}x{shape}"], args.timeout, work)
                        for _ in range(args.finalize_runs)]  # fmt: skip
                good = [r for r in runs if "error" not in r]
                if not good:
                    points.append({"rows": size, "error": runs[0]["error"]})
                    continue
                point = {"rows": size}
                for key in ("finalize_rows_s", "summarize_s", "to_document_s", "finalize_total_s", "json_dumps_s",
                            "document_mb", "peak_rss_mb"):  # fmt: skip
                    point[key] = c.median([float(r[key]) for r in good])  # type: ignore[arg-type]
                points.append(point)
                print(f"  finalize {size}x{shape}: {point['finalize_total_s']:.3f} s", file=sys.stderr)
            document["finalize"] = {"samples": args.samples, "metrics": args.metrics, "points": points,
                                    **growth(points, "finalize_total_s")}  # fmt: skip
    finally:
        leftover = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = leftover
    return c.close(args.out, document, report)


def report(document: dict[str, object]) -> None:
    machine = document["machine"]  # type: ignore[index]
    print(f"\nassay scale; {machine['cpus']} CPUs, {machine['date']}; each figure in a fresh child, imports excluded")  # type: ignore[index]
    print("\n1. parse + validate of one fixture file (load_matrix + validate_matrix)")
    rows = []
    for flavour, data in document["parse_validate"].items():  # type: ignore[union-attr]
        for p in data["points"]:
            if "error" in p:
                rows.append([flavour, p["rows"], p["error"][:50]] + [None] * 5)
                continue
            errors = "; ".join(p["errors"])[:40] or "none"
            rows.append([flavour, p["rows"], p["parse_s"], p["validate_s"], p["total_s"],
                         p["total_s"] / p["rows"] * 1e6, p["peak_rss_mb"], errors])  # fmt: skip
    print(c.table(["CEL", "rows", "parse s", "validate s", "total s", "us/row", "peak RSS MB", "config errors"], rows))
    for flavour, data in document["parse_validate"].items():  # type: ignore[union-attr]
        if "per_row_ratio_largest_to_smallest" in data:
            print(f"  {flavour}: per-row time largest/smallest = {data['per_row_ratio_largest_to_smallest']:.2f} "
                  f"({'linear' if data['linear'] else 'NOT linear'})")  # fmt: skip
        biggest = [p for p in data["points"] if p.get("rows") == 10_000 and "total_s" in p]
        for p in biggest:
            met = p["total_s"] <= TARGET_PARSE_S
            print(f"  [{'met ' if met else 'MISS'}] {flavour}: 10,000-row parse + validate {p['total_s']:.2f} s "
                  f"(<= {TARGET_PARSE_S:g})")  # fmt: skip
    if "finalize" in document:
        f = document["finalize"]
        print(
            f"\n2. finalize (finalize_rows + summarize + to_document), rows x {f['samples']} samples x "  # type: ignore[index]
            f"{f['metrics']} metrics, synthetic"
        )  # type: ignore[index]
        rows = []
        for p in f["points"]:  # type: ignore[index]
            if "error" in p:
                rows.append([p["rows"], p["error"][:50]] + [None] * 6)
                continue
            rows.append([p["rows"], p["finalize_rows_s"], p["summarize_s"], p["to_document_s"], p["finalize_total_s"],
                         p["finalize_total_s"] / p["rows"] * 1000, p["json_dumps_s"], p["peak_rss_mb"]])  # fmt: skip
        print(c.table(["rows", "finalize_rows s", "summarize s", "to_document s", "total s", "ms/row",
                       "json s", "peak RSS MB"], rows))  # fmt: skip
        if "per_row_ratio_largest_to_smallest" in f:  # type: ignore[operator]
            print(f"  per-row time largest/smallest = {f['per_row_ratio_largest_to_smallest']:.2f} "  # type: ignore[index]
                  f"({'linear' if f['linear'] else 'NOT linear: cost grows faster than rows'})")  # type: ignore[index]  # fmt: skip


if __name__ == "__main__":
    c.run_script(main)
