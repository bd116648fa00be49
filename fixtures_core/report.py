"""Human reports of a run: the terminal table, failure details, Markdown.

Reports read results only; they never decide a status (``RowResult.passed``
and the run's ``status`` are the one definition).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fixtures_core.passk import SuiteFigures
from fixtures_core.results import MetricSummary, RowResult
from fixtures_core.rundoc import RunResult

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
    for row in run.rows:
        if row.status in ("FAIL", "ERR"):
            render_failure(row, console)
    render_suite(run, console)
    console.print(verdict_line(run))


def rows_table(run: RunResult) -> Table:
    """One line per row: status, samples, median time, pass@k, pass^k, metrics."""
    with_metrics = any(r.metrics for r in run.rows)
    k_label = _k_label(run)
    table = Table(title=f"assay run {run.run_id}" + (f" [{run.label}]" if run.label else ""), title_justify="left")
    for name, justify in (("row", "left"), ("status", "left"), ("passed", "right"), ("median", "right"),
                          (f"pass@{k_label}", "right"), (f"pass^{k_label}", "right")):  # fmt: skip
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    if with_metrics:
        table.add_column("metrics")
    for row in run.rows:
        cells: list[Text | str] = [row.name, _status_text(row), _passed_cell(row), _duration(median_duration_ms(row)),
                                   *_passk_cells(row)]  # fmt: skip
        if with_metrics:
            cells.append(_metrics_cell(row.metrics))
        table.add_row(*cells)
    return table


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


def _metrics_cell(metrics: Mapping[str, MetricSummary]) -> Text:
    text = Text()
    for index, (name, metric) in enumerate(metrics.items()):
        if index:
            text.append("\n")
        style = {"fail": "red", "error": "magenta"}.get(metric.status, "")
        value = "-" if metric.value is None else f"{metric.value:.4g}"
        line = f"{name} {metric.aggregate}={value} {metric.unit}"
        comparison = metric.comparison
        if comparison is not None and comparison.baseline_value is not None:
            line += f" vs {comparison.baseline_value:.4g}"
            if comparison.regression_percent is not None:
                line += f" ({comparison.regression_percent:+.1f}%)"
        if metric.status in ("fail", "error"):
            line += " ✗" if metric.gate else " (informational)"
        elif metric.status == "not_evaluated":
            line += " (not evaluated)"
        text.append(line, style=style if metric.gate else "dim")
    return text


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
        if reason and reason != row.error:
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
    text = Text(f"\n{run.status}", style=_STYLE[run.status] + " bold")
    text.append(f"  {counts}")
    if run.error:
        text.append(f"\nerror: {run.error}", style="magenta")
    return text


def markdown(run: RunResult) -> str:
    """A Markdown summary (counts, verdicts, metric values) for a Prefect artifact."""
    lines = [f"# assay run `{run.run_id}`: **{run.status}**", "", "| row | status | passed | median | metrics |",
             "|---|---|---:|---:|---|"]  # fmt: skip
    for row in run.rows:
        metrics = "; ".join(_metrics_cell({n: m}).plain for n, m in row.metrics.items())
        lines.append(
            f"| {row.name} | {row.status} | {_passed_cell(row)} | {_duration(median_duration_ms(row))} | {metrics} |"
        )
    s = run.summary
    lines += ["", f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped"]
    return "\n".join(lines)
