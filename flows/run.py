"""The assay command line: ``assay run|validate ...`` and ``python -m flows.run PATH...``.

``main(argv) -> int`` wraps pure functions; every AssayError becomes one
line on stderr and exit code 2, never a traceback. A usage error prints the
usage line and the problem, exit 2. Interrupts follow ``flows.interrupts``:
any of them ends in exit 2.
"""

from __future__ import annotations

from flows.interrupts import guard_start_up

if __name__ == "__main__":  # ``python -m flows.run``: an interrupt during the slow imports below exits 2, quietly
    guard_start_up()

import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import click
import typer
from rich.console import Console

from fixtures_core.analysis.baseline import check_tolerance, compare
from fixtures_core.errors import AssayError, UsageError, ValidationFailed
from fixtures_core.execution.containment import Containment
from fixtures_core.records.rundoc import RunResult, load_run, to_document
from fixtures_core.records.store import Store, new_run_id
from fixtures_core.reports import terminal
from fixtures_core.runner import RunOptions, plan, store_for
from flows.interrupts import Interrupted, InterruptGuard, exit_now

EXIT = {"PASS": 0, "FAIL": 1, "ERR": 2}
app = typer.Typer(add_completion=False, no_args_is_help=True, help="Run Markdown fixture matrices; one verdict.")
out = Console(highlight=False, markup=False)  # names and labels are text, never markup
if not out.is_terminal and "COLUMNS" not in os.environ:
    out = Console(highlight=False, markup=False, width=120)  # CI logs: wide enough for the table, never wrapped at 80
err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
# Click's exceptions: recent typer releases vendor their own copy of click, with their own classes.
_CLICK_ERRORS: tuple[type[Exception], ...] = (
    click.ClickException,
    getattr(typer, "TyperException", click.ClickException),
)
_ABORTS: tuple[type[Exception], ...] = (click.exceptions.Abort, getattr(typer, "Abort", click.exceptions.Abort))
_guards: list[InterruptGuard] = []  # the guard of the command running now (main() pushes, pops)


class Exit(Exception):
    """Carry an exit code out of a command without click's own handling."""

    def __init__(self, code: int) -> None:
        self.code = code


@app.command("run")
def run_command(
    paths: Annotated[list[str], typer.Argument(metavar="PATH", help="Fixture files or folders of them.")],
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the run document here.")] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
    repeat: Annotated[Optional[int], typer.Option("--repeat", help="Override every row's repeat.")] = None,
    k: Annotated[Optional[int], typer.Option("--k", help="k of pass@k and pass^k (default: each row's n).")] = None,
    group_by: Annotated[
        Optional[list[str]], typer.Option("--group-by", help="Suite figures per value of this property.")
    ] = None,
    name_filter: Annotated[
        Optional[str], typer.Option("--filter", help="Only rows whose name matches this glob.")
    ] = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Rows run at once.")] = 4,
    label: Annotated[Optional[str], typer.Option("--label", help="A label stored with the run.")] = None,
    engine: Annotated[str, typer.Option("--engine", help="prefect (default) or local (plain threads).")] = "prefect",
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help="Compare with a saved run: a run file, run id or blessed name.")
    ] = None,
    tolerance: Annotated[
        float,
        typer.Option("--regression-tolerance", help="Allowed drop of suite rates, 0..1 (pass -> fail always gates)."),
    ] = 0.0,
) -> None:
    """Run fixture matrices and exit 0 (pass), 1 (fail or regression) or 2 (error)."""
    if json_path is not None and json_path.is_dir():
        raise UsageError(f"--json {json_path} is a folder: give a file path")
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise UsageError(f"--out {out_dir} is not a folder: give the state folder (default .assay)")
    options = RunOptions(
        paths=tuple(paths), out=out_dir, filter=name_filter, repeat=repeat, k=k, group_by=tuple(group_by or ()),
        parallel=parallel, label=label, engine=engine, baseline=baseline, tolerance=tolerance,
    )  # fmt: skip
    run = execute_run(options)
    guard = _guard()
    try:
        if guard.interrupted:  # a signal while the run closed (finalize): it did not finish cleanly
            run = _recorded_as_interrupted(run, options, guard.received[0])
        if json_path is not None:
            _write_json_copy(json_path, run)
        terminal.render(run, out)
    except Interrupted as interrupt:  # during the report: the run is recorded, so record it again as ERR
        _recorded_as_interrupted(run, options, interrupt.signal_name)
        raise
    raise Exit(2 if guard.interrupted else EXIT[run.verdict])


def execute_run(options: RunOptions) -> RunResult:
    """Plan (fail fast on configuration errors), then run on the chosen engine."""
    planned = plan(options)
    run_id = new_run_id()
    with Containment() as containment, _guard().running(containment):
        if options.engine == "local":
            from flows.local import run_locally

            return run_locally(planned, options, run_id, containment)
        from flows.matrix import run_with_prefect

        return run_with_prefect(options, run_id, containment, planned)


def _write_json_copy(path: Path, run: RunResult) -> None:
    """``--json FILE``: the run document there too (the run itself is recorded already)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(to_document(run), indent=1, default=str) + "\n", encoding="utf-8")
    except OSError as exc:
        raise AssayError(f"--json {path}: cannot write the run document: {exc.strerror or exc}") from None


def _recorded_as_interrupted(run: RunResult, options: RunOptions, signal_name: str) -> RunResult:
    """The run written again as ERR: an interrupt came after its samples had finished."""
    if run.status == "ERR" and (run.error or "").startswith("interrupted"):
        return run
    was = f" (it was {run.verdict})" if run.verdict != "ERR" else ""
    marked = replace(run, status="ERR", error=f"interrupted by {signal_name} while the run closed{was}")
    store_for(options).write_run(marked)
    return marked


def _guard() -> InterruptGuard:
    """The guard of the running command; a fresh one (no handlers) when called outside ``main``."""
    return _guards[-1] if _guards else InterruptGuard()


@app.command("validate")
def validate_command(
    paths: Annotated[list[str], typer.Argument(metavar="PATH", help="Fixture files or folders of them.")],
) -> None:
    """Parse and validate fixtures; run nothing."""
    matrix = plan(RunOptions(paths=tuple(paths))).matrix
    rows = matrix.rows
    samples = sum(r.repeat for r in rows if not r.skip)
    out.print(f"ok: {len(matrix.files)} files, {len(rows)} rows, {samples} samples")


@app.command("bless")
def bless_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="A run file or run id.")],
    name: Annotated[str, typer.Option("--name", help="Baseline name.")] = "shipped",
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Promote a run to a named baseline (``--baseline NAME`` then finds it)."""
    target = Store(Path(out_dir)).bless(run_ref, name)
    out.print(f"blessed {run_ref} as '{name}': {target}", markup=False)


@app.command("compare")
def compare_command(
    baseline_ref: Annotated[str, typer.Argument(metavar="BASELINE", help="Run file, run id or blessed name.")],
    current_ref: Annotated[str, typer.Argument(metavar="CURRENT", help="Run file, run id or blessed name.")],
    tolerance: Annotated[
        float, typer.Option("--regression-tolerance", help="Allowed drop of suite rates, 0..1.")
    ] = 0.0,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Compare two saved runs offline; exit 0 (no regression), 1 (regression) or 2 (error).

    Only the comparison decides: a row that failed in both runs did not regress.
    """
    check_tolerance(tolerance)
    store = Store(Path(out_dir))
    baseline_path = store.resolve_run(baseline_ref)
    baseline = load_run(baseline_path)
    current = load_run(store.resolve_run(current_ref))
    if current.status == "ERR":
        err.print(
            f"error: run {current.run_id} errored ({current.error or 'see its rows'}): no comparison", markup=False
        )
        raise Exit(2)
    comparison = compare(baseline, current, tolerance, str(baseline_path))
    terminal.render_comparison_lines(comparison, out)
    raise Exit(1 if comparison.regressed else 0)


@app.command("history")
def history_command(out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay") -> None:
    """Saved runs, newest first: id, label, date, verdict, rows, pass rate."""
    terminal.render_history(Store(Path(out_dir)).runs(), out)


SUBCOMMANDS = ("run", "validate", "bless", "compare", "history")


def main(argv: Sequence[str] | None = None, *, last: bool = False) -> int:
    """Run the CLI on ``argv`` and return the exit code.

    SIGINT, SIGTERM and SIGHUP are assay's while it runs; inside another
    program they are given back afterwards, while ``last`` (the process ends
    after this) keeps them so that a signal during shutdown still exits 2.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    guard = InterruptGuard()
    guard.install()
    _guards.append(guard)
    try:
        code = _invoke(lambda: app(args=args, prog_name="assay", standalone_mode=False), args)
        if guard.interrupted:
            code = 2
        if last and guard.stopped_at_once:
            # Stopped at once: the run's threads may still be inside C extensions, and interpreter
            # shutdown would tear them down mid-call (an abort, not exit 2). Every sample is dead;
            # the watchdog stops what assay started besides (a temporary Prefect server).
            exit_now(code=2)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        return code
    finally:
        _guards.remove(guard)
        if last:
            guard.exiting()
        else:
            guard.restore()


def module_main(argv: Sequence[str] | None = None, *, last: bool = False) -> int:
    """``python -m flows.run PATH...`` means ``assay run PATH...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help"):
        args = ["run", *args]
    return main(args, last=last)


def _invoke(call: Callable[[], object], args: Sequence[str] = ()) -> int:
    try:
        returned = call()
    except Exit as done:
        return done.code
    except Interrupted as interrupt:
        err.print(f"error: {interrupt.message}", markup=False)
        return 2
    except ValidationFailed as exc:
        for error in exc.errors:
            err.print(f"error: {error}", markup=False)
        return 2
    except AssayError as exc:
        err.print(f"error: {exc}", markup=False)
        return 2
    except _CLICK_ERRORS as exc:
        _usage_error(exc, args)
        return 2
    except _ABORTS:  # end of input where a prompt wanted an answer
        err.print("error: aborted")
        return 2
    except KeyboardInterrupt:
        err.print("error: interrupted")
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}", markup=False)
        return 2
    except Exception as exc:  # a bug: one line, exit 2 (an error, never "fail"); ASSAY_DEBUG=1 shows the traceback
        if os.environ.get("ASSAY_DEBUG"):
            raise
        err.print(f"error: internal error: {type(exc).__name__}: {exc} (ASSAY_DEBUG=1 shows where)", markup=False)
        return 2
    # typer returns an exit code instead of raising: 0 after --help, 130 for a KeyboardInterrupt
    if isinstance(returned, int) and not isinstance(returned, bool) and returned != 0:
        return 2
    return 0


def _usage_error(exc: Exception, args: Sequence[str]) -> None:
    """The usage line of the command concerned, then the problem: two lines, exit 2."""
    context = getattr(exc, "ctx", None)
    usage = context.get_usage() if context is not None else _usage_of(args)
    err.print("usage: " + usage.removeprefix("Usage: ").strip(), markup=False)
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    err.print(f"error: {message or 'give a command: ' + ', '.join(SUBCOMMANDS)}", markup=False)


def _usage_of(args: Sequence[str]) -> str:
    """The usage line of the subcommand named first in ``args`` (or of assay itself)."""
    group = typer.main.get_command(app)
    root = group.make_context("assay", [], resilient_parsing=True)
    name = args[0] if args and args[0] in SUBCOMMANDS else None
    lookup = getattr(group, "get_command", None)  # a group (of typer's click copy, or click's)
    command = lookup(root, name) if name is not None and lookup is not None else None
    if command is None:
        return root.get_usage()
    return str(command.make_context(name, [], parent=root, resilient_parsing=True).get_usage())


def cli() -> None:
    """Console-script entry point (``flows.launch`` guards the imports before it)."""
    sys.exit(main(last=True))


if __name__ == "__main__":
    sys.exit(module_main(last=True))
