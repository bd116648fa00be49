"""The commands that make a run: ``assay run`` (and ``python -m flows.run``), ``assay rejudge`` and ``assay recheck``.

They check the command line's own options, hand a ``RunOptions`` to
``fixtures_core/runs/`` (the local engine) or to the Prefect flow
(``flows.flow.matrix``, on the API ``flows.server.local`` resolves), and
print the report. The exit code is the run's verdict.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import click
import typer

from fixtures_core.errors import AssayError, UsageError
from fixtures_core.execution.containment import Containment
from fixtures_core.files import write_json_atomic
from fixtures_core.records.rundoc import RunResult, to_document
from fixtures_core.records.store import SHIPPED, Store, bless_refusal, new_baseline_note, new_run_id
from fixtures_core.reports import terminal
from fixtures_core.reports.outputs import check_bundle, check_writable, state_folder, write_bundle
from fixtures_core.reports.progress import Progress
from fixtures_core.reports.trends import since_of
from fixtures_core.runs.backtest import backtest, backtest_lines
from fixtures_core.runs.options import RunOptions, resume_options
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recheck import close_recheck, prepare_recheck
from fixtures_core.runs.rejudge import rejudge
from fixtures_core.spec import Matrix
from flows.cli.help_texts import (
    BUNDLE_HELP,
    FRAME_HELP,
    HTML_HELP,
    JUDGE_HELP,
    JUNIT_HELP,
    PATH_HELP,
    RUN_HELP,
    SAVED_RUN,
    SUMMARY_HELP,
)
from flows.cli.interrupts import Interrupted
from flows.cli.progress import DEFAULT_INTERVAL_S, Mode, ProgressDisplay
from flows.cli.session import Exit, closing, current_guard, err, out, recorded_as_interrupted, say, say_plain

if TYPE_CHECKING:
    from flows.server.local import Backend

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
DASK_HELP = "Run the samples on this Dask scheduler, or 'local' for a LocalCluster of processes."


def run_command(
    paths: Annotated[Optional[list[str]], typer.Argument(metavar="PATH", help=PATH_HELP)] = None,
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
        Optional[str],
        typer.Option("--baseline", help=f"Compare with a saved run: {SAVED_RUN}."),
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
    closing[:] = [(run, options)]
    guard = current_guard()
    try:
        if guard.interrupted:  # a signal while the run closed (finalize): it did not finish cleanly
            run = recorded_as_interrupted(run, options, guard.received[0])
        closing[:] = [(run, options)]
        blessing = (lambda: _bless_if_passed(run, out_dir, force)) if bless else None
        if html_bundle is not None:
            write_bundle(run, Path(html_bundle), Path(options.out))
        _report(run, json_path, links, before_verdict=blessing)
    except Interrupted as interrupt:  # during the report: the run is recorded, so record it again as ERR
        closing[:] = [(recorded_as_interrupted(run, options, interrupt.signal_name), options)]
        raise
    raise Exit(2 if guard.interrupted else run.verdict.exit_code)


def rejudge_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP)],
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
    with Containment() as containment, current_guard().running(containment):
        rejudged = rejudge(run_ref, options, containment)
    for warning in rejudged.warnings:
        err.print(f"warning: {warning}")
    closing[:] = [(rejudged.run, options)]
    _report(rejudged.run, json_path)
    raise Exit(2 if current_guard().interrupted else rejudged.run.verdict.exit_code)


def recheck_command(
    run_ref: Annotated[Optional[str], typer.Argument(metavar="RUN", help=RUN_HELP)] = None,
    paths: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="FIXTURE", help="Fixture files to check with (default: the run's own, as now)."),
    ] = None,
    baseline: Annotated[
        Optional[str], typer.Option("--baseline", help=f"Compare with a saved run: {SAVED_RUN}.")
    ] = None,
    tolerance: Annotated[float, typer.Option("--regression-tolerance", help="Allowed drop of suite rates.")] = 0.0,
    label: Annotated[Optional[str], typer.Option("--label", help="A label stored with the new run.")] = None,
    json_path: Annotated[Optional[Path], typer.Option("--json", help="Also write the run document here.")] = None,
    html: Annotated[Optional[str], typer.Option("--html", help=HTML_HELP)] = None,
    junit: Annotated[Optional[str], typer.Option("--junit", help=JUNIT_HELP)] = None,
    summary: Annotated[Optional[str], typer.Option("--summary", help=SUMMARY_HELP)] = None,
    frame: Annotated[Optional[str], typer.Option("--frame", help=FRAME_HELP)] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
    engine: Annotated[
        str, typer.Option("--engine", help="prefect (default: a flow run with artifacts) or local (no Prefect).")
    ] = "prefect",
    last: Annotated[
        Optional[int],
        typer.Option("--last", help="Backtest: recheck the last N runs of --label (every argument a FIXTURE)."),
    ] = None,
) -> None:
    """Check a stored run's samples again with the fixture files as they are now; no command runs. A new run."""
    if last is not None:
        _backtest(label, last, (*([run_ref] if run_ref else []), *(paths or ())), out_dir)
    if run_ref is None:
        raise click.UsageError("give the RUN to recheck, or --label L --last N to backtest")
    _check_json_path(json_path)
    options = RunOptions(
        paths=tuple(paths or ()), out=out_dir, baseline=baseline, tolerance=tolerance, label=label,
        html=html, junit=junit, summary=summary, frame=frame, engine=engine,
    )  # fmt: skip
    options.check()
    prepared = prepare_recheck(run_ref, options)
    if engine == "local":
        with Containment() as containment, current_guard().running(containment):
            run = close_recheck(prepared, containment)
    else:
        from flows.flow.recheck import recheck_with_prefect

        run = recheck_with_prefect(prepared, _prefect_backend())
    closing[:] = [(run, options)]
    _report(run, json_path)
    raise Exit(2 if current_guard().interrupted else run.verdict.exit_code)


def _backtest(label: str | None, last: int, paths: tuple[str, ...], out_dir: str) -> NoReturn:
    """``recheck --label L --last N``: each of the last N runs of L rechecked, nothing written; exit 0."""
    if label is None:
        raise click.UsageError("--last backtests the runs of a label: give --label")
    found = backtest(label, last, RunOptions(paths=paths, out=out_dir, engine="local"))
    for line in backtest_lines(found):
        out.print(line, markup=False, soft_wrap=True)
    raise Exit(0)


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
    terminal.render(run, out, before_verdict, since_of(run, state_folder(run)))
    for link in links:
        out.print(f"Prefect flow run: {link}", soft_wrap=True)


def _bless_if_passed(run: RunResult, out_dir: str, force: bool = False) -> None:
    """``run --bless``: bless a PASS run that did not regress as 'shipped' (any run with ``force``);
    say why another is not blessed. An interrupted command blesses nothing."""
    if current_guard().interrupted:
        return
    refusal = bless_refusal(run)
    if refusal is not None and not force:
        out.print(f"not blessed: {refusal} (--force blesses it anyway)", soft_wrap=True)
        return
    target = Store(Path(out_dir)).bless(run.run_id, SHIPPED, force=True)
    out.print(f"blessed {run.run_id} as '{SHIPPED}': {target}", soft_wrap=True)
    note = new_baseline_note(run)
    if note is not None:
        out.print(note, soft_wrap=True)


def execute_run(
    options: RunOptions,
    progress: Mode = Mode.OFF,
    interval: float = DEFAULT_INTERVAL_S,
    tags: tuple[str, ...] = (),
    announce: Callable[[str], None] | None = None,
) -> RunResult:
    """Plan (fail fast on configuration errors), then run on the chosen engine, showing progress on stderr.

    The Prefect engine first picks its API (``flows.server.local``: PREFECT_API_URL,
    else this Prefect home's local server, started on first use); ``announce``
    gets the flow run's UI address. Every process of the run is contained
    (``Containment``); signals follow ``flows.cli.interrupts``.
    """
    planned = plan(options)
    _note_warnings(planned.matrix)
    run_id = planned.run_id or new_run_id()
    counts = Progress(planned.matrix)
    backend = None if options.engine == "local" else _prefect_backend()
    with (
        Containment() as containment,
        current_guard().running(containment),
        ProgressDisplay(counts, err, progress, interval),
    ):
        if options.engine == "local":
            from fixtures_core.runs.local import run_locally

            return run_locally(planned, options, run_id, containment, counts)
        from flows.flow.matrix import run_with_prefect

        return run_with_prefect(options, run_id, containment, planned, counts, backend, tags, announce, say_plain)


def _note_warnings(matrix: Matrix) -> None:
    """A run reads what ``validate`` warns about too: say so in one line, never silently."""
    count = sum(len(f.warnings) for f in matrix.files)
    if count:
        noun = "construct" if count == 1 else "constructs"
        err.print(f"warning: {count} fixture {noun} assay reads but does not run or check: `assay validate` lists them")


def _prefect_backend() -> Backend:
    from flows.server.local import resolve_backend

    return resolve_backend(say=say)


def _write_json_copy(path: Path, run: RunResult) -> None:
    """``--json FILE``: the run document there too (the run itself is recorded already)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, to_document(run))
    except OSError as exc:
        raise AssayError(f"--json {path}: cannot write the run document: {exc.strerror or exc}") from None
