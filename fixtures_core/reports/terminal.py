"""Human reports of a run: the terminal table, failure details, Markdown.

Reports read results only; they never decide a status (``RowResult.passed``
and the run's ``status`` are the one definition).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fixtures_core.analysis.baseline import Comparison, render_comparison
from fixtures_core.analysis.passk import SuiteFigures
from fixtures_core.errors import BaselineError
from fixtures_core.records.rundoc import RunResult, load_run
from fixtures_core.reports import shipgate
from fixtures_core.results import MetricSummary, RowResult

_STYLE = {"PASS": "green", "FAIL": "red", "ERR": "magenta", "SKIP": "dim"}
_EXCERPT_LINES = 4
_EXCERPT_CHARS = 300


def median_duration_ms(row: RowResult) -> float | None:
    """Median wall time of a row's samples."""
    durations = [s.duration_ms for s in row.samples]
    return statistics.median(durations) if durations else None


def render(run: RunResult, console: Console) -> None:
    """Print the whole terminal report of a run."""
    console.print(rows_table(run))
    metrics = metrics_table(run)
    if metrics is not None:
        console.print(metrics)
    for row in run.rows:
        if row.status in ("FAIL", "ERR"):
            render_failure(row, console)
    render_suite(run, console)
    for suite in run.suites:
        shipgate.render(suite, console)
    if run.comparison is not None:
        console.print()
        render_comparison_lines(run.comparison, console)
    elif run.options.get("baseline") and run.status == "ERR":
        console.print("\nno comparison with the baseline: the run itself errored", style="magenta")
    console.print(verdict_line(run))


def rows_table(run: RunResult) -> Table:
    """One line per row: status, samples passed, median time, pass@k, pass^k."""
    k_label = _k_label(run)
    table = Table(title=f"assay run {run.run_id}" + (f" [{run.label}]" if run.label else ""), title_justify="left")
    table.add_column("row")
    table.add_column("status")
    for name in ("passed", "median", f"pass@{k_label}", f"pass^{k_label}"):
        table.add_column(name, justify="right")
    for row in run.rows:
        median = _duration(median_duration_ms(row))
        table.add_row(row.name, _status_text(row), _passed_cell(row), median, *_passk_cells(row))
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
            table.add_row(row.name, f"{name} ({metric.aggregate})", *_metric_cells(metric))
    return table


def _metric_cells(metric: MetricSummary) -> list[Text | str]:
    value = "-" if metric.value is None else f"{metric.value:.4g} {metric.unit}"
    comparison = metric.comparison
    baseline = delta = ""
    if comparison is not None:
        baseline = (
            f"{comparison.baseline_value:.4g} ({comparison.baseline})"
            if comparison.baseline_value is not None
            else comparison.baseline
        )
        delta = f"{comparison.regression_percent:+.1f}%" if comparison.regression_percent is not None else "-"
    return [value, baseline, delta, _metric_mark(metric)]


def _metric_mark(metric: MetricSummary) -> Text:
    if not metric.gate:
        return Text("informational", style="dim")
    if metric.status == "fail":
        return Text("✗ " + (metric.error or "failed"), style="red")
    if metric.status == "error":
        return Text("error: " + (metric.error or ""), style="magenta")
    if metric.status == "not_evaluated":
        return Text("not evaluated" + (f": {metric.error}" if metric.error else ""), style="dim")
    return Text("ok", style="green")


def _k_label(run: RunResult) -> str:
    k = run.options.get("k")
    return str(k) if k is not None else "k"


def _status_text(row: RowResult) -> Text:
    label: str = row.status
    if row.stochastic is not None and row.stochastic.row_class == "flaky":
        label += " (flaky)"
    return Text(label, style=_STYLE[row.status])


def _passed_cell(row: RowResult) -> str:
    if row.status == "SKIP":
        return "-"
    passed = sum(s.passed for s in row.samples)
    return (
        f"{passed}/{row.repeat}" if len(row.samples) == row.repeat else f"{passed}/{len(row.samples)} of {row.repeat}"
    )


def _passk_cells(row: RowResult) -> list[str]:
    s = row.stochastic
    if s is None:
        return ["-", "-"]
    if s.withheld:
        return ["withheld", "withheld"]
    return [_fraction(s.pass_at_k), _fraction(s.pass_hat_k)]


def _fraction(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}".rstrip("0").rstrip(".") if value not in (0, 1) else f"{value:g}"


def _duration(ms: float | None) -> str:
    if ms is None:
        return "-"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def render_failure(row: RowResult, console: Console) -> None:
    """Why a row failed: the expression, failing sample indices, an output excerpt."""
    console.print(Text(f"\n{row.status} {row.name}  ({row.file}:{row.line})", style=_STYLE[row.status] + " bold"))
    if row.error:
        console.print(f"  {row.error}", markup=False)
    bad = [s for s in row.samples if not s.passed]
    if bad:
        expression = next((s.assertions.expression for s in bad if s.assertions and s.assertions.expression), None)
        if expression:
            console.print(f"  CEL: {expression}", markup=False)
        console.print(f"  failing samples: {', '.join(str(s.index) for s in bad)}", markup=False)
        first = bad[0]
        reason = first.error or (first.assertions.error if first.assertions else None)
        if reason and reason not in (row.error or ""):
            console.print(f"  sample {first.index}: {reason}", markup=False)
        for stream, text in (("stdout", first.stdout), ("stderr", first.stderr)):
            excerpt = _excerpt(text)
            if excerpt:
                console.print(f"  {stream} of sample {first.index}:", markup=False)
                console.print(Text("\n".join("    " + line for line in excerpt.splitlines()), style="dim"))


def _excerpt(text: str) -> str:
    lines = text.strip().splitlines()[:_EXCERPT_LINES]
    joined = "\n".join(lines)
    return joined if len(joined) <= _EXCERPT_CHARS else joined[:_EXCERPT_CHARS] + "…"


def render_suite(run: RunResult, console: Console) -> None:
    """Suite and per-group repeat figures."""
    figures = run.summary.stochastic
    if figures is not None:
        console.print(f"\nsuite: {suite_line(figures)}", markup=False)
    for prop, groups in (run.summary.groups or {}).items():
        for value, group in groups.items():
            console.print(f"  {prop}={value}: {suite_line(group)}", markup=False)


def suite_line(figures: SuiteFigures) -> str:
    """One line of suite figures, or why they are withheld."""
    k = figures.k if figures.k is not None else "k"
    if figures.withheld:
        return f"pass@{k} and pass^{k} {figures.withheld}"
    return (
        f"pass@{k} {_fraction(figures.pass_at_k)} (rows {figures.rows_pass_at_k}/{figures.rows}), "
        f"pass^{k} {_fraction(figures.pass_hat_k)} (rows {figures.rows_pass_hat_k}/{figures.rows})"
    )


def verdict_line(run: RunResult) -> Text:
    """The last line: the run's status and counts."""
    s = run.summary
    counts = f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped; {s.samples} samples"
    text = Text(f"\n{run.verdict}", style=_STYLE[run.verdict] + " bold")
    text.append(f"  {counts}")
    comparison = run.comparison
    if comparison is not None and comparison.error is None:
        text.append("; regression against the baseline" if comparison.regressed else "; no regression")
    if run.error:
        text.append(f"\nerror: {run.error}", style="magenta")
    return text


def markdown(run: RunResult) -> str:
    """A Markdown summary (counts, verdicts, metric values) for a Prefect artifact."""
    lines = [f"# assay run `{run.run_id}`: **{run.verdict}**", "", "| row | status | passed | median | metrics |",
             "|---|---|---:|---:|---|"]  # fmt: skip
    for row in run.rows:
        metrics = "; ".join(
            f"{n} {m.aggregate}={'-' if m.value is None else f'{m.value:.4g}'} {m.unit} {_metric_mark(m).plain}"
            for n, m in row.metrics.items()
        )
        lines.append(
            f"| {row.name} | {row.status} | {_passed_cell(row)} | {_duration(median_duration_ms(row))} | {metrics} |"
        )
    s = run.summary
    lines += ["", f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped"]
    for suite in run.suites:
        lines += ["", *shipgate.suite_markdown(suite)]
    if run.comparison is not None:
        lines += ["", "```", *render_comparison(run.comparison), "```"]
    return "\n".join(lines)


def render_comparison_lines(comparison: Comparison, console: Console) -> None:
    """The baseline comparison: gating lines (``!``) red, informational (``·``) dim."""
    for line in render_comparison(comparison):
        style = "red" if line.startswith("!") else "dim" if line.startswith("·") else None
        console.print(Text(line, style=style or ""))


def render_history(run_files: Sequence[Path], console: Console) -> None:
    """Saved runs, newest first: id, label, date, verdict, rows, pass rate."""
    table = Table(title="assay history", title_justify="left")
    for name in ("run", "label", "started", "verdict", "rows", "pass rate"):
        table.add_column(name, justify="right" if name in ("rows", "pass rate") else "left")
    for path in run_files:
        try:
            run = load_run(path)
        except BaselineError as exc:
            table.add_row(path.parent.name, "", "", Text("unreadable", style="magenta"), "", str(exc.reason))
            continue
        counted = run.summary.rows - run.summary.skipped
        rate = f"{run.summary.passed / counted:.0%}" if counted else "-"
        verdict = Text(run.verdict, style=_STYLE[run.verdict])
        table.add_row(run.run_id, run.label or "", run.started_at, verdict, str(run.summary.rows), rate)
    console.print(table)
