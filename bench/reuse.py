"""The default engine on a reused local server, side by side with ``--rows-as-tasks``,
``--engine local``, Prefect's temporary server and promptfoo, in one run.

    python bench/reuse.py [--rounds 5] [--temporary-rounds 2] [--postgres] [--out bench/results/reuse.json]

Two matrices: ``examples/matrix.md`` (4 rows x 5 samples of the fake agent,
CEL and metrics) and 200 samples of ``true`` (20 rows x repeat 10, the
matrix of bench/overhead.py). Variants, each the whole wall time of a child
process (interpreter start to exit):

  local       python -m flows.run M --engine local
  default     python -m flows.run M           this Prefect home's local server, already up; each row a
                                              subflow run (the design card's shape, the default)
  tasks       python -m flows.run M --rows-as-tasks   the same server, each row a task run
  temporary   python -m flows.run M           with ASSAY_PREFECT_SERVER=temporary: a server per run
  promptfoo   promptfoo eval of the same 200 samples (exec provider, -j 4), when on PATH
  floor       Prefect's own floor on the same server: a child that imports Prefect and runs the
              smallest flow (one parameter, no task, heartbeat off, console quiet), nothing of assay

With ``--postgres``, ``pg-default`` and ``pg-tasks`` run the same two
commands against a Prefect server on PostgreSQL (``deployments/postgres_server.py``
in a temporary folder), interleaved with the others.

First, in a brand-new Prefect home, the script times the local server's
first start (``assay server start``: it creates the database) and the first
run on it. Then ``--rounds`` rounds run every variant once in turn
(interleaved, so a noisy machine slows all of them alike); medians per
variant. Runs follow each other at once, as a user's would: the server is
never waited idle. At the end ``assay server stop``, and a check that
nothing this script started is still running.
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
from overhead import fixture as true_fixture  # noqa: E402
from overhead import promptfoo_config  # noqa: E402

EXAMPLE = c.REPO / "examples" / "matrix.md"
ROWS, REPEAT = 20, 10
# Issue 29's goals, each a ratio of medians of the same run.
GOALS = (
    ("200/default", "200/tasks", 1.3, "200 samples: the default (row subflows) within 1.3x of --rows-as-tasks"),
    ("200/default", "200/promptfoo", 1.0, "200 samples: the default at or below promptfoo"),
    ("examples/default", "examples/local", 2.5, "examples/matrix.md: the default within 2.5x of --engine local"),
    ("pg-200/default", "pg-200/tasks", 1.3, "PostgreSQL, 200 samples: the default within 1.3x of --rows-as-tasks"),
    ("pg-examples/default", "examples/local", 2.5, "PostgreSQL, examples/matrix.md: within 2.5x of --engine local"),
)
POSTGRES_SCRIPT = c.REPO / "deployments" / "postgres_server.py"
FLOOR_CODE = """
from prefect import flow
from prefect.settings import temporary_settings

@flow(name="floor")
def smallest(x: int) -> int:
    return x

with temporary_settings(updates={"flows.heartbeat_frequency": None}):
    smallest(1)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds of local, reused, promptfoo (5)")
    parser.add_argument("--temporary-rounds", type=int, default=2, help="rounds that also run a temporary server (2)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "reuse.json"), help="JSON file")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before one child is killed (300)")
    parser.add_argument("--postgres", action="store_true", help="also run default and tasks on a PostgreSQL server")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.temporary_rounds < 0:
        parser.error("--rounds must be >= 1 and --temporary-rounds >= 0")
    c.raise_on_sigterm()
    work = Path(tempfile.mkdtemp(prefix="assay-bench-reuse-"))
    home = work / "prefect-home"
    # Not under ``work``: as root, PostgreSQL runs as the postgres user, who must reach its folder.
    postgres = Path(tempfile.mkdtemp(prefix="assay-bench-pg-")) if args.postgres else None
    try:
        document = run_all(args, work, home, postgres)
    finally:
        _stop_local_server(home)
        if postgres is not None:
            c.measure(
                [c.python(), str(POSTGRES_SCRIPT), "stop", "--dir", str(postgres)], env=c.child_env(), timeout=120
            )
            shutil.rmtree(postgres, ignore_errors=True)
        after = c.kill_leftovers()
        shutil.rmtree(work, ignore_errors=True)
    document["leftover_processes"] = after
    return c.close(args.out, document, print_report)


def _stop_local_server(home: Path) -> None:
    """Whatever happened, the local server of the bench's home is stopped (it runs in its own session)."""
    from flows.server.local import stop

    stop(home.resolve())


def run_all(args: argparse.Namespace, work: Path, home: Path, postgres: Path | None) -> dict[str, object]:
    py = c.python()
    big = true_fixture(work, ROWS, REPEAT)
    local_env = c.child_env(prefect_home=home, server="local", ASSAY_PREFECT_PORT=str(c.free_port()))
    temporary_env = c.child_env(prefect_home=work / "temporary-home")
    document: dict[str, object] = {"machine": c.machine(), "rounds": args.rounds,
                                   "temporary_rounds": args.temporary_rounds}  # fmt: skip

    def run(fixture: Path, env: dict[str, str], *extra: str) -> Callable[[], c.Measured]:
        state = work / "state"
        argv = [py, "-m", "flows.run", str(fixture), "--out", str(state), *extra]
        return lambda: c.measure(argv, env=env, cwd=work, timeout=args.timeout)

    print("first start of the local server in a brand-new Prefect home", file=sys.stderr)
    start = c.measure([py, "-m", "flows.run", "server", "start"], env=local_env, cwd=work, timeout=args.timeout)
    first = run(EXAMPLE, local_env)()
    temporary_first = run(EXAMPLE, temporary_env)()  # creates the temporary home's database
    document["first"] = {
        "server_start_s": start.wall_s, "server_start_ok": start.ok,
        "first_run_s": first.wall_s, "first_run_exit": first.returncode,
        "temporary_first_run_s": temporary_first.wall_s, "temporary_first_run_exit": temporary_first.returncode,
    }  # fmt: skip

    from flows.server.local import find

    server = find(home.resolve())
    assert server is not None, start.stderr_tail
    floor_env = c.child_env(prefect_home=home, api_url=server.api_url)
    variants: dict[str, Callable[[], c.Measured]] = {
        "examples/local": run(EXAMPLE, local_env, "--engine", "local"),
        "examples/default": run(EXAMPLE, local_env),
        "examples/tasks": run(EXAMPLE, local_env, "--rows-as-tasks"),
        "prefect/floor": lambda: c.measure([py, "-c", FLOOR_CODE], env=floor_env, cwd=work, timeout=args.timeout),
        "200/local": run(big, local_env, "--engine", "local"),
        "200/default": run(big, local_env),
        "200/tasks": run(big, local_env, "--rows-as-tasks"),
    }
    if postgres is not None:
        print("a Prefect server on PostgreSQL (deployments/postgres_server.py)", file=sys.stderr)
        started = c.measure([py, str(POSTGRES_SCRIPT), "start", "--dir", str(postgres)], env=c.child_env(),
                            cwd=work, timeout=args.timeout)  # fmt: skip
        assert started.ok, started.stderr_tail
        pg_env = c.child_env(prefect_home=postgres / "prefect-home",
                             api_url=started.stdout.strip().removeprefix("PREFECT_API_URL="))  # fmt: skip
        document["postgres_start_s"] = started.wall_s
        for matrix, fixture in (("pg-examples", EXAMPLE), ("pg-200", big)):
            variants[f"{matrix}/default"] = run(fixture, pg_env)
            variants[f"{matrix}/tasks"] = run(fixture, pg_env, "--rows-as-tasks")
    promptfoo = shutil.which("promptfoo")
    if promptfoo is not None:
        config = promptfoo_config(work, ROWS, REPEAT)
        promptfoo_env = c.child_env(PROMPTFOO_DISABLE_TELEMETRY="1", PROMPTFOO_DISABLE_UPDATE="1",
                                    PROMPTFOO_CONFIG_DIR=str(work / "promptfoo-home"))  # fmt: skip
        argv = [promptfoo, "eval", "-c", str(config), "--no-cache", "--no-table", "--no-progress-bar", "-j", "4",
                "--repeat", str(REPEAT), "-o", str(work / "promptfoo-out.json")]  # fmt: skip
        variants["200/promptfoo"] = lambda: c.measure(argv, env=promptfoo_env, cwd=work, timeout=args.timeout)
        document["promptfoo_version"] = _version(promptfoo)
    else:
        document["promptfoo"] = "not on PATH (npm i -g promptfoo): skipped"
    temporary = {"examples/temporary": run(EXAMPLE, temporary_env), "200/temporary": run(big, temporary_env)}

    measured: dict[str, list[c.Measured]] = {key: [] for key in [*variants, *temporary]}
    for number in range(args.rounds):
        print(f"round {number + 1} of {args.rounds}", file=sys.stderr)
        for key, variant in variants.items():
            measured[key].append(variant())
        if number < args.temporary_rounds:
            for key, variant in temporary.items():
                measured[key].append(variant())
    document["variants"] = {key: _figures(runs) for key, runs in measured.items() if runs}
    stop = c.measure([py, "-m", "flows.run", "server", "stop"], env=local_env, cwd=work, timeout=args.timeout)
    document["server_stop_ok"] = stop.ok
    return document


def _version(promptfoo: str) -> str:
    done = c.measure([promptfoo, "--version"], env=c.child_env(), timeout=60)
    return done.stdout.strip()


def _figures(runs: list[c.Measured]) -> dict[str, object]:
    walls = [m.wall_s for m in runs]
    return {
        "wall_s": c.spread(walls),
        "exit_codes": sorted({m.returncode for m in runs}, key=str),
        "peak_rss_mb": c.median([m.root_hwm_mb for m in runs]),
        "runs": [m.brief() for m in runs],
    }


def print_report(document: dict[str, object]) -> None:
    machine = document["machine"]  # type: ignore[index]
    first = document["first"]  # type: ignore[index]
    variants: dict[str, dict[str, object]] = document["variants"]  # type: ignore[assignment]
    print(f"\nassay reuse bench: {machine['cpus']} CPUs, load {machine['loadavg']}, {machine['date']}")  # type: ignore[index]
    print(f"local server first start (brand-new home, migrations): {first['server_start_s']:.1f} s; "  # type: ignore[index]
          f"first run on it {first['first_run_s']:.2f} s; "  # type: ignore[index]
          f"first temporary-server run (its database too): {first['temporary_first_run_s']:.1f} s")  # type: ignore[index]  # fmt: skip
    rows = []
    for key, figures in variants.items():
        matrix = key.split("/")[0].removeprefix("pg-")
        local = variants.get(f"{matrix}/local") or variants["examples/local"]
        tasks = variants.get(f"{key.split('/')[0]}/tasks")
        wall = figures["wall_s"]["median"]  # type: ignore[index]
        ratio = wall / local["wall_s"]["median"] if local else None  # type: ignore[index]
        over_tasks = wall / tasks["wall_s"]["median"] if tasks else None  # type: ignore[index]
        runs = len(figures["runs"])  # type: ignore[arg-type]
        rows.append([key, runs, wall, figures["wall_s"]["min"], figures["wall_s"]["max"], ratio, over_tasks,  # type: ignore[index]
                     figures["peak_rss_mb"], ",".join(map(str, figures["exit_codes"]))])  # type: ignore[call-overload]  # fmt: skip
    print(
        c.table(["matrix/variant", "runs", "median s", "min s", "max s", "x local", "x tasks", "RSS MB", "exit"], rows)
    )
    for key, against, goal, what in GOALS:
        if key in variants and against in variants:
            ratio = variants[key]["wall_s"]["median"] / variants[against]["wall_s"]["median"]  # type: ignore[index]
            print(f"goal: {what}: {ratio:.2f}x [{'met' if ratio <= goal else 'MISSED'}]")


if __name__ == "__main__":
    c.run_script(main)
