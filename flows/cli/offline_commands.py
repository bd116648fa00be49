"""The commands that run nothing: ``validate`` fixtures; ``bless``, ``compare``, ``show``, ``report``,
``trends`` and ``history`` over the runs saved in the state folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from fixtures_core.analysis.baseline import check_tolerance, compare
from fixtures_core.analysis.trends import trends
from fixtures_core.errors import AssayError, UsageError, ValidationFailed
from fixtures_core.files import write_json_atomic, write_text_atomic
from fixtures_core.parsing.devlyn import find_bench
from fixtures_core.parsing.validate import validate_paths
from fixtures_core.records.history import DEFAULT_LAST, suite_runs
from fixtures_core.records.rotation import retire
from fixtures_core.records.rundoc import load_run
from fixtures_core.records.store import SHIPPED, Store, new_baseline_note
from fixtures_core.reports import terminal
from fixtures_core.reports.heatmap import pivots_of
from fixtures_core.reports.html_trends import trends_html
from fixtures_core.reports.outputs import ReportFiles, check_bundle, check_writable, step_summary_file, write_bundle
from fixtures_core.reports.trends import render as render_trends
from fixtures_core.reports.trends import since_of, with_changes
from fixtures_core.reports.trends_json import trends_document
from fixtures_core.text import counted
from flows.cli.help_texts import BUNDLE_HELP, FRAME_HELP, HTML_HELP, JUNIT_HELP, PATH_HELP, RUN_HELP, SUMMARY_HELP
from flows.cli.session import Exit, err, out

TRENDS_HTML_HELP = "Also write the trends as one self-contained HTML page here."
TRENDS_JSON_HELP = "Also write what the page shows (flips, ages, streaks, steps, cost) as JSON here."
MAX_TRENDS_RUNS = 1000


def validate_command(
    paths: Annotated[list[str], typer.Argument(metavar="PATH", help=PATH_HELP)],
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


def retire_command(
    folder: Annotated[str, typer.Argument(metavar="FOLDER", help="The devlyn benchmark folder.")],
    fixture: Annotated[str, typer.Argument(metavar="FIXTURE", help="The fixture's id (F1, or its folder name).")],
    reason: Annotated[str, typer.Option("--reason", help="Why it is retired (saturation, ...).")],
    replacement: Annotated[Optional[str], typer.Option("--replacement", help="The fixture that replaces it.")] = None,
    rationale: Annotated[Optional[str], typer.Option("--rationale", help="Why the replacement is harder.")] = None,
) -> None:
    """Retire a devlyn fixture: move it to fixtures/retired/ (run it again by its id) and write seed 04's
    rotation record, history/runs/<ts>-fixture-rotation.json."""
    bench = find_bench(Path(folder))
    if bench is None:
        raise UsageError(f"{folder}: no devlyn benchmark there (fixtures/test-repo and fixtures/F*/)")
    done = retire(bench, fixture, reason, replacement, rationale)
    out.print(f"retired {done.retired}: {done.moved_to}; rotation record {done.record}", soft_wrap=True)


def bless_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP)],
    name: Annotated[str, typer.Option("--name", help="Baseline name.")] = SHIPPED,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
    force: Annotated[bool, typer.Option("--force", help="Bless a FAIL, ERR, regressed or dry run anyway.")] = False,
) -> None:
    """Promote a run to a named baseline (``--baseline NAME`` then finds it); only a PASS that did not
    regress, unless --force."""
    target = Store(Path(out_dir)).bless(run_ref, name, force=force)
    out.print(f"blessed {run_ref} as '{name}': {target}", soft_wrap=True)
    note = new_baseline_note(load_run(target))
    if note is not None:
        out.print(note, soft_wrap=True)


def compare_command(
    baseline_ref: Annotated[str, typer.Argument(metavar="BASELINE", help=RUN_HELP)],
    current_ref: Annotated[str, typer.Argument(metavar="CURRENT", help=RUN_HELP)],
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
    baseline_path, baseline = store.load_baseline(baseline_ref)
    current = load_run(store.resolve_run(current_ref))
    if current.status == "ERR":
        err.print(f"error: run {current.run_id} errored ({current.error or 'see its rows'}): no comparison")
        raise Exit(2)
    comparison = compare(baseline, current, tolerance, str(baseline_path))
    terminal.render_comparison_lines(comparison, out)
    raise Exit(1 if comparison.regressed else 0)


def show_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP)],
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """Print a saved run's report, as the run printed it."""
    run = load_run(Store(Path(out_dir)).resolve_run(run_ref))
    terminal.render(run, out, since=since_of(run, Path(out_dir)))


def report_command(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help=RUN_HELP)],
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


def trends_command(
    suite: Annotated[
        Optional[str],
        typer.Argument(metavar="[SUITE]", help="A label or a fixture file (default: the newest run's suite)."),
    ] = None,
    last: Annotated[int, typer.Option("--last", help="How many of the suite's newest runs.")] = DEFAULT_LAST,
    html: Annotated[Optional[str], typer.Option("--html", help=TRENDS_HTML_HELP)] = None,
    json_path: Annotated[Optional[str], typer.Option("--json", metavar="FILE", help=TRENDS_JSON_HELP)] = None,
    out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay",
) -> None:
    """A suite's last runs: failures and their age, flips since the previous run, changes in the window,
    flaky streaks, metric steps, cost per run."""
    if not 1 <= last <= MAX_TRENDS_RUNS:
        raise UsageError(f"--last must be between 1 and {MAX_TRENDS_RUNS} runs, got {last}")
    if html is not None:
        check_writable("--html", Path(html))
    if json_path is not None:
        check_writable("--json", Path(json_path))
    history = suite_runs(Store(Path(out_dir)), suite, last)
    found = with_changes(trends(history.runs, history.complete))
    render_trends(history, found, out)
    if html is not None:
        try:
            write_text_atomic(Path(html), trends_html(history, found))
        except OSError as exc:
            raise AssayError(f"--html {html}: cannot write: {exc.strerror or exc}") from None
        out.print(f"wrote {html}", soft_wrap=True)
    if json_path is not None:
        try:
            write_json_atomic(Path(json_path), trends_document(history, found))
        except OSError as exc:
            raise AssayError(f"--json {json_path}: cannot write: {exc.strerror or exc}") from None
        out.print(f"wrote {json_path}", soft_wrap=True)


def history_command(out_dir: Annotated[str, typer.Option("--out", help="State folder.")] = ".assay") -> None:
    """Saved runs, newest first: id, label, date, verdict, rows, pass rate."""
    terminal.render_history(Store(Path(out_dir)).runs(), out)
