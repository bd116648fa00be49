"""Hostile input: how fast assay refuses a YAML bomb, a FIFO, /dev/zero and friends, and with what.

    python bench/hostile.py [--runs 3] [--out bench/results/hostile.json]

Each case runs the real command line (``python -m flows.run``) in a fresh
child process, so a figure is what a user waits for: interpreter start,
imports, the refusal. A second figure, "in process", is ``flows.run.main``
alone, timed inside a child that has already imported it: the refusal
itself, without the interpreter's start (which a loaded machine stretches).
Printed per case: the exit code, both times (medians of ``--runs``), the
peak RSS, and the one line on stderr.
Issue 14 wants each of the first three under a second with one line; this
script shows the figures, it does not judge them (see bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

ROW = "| Name | Command |\n|---|---|\n| a | `true` |\n"
BOMB = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 9)
)  # 9^9 = 387,420,489 strings once expanded


def cases(work: Path) -> dict[str, list[str]]:
    """Case name -> command-line arguments (files made under ``work``)."""
    (work / "bomb.md").write_text(f"---\n{BOMB}---\n\n{ROW}")
    (work / "deep.md").write_text("---\nx: " + "[" * 100_000 + "]" * 100_000 + f"\n---\n\n{ROW}")
    os.mkfifo(work / "fifo.md")
    with open(work / "big.md", "wb") as handle:
        handle.truncate(64 * c.MB)  # sparse
    (work / "deep.json").write_text('{"schema": "assay.run/v1", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (work / "ok.md").write_text(ROW)
    baseline = ["run", str(work / "ok.md"), "--engine", "local", "--out", str(work / "state"), "--baseline"]
    return {
        "YAML bomb (billion laughs)": ["validate", str(work / "bomb.md")],
        "FIFO as fixture": ["validate", str(work / "fifo.md")],
        "/dev/zero as fixture": ["validate", "/dev/zero"],
        "YAML nested 100,000 deep": ["validate", str(work / "deep.md")],
        "64 MiB fixture": ["validate", str(work / "big.md")],
        "/dev/zero as baseline": [*baseline, "/dev/zero"],
        "JSON nested 100,000 deep as baseline": [*baseline, str(work / "deep.json")],
        "valid fixture (reference)": ["validate", str(work / "ok.md")],
    }


IN_PROCESS = """
import json, sys, time
import flows.run
started = time.perf_counter()
code = flows.run.main(sys.argv[1:])
print(json.dumps({"code": code, "in_process_s": time.perf_counter() - started}))
"""


def measure_case(argv: list[str], runs: int, timeout: float) -> dict[str, object]:
    inside = [
        c.last_json_line(c.measure([c.python(), "-c", IN_PROCESS, *argv], env=c.child_env(), cwd=c.REPO).stdout)
        for _ in range(runs)
    ]
    measured = [
        c.measure([c.python(), "-m", "flows.run", *argv], env=c.child_env(), cwd=c.REPO, timeout=timeout)
        for _ in range(runs)
    ]
    if any(m.timed_out for m in measured):
        return {"error": f"no answer within {timeout:g} s"}
    times = [m.wall_s for m in measured]
    return {
        "exit_codes": sorted({m.returncode for m in measured if m.returncode is not None}),
        "wall_s": c.median(times),
        **{f"wall_{k}_s": v for k, v in c.spread(times).items()},
        "in_process_s": c.median([float(i["in_process_s"]) for i in inside if i]),  # type: ignore[arg-type]
        "peak_rss_mb": c.median([m.root_hwm_mb for m in measured]),
        "stderr": sorted({m.stderr_tail for m in measured}),
    }


def report(document: dict[str, object]) -> None:
    results = document["cases"]
    assert isinstance(results, dict)
    rows = []
    for name, result in results.items():
        if "error" in result:
            rows.append((name, "-", result["error"], "", ""))
            continue
        lines = str(result["stderr"][0]).splitlines() if result["stderr"] else []
        rows.append((
            name, ",".join(map(str, result["exit_codes"])), f"{result['wall_s']:.2f}",
            f"{result['wall_min_s']:.2f}-{result['wall_max_s']:.2f}", f"{result['in_process_s'] * 1000:.1f}",
            f"{result['peak_rss_mb']:.0f}",
            f"{len(lines)}: {(lines or [''])[-1][:100]}",
        ))  # fmt: skip
    headers = ("case", "exit", "wall s", "min-max", "in process ms", "peak RSS MB", "stderr lines: the last")
    print(c.table(headers, rows))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per case; median kept (3)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a case is given up (60)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "hostile.json"), help="JSON file")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-hostile-"))
    document: dict[str, object] = {"machine": c.machine(), "runs": args.runs}
    try:
        document["cases"] = {name: measure_case(argv, args.runs, args.timeout) for name, argv in cases(work).items()}
    finally:
        document["leftover_processes"] = c.kill_leftovers()
        subprocess.run(["rm", "-rf", str(work)], check=False)
    return c.close(args.out, document, report)


if __name__ == "__main__":
    c.run_script(main)
