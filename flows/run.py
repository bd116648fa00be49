"""The assay command line: ``assay run|validate ...`` and ``python -m flows.run PATH...``.

``main(argv) -> int`` wraps pure functions; every AssayError becomes one
line on stderr and exit code 2, never a traceback. A usage error prints the
usage line and the problem, exit 2. Interrupts follow ``flows.interrupts``:
any of them ends in exit 2.
"""

from __future__ import annotations

from flows.interrupts import guard_start_up
from flows.streams import fill_closed

if __name__ == "__main__":  # ``python -m flows.run``: an interrupt during the slow imports below exits 2, quietly
    guard_start_up()
    fill_closed()

import importlib.util
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import click
import typer
from rich.console import Console

from fixtures_core.analysis.baseline import check_tolerance, compare
from fixtures_core.analysis.trends import trends
from fixtures_core.errors import AssayError, UsageError, ValidationFailed
from fixtures_core.execution.containment import Containment, leave_quietly
from fixtures_core.files import write_json_atomic, write_text_atomic
from fixtures_core.parsing.validate import validate_paths
from fixtures_core.records.history import DEFAULT_LAST, suite_runs
from fixtures_core.records.rundoc import RunResult, load_run, to_document
from fixtures_core.records.store import SHIPPED, Store, bless_refusal, new_run_id
from fixtures_core.reports import terminal
from fixtures_core.reports.heatmap import pivots_of
from fixtures_core.reports.html_trends import trends_html
from fixtures_core.reports.outputs import ReportFiles, check_bundle, check_writable, step_summary_file, write_bundle
from fixtures_core.reports.progress import Progress
from fixtures_core.reports.trends import render as render_trends
from fixtures_core.runs.close import record
from fixtures_core.runs.options import RunOptions, resume_options, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.rejudge import rejudge
from fixtures_core.spec import Matrix
from fixtures_core.text import counted
from flows.interrupts import Interrupted, InterruptGuard, exit_now
from flows.progress import DEFAULT_INTERVAL_S, Mode, ProgressDisplay
from flows.streams import GuardedStream, failure_line, guarded

if TYPE_CHECKING:
    from flows.server import Backend

HTML_HELP = "Write a self-contained HTML report (plots, drill-down) here."
JUNIT_HELP = "Write JUnit XML here (a testcase per row) for CI test tabs."
SUMMARY_HELP = "Write the Markdown summary here (also appended to $GITHUB_STEP_SUMMARY when set)."
FRAME_HELP = "Write the sample x metric frame here (.csv, or .parquet with pyarrow)."
JUDGE_HELP = "A judge command line replacing the A/B suites' own."
CONCURRENCY_HELP = (
    "Samples in flight across the run (default: the fixtures' own, else --parallel, else 4; 1 with A/B arms)."
)
PARALLEL_SAMPLES_HELP = (
    "Let the samples of one row run at once, for rows that do not say serial (default: in order, one after "
    "another, as a command that keeps state between samples needs)."
)
ADAPTIVE_HELP = (
    "Adaptive sampling for rows that do not say sampling: a row stops once more samples could not change its "
    "verdict at 95% confidence (at least 3 samples, at most its repeat); see README 'Pass rate and adaptive sampling'."
)
SAMPLE_BUDGET_HELP = (
    "Adaptive rows share a budget of samples: fixed (what fixed k spends) or a number; what decided rows leave "
    "goes to the undecided ones, past their max; see README 'A sample budget'."
)
ROW_SUBFLOWS_HELP = "Each row a Prefect subflow run holding its sample tasks: the default (kept for old scripts)."
ROWS_AS_TASKS_HELP = (
    "Run each row as a task run of the matrix's flow run, its samples nested tasks, instead of a subflow run "
    "per row (the default)."
)
LIMIT_HELP = "Cap per property value: PROPERTY=N in flight, or PROPERTY=N/minute (repeatable)."
BUDGET_HELP = "Start no sample once a metric summed over the run reaches a cap: 'cost_usd <= 5'."
RESUME_HELP = "Continue an interrupted or killed run (its id, folder, or latest); only missing samples run."
MAX_PROGRESS_INTERVAL_S = 86_400.0
BUNDLE_HELP = "Write the HTML page as DIR/index.html with the evidence it links to copied beside it (a CI artifact)."
TRENDS_HTML_HELP = "Also write the trends as one self-contained HTML page here."
MAX_TRENDS_RUNS = 1000
DASK_HELP = "Run the samples on this Dask scheduler, or 'local' for a LocalCluster of processes."
app = typer.Typer(add_completion=False, no_args_is_help=True, help="Run Markdown fixture matrices; one verdict.")


out = Console(highlight=False, markup=False)  # names and labels are text, never markup
if not out.is_terminal and "COLUMNS" not in os.environ:
    # CI logs: wide enough for the table, never wrapped at 80
    out = Console(highlight=False, markup=False, width=120)
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
    paths: Annotated[
        Optional[list[str]], typer.Argument(metavar="PATH", help="Fixture files or folders of them.")
    ] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the run document here.")] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
    repeat: Annotated[Optional[int], typer.Option("--repeat", help="Override every row's repeat.")] = None,
    k: Annotated[Optional[int], typer.Option("--k", help="k of pass@k and pass^k (default: each row's n).")] = None,
    group_by: Annotated[
        Optional[list[str]], typer.Option("--group-by", help="Suite figures per value of this property.")
    ] = None,
    name_filter: Annotated[
        Optional[list[str]],
        typer.Option("--filter", help="Only rows whose name matches this glob (repeatable: any of them)."),
    ] = None,
    parallel: Annotated[
        Optional[int], typer.Option("--parallel", help="Rows in flight (default: as many as sample slots).")
    ] = None,
    parallel_samples: Annotated[bool, typer.Option("--parallel-samples", help=PARALLEL_SAMPLES_HELP)] = False,
    adaptive: Annotated[bool, typer.Option("--adaptive", help=ADAPTIVE_HELP)] = False,
    sample_budget: Annotated[
        Optional[str], typer.Option("--sample-budget", metavar="fixed|N", help=SAMPLE_BUDGET_HELP)
    ] = None,
    row_subflows: Annotated[bool, typer.Option("--row-subflows", help=ROW_SUBFLOWS_HELP)] = False,
    rows_as_tasks: Annotated[bool, typer.Option("--rows-as-tasks", help=ROWS_AS_TASKS_HELP)] = False,
    concurrency: Annotated[Optional[int], typer.Option("--concurrency", help=CONCURRENCY_HELP)] = None,
    limits: Annotated[Optional[list[str]], typer.Option("--limit", metavar="PROPERTY=CAP", help=LIMIT_HELP)] = None,
    budget: Annotated[Optional[str], typer.Option("--budget", help=BUDGET_HELP)] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help=RESUME_HELP)] = None,
    dask_address: Annotated[Optional[str], typer.Option("--dask-address", help=DASK_HELP)] = None,
    label: Annotated[Optional[str], typer.Option("--label", help="A label stored with the run.")] = None,
    tags: Annotated[
        Optional[list[str]], typer.Option("--tag", help="A Prefect tag for the flow run (repeatable).")
    ] = None,
    engine: Annotated[str, typer.Option("--engine", help="prefect (default) or local (plain threads).")] = "prefect",
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help="Compare with a saved run: a run file, run id or blessed name.")
    ] = None,
    tolerance: Annotated[
        float,
        typer.Option("--regression-tolerance", help="Allowed drop of suite rates, 0..1 (pass -> fail always gates)."),
    ] = 0.0,
    html: Annotated[Optional[str], typer.Option("--html", help=HTML_HELP)] = None,
    junit: Annotated[Optional[str], typer.Option("--junit", help=JUNIT_HELP)] = None,
    summary: Annotated[Optional[str], typer.Option("--summary", help=SUMMARY_HELP)] = None,
    frame: Annotated[Optional[str], typer.Option("--frame", help=FRAME_HELP)] = None,
    html_bundle: Annotated[Optional[str], typer.Option("--html-bundle", metavar="DIR", help=BUNDLE_HELP)] = None,
    progress: Annotated[
        Mode,
        typer.Option(
            "--progress", help="Progress on stderr: live on a terminal, a plain line per interval elsewhere, or off."
        ),
    ] = Mode.AUTO,
    progress_interval: Annotated[
        float, typer.Option("--progress-interval", help="Seconds between plain progress lines.")
    ] = DEFAULT_INTERVAL_S,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="A/B suites: prepare workspaces, run setup and verify; no arm, no judge.")
    ] = False,
    bless: Annotated[
        bool,
        typer.Option("--bless", help="Bless the run as 'shipped' when its verdict is PASS and it did not regress."),
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="With --bless: bless the run even when it failed, errored or regressed.")
    ] = False,
    judge: Annotated[Optional[str], typer.Option("--judge", help=JUDGE_HELP)] = None,
    seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of the judge's blind A/B labels.")] = None,
) -> None:
    """Run fixture matrices and exit 0 (pass), 1 (fail or regression) or 2 (error)."""
    # Option values are checked by RunOptions.check; these options are the command line's only
    # (not fields of RunOptions: a deployment has no --json, --progress-interval, --bless or PATH).
    _check_json_path(json_path)
    if html_bundle is not None:
        check_bundle(Path(html_bundle))
    if not 0 < progress_interval <= MAX_PROGRESS_INTERVAL_S:  # NaN and inf too: the progress thread sleeps on it
        most = f"{MAX_PROGRESS_INTERVAL_S:g}"
        raise UsageError(f"--progress-interval must be > 0 and at most {most} seconds, got {progress_interval:g}")
    if bless and dry_run:
        raise UsageError("--bless: a dry run scores nothing and cannot become a baseline")
    if force and not bless:
        raise UsageError("--force goes with --bless (it blesses a run that failed, errored or regressed)")
    if not paths and resume is None:
        raise click.UsageError("give at least one PATH (a fixture file or folder), or --resume RUN")
    options = RunOptions(
        paths=tuple(paths or ()), out=out_dir, filter=tuple(name_filter or ()), repeat=repeat, k=k,
        group_by=tuple(group_by or ()), parallel=parallel, parallel_samples=parallel_samples, adaptive=adaptive,
        label=label,
        engine=engine, baseline=baseline, tolerance=tolerance,
        html=html, junit=junit, summary=summary, frame=frame, dry_run=dry_run, judge=judge, seed=seed,
        concurrency=concurrency, limits=tuple(limits or ()), budget=budget, resume=resume, dask_address=dask_address,
        row_subflows=row_subflows, rows_as_tasks=rows_as_tasks, sample_budget=sample_budget,
    )  # fmt: skip
    options.check()  # before --resume reads the state folder (plan checks the resumed options again)
    options = resume_options(options)
    # --tag is not a field of RunOptions (a flow run's tags come with its launch); the prefect-dask
    # check is about this installation, not a value.
    if tags and engine == "local":
        raise UsageError("--tag tags the Prefect flow run: --engine local has none")
    if options.dask_address is not None and importlib.util.find_spec("prefect_dask") is None:
        raise UsageError("--dask-address needs prefect-dask and distributed: pip install 'assay[dask]'")
    links: list[str] = []
    run = execute_run(options, progress, progress_interval, tuple(tags or ()), announce=links.append)
    _closing[:] = [(run, options)]
    guard = _guard()
    try:
        if guard.interrupted:  # a signal while the run closed (finalize): it did not finish cleanly
            run = _recorded_as_interrupted(run, options, guard.received[0])
        _closing[:] = [(run, options)]
        blessing = (lambda: _bless_if_passed(run, out_dir, force)) if bless else None
        if html_bundle is not None:
            write_bundle(run, Path(html_bundle), Path(options.out))
        _report(run, json_path, links, before_verdict=blessing)
    except Interrupted as interrupt:  # during the report: the run is recorded, so record it again as ERR
        _closing[:] = [(_recorded_as_interrupted(run, options, interrupt.signal_name), options)]
        raise
    raise Exit(2 if guard.interrupted else run.verdict.exit_code)


def _check_json_path(json_path: Path | None) -> None:
    """``--json`` must be writable before anything runs: a run must never end unable to say what it found."""
    if json_path is not None:
        check_writable("--json", json_path)


def _report(
    run: RunResult,
    json_path: Path | None,
    links: Sequence[str] = (),
    before_verdict: Callable[[], None] | None = None,
) -> None:
    """Write ``--json``, print the terminal report and the flow run's address in the Prefect UI.

    ``before_verdict`` prints its lines (``--bless``'s) before the verdict line, which ends the report.
    """
    if json_path is not None:
        _write_json_copy(json_path, run)
    terminal.render(run, out, before_verdict)
    for link in links:
        out.print(f"Prefect flow run: {link}", soft_wrap=True)


def _bless_if_passed(run: RunResult, out_dir: str, force: bool = False) -> None:
    """``run --bless``: bless a PASS run that did not regress as 'shipped' (any run with ``force``);
    say why another is not blessed. An interrupted command blesses nothing."""
    if _guard().interrupted:
        return
    refusal = bless_refusal(run)
    if refusal is not None and not force:
        out.print(f"not blessed: {refusal} (--force blesses it anyway)", soft_wrap=True)
        return
    target = Store(Path(out_dir)).bless(run.run_id, SHIPPED, force=True)
    out.print(f"blessed {run.run_id} as '{SHIPPED}': {target}", soft_wrap=True)


def execute_run(
    options: RunOptions,
    progress: Mode = Mode.OFF,
    interval: float = DEFAULT_INTERVAL_S,
    tags: tuple[str, ...] = (),
    announce: Callable[[str], None] | None = None,
) -> RunResult:
    """Plan (fail fast on configuration errors), then run on the chosen engine, showing progress on stderr.

    The Prefect engine first picks its API (``flows.server``: PREFECT_API_URL,
    else this Prefect home's local server, started on first use); ``announce``
    gets the flow run's UI address. Every process of the run is contained
    (``Containment``); signals follow ``flows.interrupts``.
    """
    planned = plan(options)
    _note_warnings(planned.matrix)
    run_id = planned.run_id or new_run_id()
    counts = Progress(planned.matrix)
    backend = None if options.engine == "local" else _prefect_backend()
    with Containment() as containment, _guard().running(containment), ProgressDisplay(counts, err, progress, interval):
        if options.engine == "local":
            from fixtures_core.runs.local import run_locally

            return run_locally(planned, options, run_id, containment, counts)
        from flows.matrix import run_with_prefect

        return run_with_prefect(options, run_id, containment, planned, counts, backend, tags, announce, _say_plain)


def _note_warnings(matrix: Matrix) -> None:
    """A run reads what ``validate`` warns about too: say so in one line, never silently."""
    count = sum(len(f.warnings) for f in matrix.files)
    if count:
        noun = "construct" if count == 1 else "constructs"
        err.print(f"warning: {count} fixture {noun} assay reads but does not run or check: `assay validate` lists them")


def _prefect_backend() -> Backend:
    from flows.server import resolve_backend

    return resolve_backend(say=_say)


def _say_plain(line: str) -> None:
    """A line of its own on stderr, as it is."""
    err.print(line)


def _say(message: str) -> None:
    """A progress line on stderr (e.g. while the local Prefect server starts)."""
    err.print(f"assay: {message}")


def _write_json_copy(path: Path, run: RunResult) -> None:
    """``--json FILE``: the run document there too (the run itself is recorded already)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, to_document(run))
    except OSError as exc:
        raise AssayError(f"--json {path}: cannot write the run document: {exc.strerror or exc}") from None


# The run this command recorded (and its options), from its report until the process exits: a
# signal in that span records it again as ERR, so that run.json and the exit code (2) agree.
_closing: list[tuple[RunResult, RunOptions]] = []


def _ended_by(interrupt: Interrupted) -> int:
    """One line for an interrupt that ended the command; a run it had recorded is recorded again as
    ERR (the signal came after its report began: the exit code is 2, and so is run.json's answer)."""
    if _closing:
        _closing[:] = [(_recorded_as_interrupted(*_closing[0], interrupt.signal_name), _closing[0][1])]
    err.print(f"error: {interrupt.message}")
    return 2


def _interrupted_while_exiting(signal_name: str) -> str | None:
    """The line for a signal after the command returned, when its run had to be recorded again as ERR."""
    if not _closing or _closing[0][0].stopped == "cancelled":  # no run, or one recorded as interrupted
        return None
    _closing[:] = [(_recorded_as_interrupted(*_closing[0], signal_name), _closing[0][1])]
    return f"error: interrupted by {signal_name} while exiting; the run is recorded as ERR"


def _recorded_as_interrupted(run: RunResult, options: RunOptions, signal_name: str) -> RunResult:
    """The run written again as ERR: an interrupt came after its samples had finished.

    Its report files are written again too; a GitHub step summary, which is
    appended to, is not.
    """
    if run.stopped == "cancelled":
        return run
    was = f" (it was {run.verdict.shown})" if run.status != "ERR" else ""
    marked = replace(
        run, status="ERR", error=f"interrupted by {signal_name} while the run closed{was}", stopped="cancelled"
    )
    record(marked, options)
    return marked


def _guard() -> InterruptGuard:
    """The guard of the running command; a fresh one (no handlers) when called outside ``main``."""
    return _guards[-1] if _guards else InterruptGuard()


@app.command("validate")
def validate_command(
    paths: Annotated[list[str], typer.Argument(metavar="PATH", help="Fixture files or folders of them.")],
) -> None:
    """Parse and validate fixtures; run nothing. Warns about what assay reads but does not run."""
    matrix, errors = validate_paths(paths)
    warnings = [w for f in matrix.files for w in f.warnings]
    for warning in warnings:
        err.print(f"warning: {warning}")
    if errors:
        raise ValidationFailed(errors)
    rows = matrix.rows
    if not rows:
        raise UsageError("the fixtures contain no rows")
    samples = sum(r.repeat for r in rows if not r.skip)
    noted = f", {counted(len(warnings), 'warning')}" if warnings else ""
    out.print(f"ok: {len(matrix.files)} files, {len(rows)} rows, {samples} samples{noted}")


@app.command("bless")
def bless_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="A run file, run id, blessed name or latest.")],
    name: Annotated[str, typer.Option("--name", help="Baseline name.")] = SHIPPED,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
    force: Annotated[bool, typer.Option("--force", help="Bless a FAIL, ERR, regressed or dry run anyway.")] = False,
) -> None:
    """Promote a run to a named baseline (``--baseline NAME`` then finds it); only a PASS that did not
    regress, unless --force."""
    target = Store(Path(out_dir)).bless(run_ref, name, force=force)
    out.print(f"blessed {run_ref} as '{name}': {target}", soft_wrap=True)


@app.command("rejudge")
def rejudge_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="A run file, run id or 'latest'.")],
    judge: Annotated[Optional[str], typer.Option("--judge", help=JUDGE_HELP)] = None,
    seed: Annotated[
        Optional[int], typer.Option("--seed", help="Seed of the blind labels (default: the run's).")
    ] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", help="Compare with a saved run.")] = None,
    tolerance: Annotated[float, typer.Option("--regression-tolerance", help="Allowed drop of suite rates.")] = 0.0,
    label: Annotated[Optional[str], typer.Option("--label", help="A label stored with the new run.")] = None,
    parallel: Annotated[int, typer.Option("--parallel", help="Judge calls at once.")] = 4,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the run document here.")] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Re-run the judge and the gates on a stored A/B run's evidence; no arm runs again. A new run."""
    _check_json_path(json_path)
    options = RunOptions(
        paths=(), out=out_dir, judge=judge, seed=seed, baseline=baseline, tolerance=tolerance, label=label,
        parallel=parallel, engine="local",
    )  # fmt: skip
    with Containment() as containment, _guard().running(containment):
        rejudged = rejudge(run_ref, options, containment)
    for warning in rejudged.warnings:
        err.print(f"warning: {warning}")
    _closing[:] = [(rejudged.run, options)]
    _report(rejudged.run, json_path)
    raise Exit(2 if _guard().interrupted else rejudged.run.verdict.exit_code)


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
        err.print(f"error: run {current.run_id} errored ({current.error or 'see its rows'}): no comparison")
        raise Exit(2)
    comparison = compare(baseline, current, tolerance, str(baseline_path))
    terminal.render_comparison_lines(comparison, out)
    raise Exit(1 if comparison.regressed else 0)


@app.command("show")
def show_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="A run file, run id, blessed name or latest.")],
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Print a saved run's report, as the run printed it."""
    terminal.render(load_run(Store(Path(out_dir)).resolve_run(run_ref)), out)


@app.command("report")
def report_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="A run file, run id, blessed name or latest.")],
    html: Annotated[Optional[str], typer.Option("--html", help=HTML_HELP)] = None,
    junit: Annotated[Optional[str], typer.Option("--junit", help=JUNIT_HELP)] = None,
    summary: Annotated[Optional[str], typer.Option("--summary", help=SUMMARY_HELP)] = None,
    frame: Annotated[Optional[str], typer.Option("--frame", help=FRAME_HELP)] = None,
    html_bundle: Annotated[Optional[str], typer.Option("--html-bundle", metavar="DIR", help=BUNDLE_HELP)] = None,
    group_by: Annotated[
        Optional[list[str]],
        typer.Option("--group-by", metavar="PROP,PROP", help="The HTML page's pivot of two row properties."),
    ] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Write report files of a saved run: HTML (or a bundle of it and its evidence), JUnit XML, Markdown
    summary, sample frame."""
    files = ReportFiles(html=html, junit=junit, summary=summary, frame=frame)
    if not files.named() and html_bundle is None:
        raise UsageError("assay report: give at least one of --html, --html-bundle, --junit, --summary, --frame")
    pivots = tuple(pivots_of(group_by)) if group_by else None
    if group_by and not pivots:
        raise UsageError(f"--group-by {group_by[0]!r}: give two row properties, as provider,model")
    files.check()
    if html_bundle is not None:
        check_bundle(Path(html_bundle))
    store = Store(Path(out_dir))
    run = load_run(store.resolve_run(run_ref))
    for path in files.write(run, step_summary_file() if summary is not None else None, store.root, pivots):
        out.print(f"wrote {path}", soft_wrap=True)
    if html_bundle is not None:
        out.print(f"wrote {write_bundle(run, Path(html_bundle), store.root, pivots)}", soft_wrap=True)


@app.command("trends")
def trends_command(
    suite: Annotated[
        Optional[str],
        typer.Argument(metavar="[SUITE]", help="A label or a fixture file (default: the newest run's suite)."),
    ] = None,
    last: Annotated[int, typer.Option("--last", help="How many of the suite's newest runs.")] = DEFAULT_LAST,
    html: Annotated[Optional[str], typer.Option("--html", help=TRENDS_HTML_HELP)] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """A suite's last runs: flips since the previous run, flaky streaks, metric steps, cost per run."""
    if not 1 <= last <= MAX_TRENDS_RUNS:
        raise UsageError(f"--last must be between 1 and {MAX_TRENDS_RUNS} runs, got {last}")
    if html is not None:
        check_writable("--html", Path(html))
    history = suite_runs(Store(Path(out_dir)), suite, last)
    found = trends(history.runs)
    render_trends(history, found, out)
    if html is not None:
        try:
            write_text_atomic(Path(html), trends_html(history, found))
        except OSError as exc:
            raise AssayError(f"--html {html}: cannot write: {exc.strerror or exc}") from None
        out.print(f"wrote {html}", soft_wrap=True)


@app.command("history")
def history_command(out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay") -> None:
    """Saved runs, newest first: id, label, date, verdict, rows, pass rate."""
    terminal.render_history(Store(Path(out_dir)).runs(), out)


server_app = typer.Typer(
    no_args_is_help=True,
    help="The local Prefect server ad-hoc runs use (Prefect's own background server of PREFECT_HOME).",
)
app.add_typer(server_app, name="server")


@server_app.command("start")
def server_start_command(
    port: Annotated[
        Optional[int], typer.Option("--port", help="Port (default: 4200 when free, else a free one).")
    ] = None,
) -> None:
    """Start this Prefect home's background server (or find it running) and wait until it answers."""
    from flows.server import ensure_started, prefect_home

    found = ensure_started(prefect_home(), port, say=_say)
    out.print(f"local Prefect server: pid {found.pid}, API {found.api_url}, UI {found.ui_url}", soft_wrap=True)


@server_app.command("stop")
def server_stop_command() -> None:
    """Stop this Prefect home's background server and wait until it is gone."""
    from flows.server import prefect_home, stop

    stopped = stop(prefect_home())
    out.print(f"stopped the local Prefect server (pid {stopped.pid})" if stopped else "no local Prefect server ran")


@server_app.command("status")
def server_status_command() -> None:
    """Is this Prefect home's background server running, where, and does it answer (exit 1 if not running)."""
    from flows.server import find, prefect_home, status

    home = prefect_home()
    out.print(status(home))
    raise Exit(0 if find(home) is not None else 1)


SUBCOMMANDS = ("run", "validate", "bless", "compare", "show", "report", "history", "trends", "rejudge", "server")


def main(argv: Sequence[str] | None = None, *, last: bool = False) -> int:
    """Run the CLI on ``argv`` and return the exit code.

    SIGINT, SIGTERM and SIGHUP are assay's while it runs; inside another
    program they are given back afterwards, while ``last`` (the process ends
    after this) keeps them so that a signal during shutdown still exits 2.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    guard = InterruptGuard(on_exit=_interrupted_while_exiting)
    guard.install()
    _guards.append(guard)
    _closing.clear()
    # A closed, full or broken stdout or stderr never changes the exit code (``flows.streams``).
    with guarded(keep=last) as (stdout, _stderr):
        try:
            try:
                code = _invoke(lambda: app(args=args, prog_name="assay", standalone_mode=False), args)
                guard.returned()  # a signal from here on is recorded, not raised: nothing would catch it
            except Interrupted as interrupt:  # raised past every handler of the command: after its report
                guard.returned()
                code = _ended_by(interrupt)
            _say_what_output_lost(stdout)
            if last and guard.stopped_at_once:
                # Stopped at once: the run's threads may still be inside C extensions, and interpreter
                # shutdown would tear them down mid-call (an abort, not exit 2). Every sample is dead;
                # the watchdog stops what assay started besides (a temporary Prefect server).
                exit_now(code=2)
        finally:
            _guards.remove(guard)
            if last:
                guard.exiting()
            else:
                guard.restore()
    # Read after the guard changed hands: a signal until then is counted here, one after it exits 2 at once.
    return 2 if guard.interrupted else code


def _say_what_output_lost(stdout: GuardedStream) -> None:
    """One line on stderr when the report could not be written whole (and where the run's is)."""
    stdout.flush()
    lost = failure_line(stdout)
    if lost is None:
        return
    recorded = f"; the report is in {store_for(_closing[0][1]).run_file(_closing[0][0].run_id)}" if _closing else ""
    err.print(f"assay: {lost}{recorded}", soft_wrap=True)


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
        return _ended_by(interrupt)
    except ValidationFailed as exc:
        for error in exc.errors:
            err.print(f"error: {error}")
        return 2
    except AssayError as exc:
        err.print(f"error: {exc}")
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
        err.print(f"error: {where}{exc.strerror or exc}")
        return 2
    except Exception as exc:  # a bug: one line, exit 2 (an error, never "fail"); ASSAY_DEBUG=1 shows the traceback
        if os.environ.get("ASSAY_DEBUG"):
            raise
        err.print(f"error: internal error: {type(exc).__name__}: {exc} (ASSAY_DEBUG=1 shows where)")
        return 2
    # typer returns an exit code instead of raising: 0 after --help, 130 for a KeyboardInterrupt
    if isinstance(returned, int) and not isinstance(returned, bool) and returned != 0:
        return 2
    return 0


def _usage_error(exc: Exception, args: Sequence[str]) -> None:
    """The usage line of the command concerned, then the problem: two lines, exit 2."""
    context = getattr(exc, "ctx", None)
    usage = context.get_usage() if context is not None else _usage_of(args)
    err.print("usage: " + usage.removeprefix("Usage: ").strip())
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    err.print(f"error: {message or 'give a command: ' + ', '.join(_commands_of(context))}")


def _commands_of(context: object) -> Sequence[str]:
    """The subcommands of the group a usage error is about (``assay server``'s, or assay's own)."""
    group = getattr(context, "command", None)
    lister = getattr(group, "list_commands", None)
    return list(lister(context)) if callable(lister) else SUBCOMMANDS


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
    leave(main(last=True))


def leave(code: int) -> None:
    """Exit with ``code`` without the interpreter's shutdown once Prefect's logs and events are
    delivered: nothing is left to write (the run document is on disk), and during shutdown Python
    gives the signals back to their defaults, so a Ctrl-C there would end the process by the signal.

    A signal from here on exits 2 at once (``main(last=True)`` left its guard in place).
    """
    matrix = sys.modules.get("flows.matrix")
    if matrix is None or matrix.deliver_before_exit():
        leave_quietly()
        exit_now(code=code)
    sys.exit(code)  # a temporary Prefect server of this process: Prefect's exit hook stops it


if __name__ == "__main__":
    leave(module_main(last=True))
