"""The terminal report of a run: the rows and metrics tables, failure details, suite figures.

Reports read results only; they never decide a status (``RowResult.passed``
and the run's ``status`` are the one definition).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fixtures_core.analysis.baseline import Comparison
from fixtures_core.analysis.trends import Age, Since
from fixtures_core.errors import RunFileError
from fixtures_core.records.lock import holder
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.reports import describe, shipgate, status_words
from fixtures_core.reports.comparison import text_lines
from fixtures_core.reports.trends import age_text
from fixtures_core.text import visible

_ERR = status_words.status("ERR").style  # what could not be read or finished


def render(
    run: RunResult, console: Console, before_verdict: Callable[[], None] | None = None, since: Since | None = None
) -> None:
    """Print the whole terminal report of a run: its body, then the verdict line, which ends it
    (``before_verdict`` prints what goes just before it, such as ``run --bless``'s line); ``since`` (the
    previous run of its suite) dates each failure."""
    render_body(run, console, since)
    if before_verdict is not None:
        before_verdict()
    console.print(verdict_line(run))


def render_body(run: RunResult, console: Console, since: Since | None = None) -> None:
    """Print the report of a run up to its verdict line (tables, failures with their age when ``since`` gives
    it, suites, the comparison)."""
    if run.rechecked:
        told = f"rechecked: {run.rechecked} (its stored samples, checked again; no sample command ran)"
        console.print(visible(told), markup=False, soft_wrap=True)
    console.print(rows_table(run))
    metrics = metrics_table(run)
    if metrics is not None:
        console.print(metrics)
    for failure in describe.failures(run):
        render_failure(failure, console, since.age_of(failure.row) if since is not None else None)
    for row in describe.skipped(run):
        told = f"\nSKIP {row.name}  ({row.file}:{row.line}): {describe.row_reason(row)}"
        console.print(Text(visible(told), style=status_words.status("SKIP").style))
    saving = describe.sampling_saving(run)
    lines = describe.suite_lines(run) + ([f"adaptive sampling: {saving}"] if saving else [])
    lines += describe.sampling_lines(run)
    if lines:
        console.print("\n" + visible("\n".join(lines)), markup=False, soft_wrap=True)
    for suite in run.suites:
        shipgate.render(suite, console)
    facts = [line for line in (describe.cost_line(run), describe.dask_line(run)) if line]
    if facts:
        console.print("\n" + visible("\n".join(facts)), markup=False, soft_wrap=True)
    if run.comparison is not None:
        console.print()
        render_comparison_lines(run.comparison, console)
    note = describe.no_comparison_note(run)
    if note:
        console.print("\n" + note, style=_ERR)


def rows_table(run: RunResult) -> Table:
    """One line per row: status, samples passed, median time, pass@k, pass^k."""
    k_label = describe.k_label(run)
    title = f"assay run {run.run_id}" + (f" [{run.label}]" if run.label else "")
    table = Table(title=title, title_justify="left")
    table.add_column("row")
    table.add_column("status")
    for name in ("passed", "median", f"pass@{k_label}", f"pass^{k_label}"):
        table.add_column(name, justify="right")
    for row in run.rows:
        median = describe.duration(describe.median_duration_ms(row))
        look = status_words.row(row)
        status = Text(look.word, style=look.style)
        table.add_row(visible(row.name), status, describe.passed_cell(row), median, *describe.passk_cells(row))
    return table


def metrics_table(run: RunResult) -> Table | None:
    """One line per row and metric: aggregate, baseline row value, signed regression."""
    if not any(r.metrics for r in run.rows):
        return None
    table = Table(title="metrics", title_justify="left")
    table.add_column("row")
    table.add_column("metric")
    for name in ("value", "baseline", "Δ%"):
        table.add_column(name, justify="right")
    table.add_column("")
    for row in run.rows:
        for name, metric in row.metrics.items():
            cells = describe.metric_cells(metric)
            mark = Text(cells.mark.word, style=cells.mark.style)
            figure = visible(f"{name} ({metric.aggregate})")
            table.add_row(visible(row.name), figure, cells.value, visible(cells.baseline), cells.delta, mark)
    return table


def render_failure(failure: describe.Failure, console: Console, age: Age | None = None) -> None:
    """Why a row failed: how long it has (``age``), the expression, failing sample indices, an output excerpt."""
    row = failure.row
    look = status_words.row(row)
    heading = visible(f"\n{look.word} {row.name}  ({failure.where})")
    console.print(Text(heading, style=look.style + " bold"))
    if age is not None:
        console.print(f"  {visible(age_text(age))}", markup=False, soft_wrap=True)
    if failure.error:
        console.print(f"  {visible(failure.error)}", markup=False, soft_wrap=True)  # a path stays one copyable line
    if failure.expression:
        console.print(f"  CEL: {visible(failure.expression)}", markup=False)
    if failure.failing_samples:
        console.print(f"  failing samples: {', '.join(map(str, failure.failing_samples))}", markup=False)
    if failure.sample_reason:
        console.print(f"  sample {failure.first_sample}: {visible(failure.sample_reason)}", markup=False)
    for stream, text in failure.excerpts:
        console.print(f"  {stream} of sample {failure.first_sample}:", markup=False)
        console.print(Text("\n".join("    " + visible(line) for line in text.splitlines()), style="dim"))


def verdict_line(run: RunResult) -> Text:
    """The last lines: the run's own verdict and counts, then both answers with the exit code and why."""
    verdict = run.verdict
    look = status_words.verdict(verdict)
    text = Text(f"\n{look.word}", style=look.style + " bold")
    text.append(f"  {describe.counts(run)}")
    text.append(f"\nverdict: {visible(describe.answer(run))}")
    if run.error:
        text.append(f"\nerror: {visible(run.error)}", style=_ERR)
    return text


def render_comparison_lines(comparison: Comparison, console: Console) -> None:
    """The baseline comparison: gating lines (``!``) red, informational (``·``) dim."""
    for line in text_lines(comparison):
        style = status_words.status("FAIL").style if line.startswith("!") else "dim" if line.startswith("·") else None
        console.print(Text(visible(line), style=style or ""))


_HISTORY_COLUMNS = ("run", "label", "started", "verdict", "baseline", "exit", "rows", "pass rate")
_HISTORY_DROPPED = ("baseline", "exit", "started", "rows", "label", "pass rate")  # first dropped first
_RIGHT = ("exit", "rows", "pass rate")


def render_history(run_files: Sequence[Path], console: Console) -> None:
    """Saved runs, newest first: id, label, date, the run's own verdict, the baseline gate's answer,
    the exit code, rows, pass rate. A run id is never cut, at any width: a narrow console drops other
    columns first (baseline, exit, started, rows, label, pass rate), and one too narrow for an id and its
    verdict gets a line per run instead of a table (the id whole, the console wraps it)."""
    lines = [_history_cells(path) for path in run_files]
    widths = {
        name: max([len(name), *(len(line[index].plain) for line in lines)])
        for index, name in enumerate(_HISTORY_COLUMNS)
    }
    shown = list(_HISTORY_COLUMNS)
    for name in _HISTORY_DROPPED:
        if _table_width(shown, widths) <= console.width:
            break
        shown.remove(name)
    if _table_width(shown, widths) > console.width:
        console.print("assay history (run, verdict)", markup=False)
        for line in lines:
            console.print(Text.assemble(line[0], "  ", line[3]), soft_wrap=True)
        return
    table = Table(title="assay history", title_justify="left")
    for name in shown:
        if name == "run":
            table.add_column(name, no_wrap=True, min_width=widths["run"])
        else:
            table.add_column(name, justify="right" if name in _RIGHT else "left")
    for line in lines:
        table.add_row(*(cell for name, cell in zip(_HISTORY_COLUMNS, line, strict=True) if name in shown))
    console.print(table)


def _table_width(columns: Sequence[str], widths: dict[str, int]) -> int:
    """The width of a rich table showing ``columns`` whole: each cell padded by one space a side, a border
    between and around them."""
    return sum(widths[name] + 3 for name in columns) + 1


def _history_cells(path: Path) -> tuple[Text, ...]:
    """One saved run's cells, in ``_HISTORY_COLUMNS`` order."""
    run_id = Text(visible(path.parent.name))
    if not path.exists():  # a run folder without run.json: still running, or killed (stopped at once)
        running = holder(path.parent)
        if running is not None:
            return (
                run_id,
                Text(),
                Text(),
                Text("running", style="cyan"),
                Text(),
                Text(),
                Text(),
                Text(f"pid {running}"),
            )
        return (run_id, Text(), Text(), Text("incomplete", style=_ERR), Text(), Text(), Text(), Text("no run.json"))
    try:
        run = load_run(path)
    except RunFileError as exc:
        reason = Text(visible(str(exc.reason)))
        return (run_id, Text(), Text(), Text("unreadable", style=_ERR), Text(), Text(), Text(), reason)
    counted = run.summary.counted
    rate = f"{run.summary.passed / counted:.0%}" if counted else "-"
    verdict = run.verdict
    look = status_words.verdict(verdict)
    return (
        Text(visible(run.run_id)),
        Text(visible(run.label or "")),
        Text(visible(run.started_at)),
        Text(look.word, style=look.style),
        Text(verdict.gate_word, style=status_words.status("FAIL").style if verdict.regressed else ""),
        Text(str(verdict.exit_code)),
        Text(str(run.summary.rows)),
        Text(rate),
    )
