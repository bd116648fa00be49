"""The Markdown report of a run: what the terminal report says, as Markdown.

One renderer for every place that shows a run as Markdown (the Prefect
artifact, the CI step summary, ``report.md``). The answer comes first: the
verdict and why, what changed since the previous run of the suite, the
baseline (its run id, label, start and commit) and the cost, the failing rows
with file:line and every reason, each A/B suite's ship-gate verdict and
failed gates with the cases that broke them, the comparison's answer with its
numbers. Then, collapsed in ``<details>``: the rows table, the metrics table
with baselines, why each row failed (CEL, failing samples, output excerpts),
suite pass@k figures, the A/B ship-gate reports and the comparison with a
saved run; last the verdict line and where the run document is.
"""

from __future__ import annotations

import html
from pathlib import Path

from fixtures_core.analysis.trends import Since
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, shipgate, status_words
from fixtures_core.reports.comparison import (
    ComparisonLines,
    baseline_named,
    comparison_lines,
    regressions,
    text_lines,
)
from fixtures_core.reports.markdown_text import code, escape, fenced, table_row
from fixtures_core.reports.trends import age_text, since_lines, since_of_document
from fixtures_core.text import counted
from fixtures_core.verdicts.gates import GateResult

_ANSWER_ROWS = 20  # failing rows named in the answer; the rest are in the collapsed details


_LOOK_UP = object()  # ``render``'s ``since`` when not given: found beside the run document


def render(run: RunResult, document: str | Path | None = None, since: Since | None | object = _LOOK_UP) -> str:
    """The whole report of ``run`` as Markdown, the answer first (verdict, why, what changed since the
    previous run, the baseline, failing rows, gates, the comparison's answer), then the details collapsed;
    ``document`` is the run document's path. ``since`` defaults to the previous run of the suite in the
    state folder holding ``document`` (the Prefect artifact and ``report.md`` name it)."""
    if since is _LOOK_UP:
        since = since_of_document(run, document) if document is not None else None
    label = f" [{run.label}]" if run.label else ""
    label += f" (rechecked: `{run.rechecked}`)" if run.rechecked else ""
    lines = [f"# assay run `{run.run_id}`{label}: **{status_words.verdict(run.verdict).word}**", ""]
    lines += [f"Verdict: {escape(describe.answer(run))}", ""]
    if isinstance(since, Since):
        told = since_lines(since)
        lines += [f"**{escape(told[0])}**", "", *(f"- {escape(line)}" for line in told[1:]), ""]
    facts = [*describe.baseline_context(run), *filter(None, [describe.cost_line(run), describe.dask_line(run)])]
    if facts:
        lines += [*(f"- {escape(fact)}" for fact in facts), ""]
    compared = comparison_lines(run.comparison) if run.comparison is not None else None
    lines += answer_lines(run, compared, since if isinstance(since, Since) else None)
    lines += _details(f"Rows ({len(run.rows)})", rows_table(run))
    lines += _details("Metrics", metrics_table(run))
    found = describe.failures(run)
    lines += _details(
        f"Why rows failed ({len(found)})", [x for failure in found for x in ["", *failure_section(failure)]]
    )
    lines += _details("Suite figures", [f"- {line.strip()}" for line in describe.suite_lines(run)])
    adaptive = describe.sampling_lines(run)
    title = f"Adaptive sampling ({counted(len(adaptive), 'row')}: {describe.sampling_saving(run)})"
    lines += _details(title, [f"- {escape(line)}" for line in adaptive])
    for outcome in run.suites:
        lines += _details(
            f"A/B suite {outcome.file}: {shipgate.verdict_text(outcome)}", shipgate.suite_markdown(outcome)
        )
    if run.comparison is not None and compared is not None:
        verdict = compared.verdict or "comparison failed"
        named = baseline_named(run.comparison, run.options.get("baseline"))
        lines += _details(f"Comparison with {named}: {verdict}", fenced(text_lines(run.comparison)))
    note = describe.no_comparison_note(run)
    if note:
        lines += ["", note]
    lines += ["", verdict_line(run)]
    if run.error:
        lines += ["", f"error: {escape(run.error)}"]
    if document is not None:
        lines += ["", f"Run document: {code(str(document))}"]
    return "\n".join(lines) + "\n"


def answer_lines(run: RunResult, compared: ComparisonLines | None = None, since: Since | None = None) -> list[str]:
    """What decided the verdict, as a list: failing rows (where, how long they have failed when ``since`` says,
    and why), failed gates, and the comparison (``compared``: its lines, when the run has one)."""
    lines = []
    bad = [row for row in run.rows if row.status in ("FAIL", "ERR", "SKIP")]
    for row in bad[:_ANSWER_ROWS]:
        why = describe.row_reason(row) or row.status
        word = status_words.row(row).word
        age = since.age_of(row) if since is not None else None
        told = f" ({escape(age_text(age))})" if age is not None else ""
        lines.append(f"- **{word}** {escape(row.name)} ({code(f'{row.file}:{row.line}')}){told}: {escape(why)}")
    if len(bad) > _ANSWER_ROWS:
        lines.append(f"- and {len(bad) - _ANSWER_ROWS} more rows failed, errored or were skipped (see the details)")
    for outcome in run.suites:
        failed = [gate for gate in outcome.gates if gate.status != "pass"]
        gates = "; ".join(_gate_told(gate) for gate in failed)
        lines.append(
            f"- A/B suite {code(outcome.file)}: **{shipgate.verdict_text(outcome)}**"
            + (f" ({escape(gates)})" if gates else "")
        )
    if run.comparison is not None and compared is not None:
        regressed = regressions(compared)
        told = compared.verdict or f"comparison failed: {compared.error}"
        lines.append(
            f"- {escape(told)} ({escape(baseline_named(run.comparison, run.options.get('baseline')))})"
            + (f": {escape(', '.join(regressed))}" if regressed else "")
        )
    return [*lines, ""] if lines else []


def _gate_told(gate: GateResult) -> str:
    """``hard gate 'x': FAILED: broken by F3 (r.margin was 2), F5 (r.margin was -1)``."""
    return f"{gate.severity} gate {gate.name!r}: {status_words.gate_text(gate)}"


def _details(summary: str, body: list[str]) -> list[str]:
    """A collapsed section (GitHub, Prefect and most Markdown viewers fold ``<details>``); none when empty."""
    if not body:
        return []
    return ["", f"<details><summary>{html.escape(summary)}</summary>", "", *body, "", "</details>"]


def rows_table(run: RunResult) -> list[str]:
    """One line per row: status (with the flaky label), samples passed, median time, pass@k, pass^k."""
    k = describe.k_label(run)
    lines = [table_row("row", "status", "passed", "median", f"pass@{k}", f"pass^{k}"), "|---|---|---:|---:|---:|---:|"]
    for row in run.rows:
        median = describe.duration(describe.median_duration_ms(row))
        status = escape(status_words.row(row).word)
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
            mark = cells.mark.word
            texts = (row.name, f"{name} ({metric.aggregate})", cells.value, cells.baseline, cells.delta, mark)
            lines.append(table_row(*map(escape, texts)))
    return lines


def failure_section(failure: describe.Failure) -> list[str]:
    """Why one row failed: a heading with file:line, then the reasons and an output excerpt."""
    row = failure.row
    lines = [f"### {status_words.row(row).word} {escape(row.name)} ({code(failure.where)})", ""]
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
    shown = status_words.verdict(run.verdict).word
    return f"**{shown}** {describe.counts(run)}; verdict: {escape(run.verdict.answer)}"
