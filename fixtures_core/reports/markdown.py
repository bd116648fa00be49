"""The Markdown report of a run: what the terminal report says, as Markdown.

One renderer for every place that shows a run as Markdown (the Prefect
artifact, the CI step summary, ``report.md``): the rows table, the metrics
table with baselines, why each row failed (file:line, CEL, failing samples,
output excerpts), suite pass@k figures, A/B ship gates, the comparison with a
saved run, the verdict, and where the run document is.
"""

from __future__ import annotations

from pathlib import Path

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, shipgate
from fixtures_core.reports.comparison import text_lines
from fixtures_core.reports.markdown_text import code, escape, fenced, table_row


def render(run: RunResult, document: str | Path | None = None) -> str:
    """The whole report of ``run`` as Markdown; ``document`` is the run document's path, when known."""
    label = f" [{run.label}]" if run.label else ""
    lines = [f"# assay run `{run.run_id}`{label}: **{run.verdict.shown}**", ""]
    lines += [f"Verdict: {escape(describe.answer(run))}", ""]
    lines += rows_table(run)
    metrics = metrics_table(run)
    if metrics:
        lines += ["", "## Metrics", "", *metrics]
    found = describe.failures(run)
    if found:
        lines += ["", "## Failures"]
        for failure in found:
            lines += ["", *failure_section(failure)]
    suite = describe.suite_lines(run)
    if suite:
        lines += ["", "## Suite", "", *(f"- {line.strip()}" for line in suite)]
    for outcome in run.suites:
        lines += ["", *shipgate.suite_markdown(outcome)]
    if run.comparison is not None:
        lines += ["", "## Comparison with the baseline", "", *fenced(text_lines(run.comparison))]
    note = describe.no_comparison_note(run)
    if note:
        lines += ["", note]
    lines += ["", verdict_line(run)]
    if run.error:
        lines += ["", f"error: {escape(run.error)}"]
    if document is not None:
        lines += ["", f"Run document: {code(str(document))}"]
    return "\n".join(lines) + "\n"


def rows_table(run: RunResult) -> list[str]:
    """One line per row: status (with the flaky label), samples passed, median time, pass@k, pass^k."""
    k = describe.k_label(run)
    lines = [table_row("row", "status", "passed", "median", f"pass@{k}", f"pass^{k}"), "|---|---|---:|---:|---:|---:|"]
    for row in run.rows:
        median = describe.duration(describe.median_duration_ms(row))
        status = escape(describe.status_label(row))
        if row.status in ("FAIL", "ERR"):
            status = f"**{status}**"
        lines.append(table_row(escape(row.name), status, describe.passed_cell(row), median, *describe.passk_cells(row)))
    return lines


def metrics_table(run: RunResult) -> list[str]:
    """One line per row and metric: aggregate, baseline row value, signed regression, verdict; [] without metrics."""
    if not any(r.metrics for r in run.rows):
        return []
    lines = [table_row("row", "metric", "value", "baseline", "Δ%", ""), "|---|---|---:|---:|---:|---|"]
    for row in run.rows:
        for name, metric in row.metrics.items():
            cells = describe.metric_cells(metric)
            texts = (row.name, f"{name} ({metric.aggregate})", cells.value, cells.baseline, cells.delta, cells.mark)
            lines.append(table_row(*map(escape, texts)))
    return lines


def failure_section(failure: describe.Failure) -> list[str]:
    """Why one row failed: a heading with file:line, then the reasons and an output excerpt."""
    row = failure.row
    lines = [f"### {row.status} {escape(row.name)} ({code(failure.where)})", ""]
    if failure.error:
        lines.append(f"- {escape(failure.error)}")
    if failure.expression:
        lines.append(f"- CEL: {code(failure.expression)}")
    if failure.failing_samples:
        lines.append(f"- failing samples: {', '.join(map(str, failure.failing_samples))}")
    if failure.sample_reason:
        lines.append(f"- sample {failure.first_sample}: {escape(failure.sample_reason)}")
    for stream, text in failure.excerpts:
        lines += ["", f"{stream} of sample {failure.first_sample}:", "", *fenced(text.splitlines())]
    return lines


def verdict_line(run: RunResult) -> str:
    """The run's own verdict and row counts, then both answers with the exit code."""
    return f"**{run.verdict.shown}** {describe.counts(run)}; verdict: {escape(run.verdict.answer)}"
