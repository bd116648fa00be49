"""Latency-bound matrices: wall time against the concurrency a provider allows.

A paid provider's sample takes seconds and costs almost no CPU here; what
matters is how many are in flight. The matrix: 4 rows x 16 samples, each a
0.25 s sleep (16 s of work), at concurrency 8: ideally 2.0 s plus the
engine's fixed start-up cost. The start-up cost is measured the same way on
the same matrix with samples that do not sleep (``true``), so

    goal:  wall(sleep)  <=  1.3 x (ideal + wall(true))

Variants, side by side in one invocation (a brand-new Prefect home; its
local server on a free port, started before the timed rounds):

  local         python -m flows.run M --engine local --concurrency 8
  reused        python -m flows.run M --concurrency 8 (the default engine, the home's server running)
  serial        as local, with ``serial: true`` and --parallel 8: only rows in parallel (the "before" figure)
  promptfoo     promptfoo eval, exec provider sleeping 0.25 s, 4 tests x --repeat 16, -j 8 (when on PATH)

Every variant also runs on the zero-latency matrix (``true``) to give its start-up cost.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

ROWS, REPEAT, SLEEP_S, CONCURRENCY = 4, 16, 0.25, 8
IDEAL_S = ROWS * REPEAT * SLEEP_S / CONCURRENCY
GOAL = 1.3


def matrix(folder: Path, command: str, serial: bool = False) -> Path:
    """4 rows x 16 samples of ``command``."""
    body = "\n".join(f"| row {i} | {command} |" for i in range(ROWS))
    front = f"---\nrepeat: {REPEAT}\nserial: {'true' if serial else 'false'}\n---\n\n"  # false: samples at once
    path = folder / f"{command.split()[0]}{'-serial' if serial else ''}.md"
    path.write_text(f"{front}| Name | Command |\n|------|---------|\n{body}\n", encoding="utf-8")
    return path


def promptfoo_config(folder: Path, command: str) -> Path:
    script = folder / f"provider-{command.split()[0]}.sh"
    script.write_text(f"#!/bin/sh\n{command}\necho ok\n", encoding="utf-8")
    script.chmod(0o755)
    tests = "\n".join(f"  - vars: {{i: {i}}}" for i in range(ROWS))
    path = folder / f"promptfoo-{command.split()[0]}.yaml"
    path.write_text(
        f'description: assay latency bench\nprompts:\n  - "sample {{{{i}}}}"\nproviders:\n  - "exec: {script}"\n'
        f"tests:\n{tests}\n",
        encoding="utf-8",
    )
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds of every variant; medians reported (3)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "latency.json"), help="JSON file")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one child is killed (300)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be >= 1")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-latency-"))
    home = work / "prefect-home"
    try:
        document = run_all(args, work, home)
    finally:
        from flows.server.local import stop

        stop(home.resolve())
        after = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = after
    return c.close(args.out, document, print_report)


def run_all(args: argparse.Namespace, work: Path, home: Path) -> dict[str, object]:
    py = c.python()
    env = c.child_env(prefect_home=home, server="local", ASSAY_PREFECT_PORT=str(c.free_port()))
    sleeping, instant = f"sleep {SLEEP_S}", "true"
    document: dict[str, object] = {"machine": c.machine(), "rounds": args.rounds, "ideal_s": IDEAL_S,
                                   "matrix": f"{ROWS} rows x {REPEAT} samples of {sleeping}, concurrency "
                                             f"{CONCURRENCY}"}  # fmt: skip
    start = c.measure([py, "-m", "flows.run", "server", "start"], env=env, cwd=work, timeout=args.timeout)
    if not start.ok:
        raise SystemExit(f"the local Prefect server did not start: {start.stderr_tail}")

    def assay(command: str, *extra: str, serial: bool = False) -> Callable[[], c.Measured]:
        argv = [py, "-m", "flows.run", str(matrix(work, command, serial)), "--out", str(work / "state"), *extra]
        return lambda: c.measure(argv, env=env, cwd=work, timeout=args.timeout)

    slots = ["--concurrency", str(CONCURRENCY)]
    variants: dict[str, Callable[[], c.Measured]] = {}
    for name, command in (("sleep", sleeping), ("true", instant)):
        variants[f"local/{name}"] = assay(command, "--engine", "local", *slots)
        variants[f"reused/{name}"] = assay(command, *slots)
        variants[f"serial/{name}"] = assay(command, "--engine", "local", "--parallel", str(CONCURRENCY), serial=True)
    promptfoo = shutil.which("promptfoo")
    if promptfoo is not None:
        pf_env = c.child_env(PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                             PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-home"))  # fmt: skip
        for name, command in (("sleep", sleeping), ("true", instant)):
            pf_argv = [promptfoo, "eval", "-c", str(promptfoo_config(work, command)), "--no-cache", "--no-table",
                       "--no-progress-bar", "-j", str(CONCURRENCY), "--repeat", str(REPEAT),
                       "-o", str(work / f"promptfoo-{name}.json")]  # fmt: skip
            variants[f"promptfoo/{name}"] = lambda argv=pf_argv: c.measure(  # type: ignore[misc]
                argv, env=pf_env, cwd=work, timeout=args.timeout
            )
        document["promptfoo_version"] = c.measure([promptfoo, "--version"], env=c.child_env()).stdout.strip()
    else:
        document["promptfoo"] = "not on PATH (npm i -g promptfoo): skipped"

    measured: dict[str, list[c.Measured]] = {key: [] for key in variants}
    for number in range(args.rounds):
        print(f"round {number + 1} of {args.rounds}", file=sys.stderr)
        for key, variant in variants.items():
            measured[key].append(variant())
    document["variants"] = {
        key: {
            "wall_s": c.spread([m.wall_s for m in runs]),
            "exit_codes": sorted({m.returncode for m in runs}, key=str),
            "runs": [m.brief() for m in runs],
        }  # fmt: skip
        for key, runs in measured.items()
    }
    return document


def print_report(document: dict[str, object]) -> None:
    machine = document["machine"]  # type: ignore[index]
    variants: dict[str, dict[str, object]] = document["variants"]  # type: ignore[assignment]
    ideal = float(document["ideal_s"])  # type: ignore[arg-type]
    print(f"\nassay latency bench: {document['matrix']}; {machine['cpus']} CPUs, load {machine['loadavg']}, "  # type: ignore[index]
          f"{machine['date']}")  # type: ignore[index]  # fmt: skip
    rows = []
    for system in ("local", "reused", "serial", "promptfoo"):
        if f"{system}/sleep" not in variants:
            continue
        wall = variants[f"{system}/sleep"]["wall_s"]["median"]  # type: ignore[index]
        startup = variants[f"{system}/true"]["wall_s"]["median"]  # type: ignore[index]
        bound = GOAL * (ideal + startup)
        exits = ",".join(map(str, variants[f"{system}/sleep"]["exit_codes"]))  # type: ignore[call-overload]
        met = ("met" if wall <= bound else "MISSED") if system != "serial" else "(before)"
        rows.append([system, wall, startup, ideal + startup, wall / (ideal + startup), met, exits])
    print(c.table(["system", "wall s", "start-up s", "ideal+start-up s", "x ideal+start-up",
                   f"goal {GOAL}x", "exit"], rows))  # fmt: skip


if __name__ == "__main__":
    c.run_script(main)
