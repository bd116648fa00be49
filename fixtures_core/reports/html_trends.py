"""The page of ``assay trends --html``: a suite's last runs at a glance, what changed first.

One self-contained file like the run's report (inline CSS and SVG, no
request): what changed since the previous run (flips, flaky rows, metric
steps, cost), then a line per row (flipped rows first) with its status
strip across the runs and a sparkline per metric marking the step where the
level changed, then the cost per run and the runs, each with its whole id.
"""

from __future__ import annotations

from html import escape

from fixtures_core.analysis.trends import MetricTrend, RowTrend, RunPoint, Trends
from fixtures_core.changes import Changes
from fixtures_core.records.history import History
from fixtures_core.reports import plots, status_words
from fixtures_core.reports.html_parts import badge, document, tr
from fixtures_core.reports.trends import (
    age_text,
    change_text,
    changes_lines,
    cost_text,
    flaky_text,
    headline,
    number,
    step_text,
)
from fixtures_core.text import counted


def trends_html(history: History, trends: Trends) -> str:
    """The whole trends page."""
    runs = trends.runs
    first, last = (runs[0], runs[-1]) if runs else (None, None)
    span = f"{first.started_at} to {last.started_at}" if first and last else ""
    body = [
        f"<h1>assay trends: {escape(history.suite.shown)}</h1>",
        f'<p class="muted">the last {counted(len(runs), "run")}, oldest first: {escape(span)}</p>',
        _changed(trends),
        _rows(trends),
        _cost(trends),
        _runs(trends),
        "".join(f'<p class="gating note">note: {escape(note)}</p>' for note in history.notes),
        '<p class="muted">Written by assay; one file, no network. A metric\'s step: the split of its runs into '
        "an earlier and a later part (2 runs or more each) that fits two flat levels best; shown when the "
        "two medians differ by more than 10% and by more than 3 times the larger mean absolute deviation from a "
        "part's median.</p>",
    ]
    return document(f"assay trends: {history.suite.shown}", body)


def _changed(trends: Trends) -> str:
    """The newest run's verdict in words, then what changed: rows failing now with their age, rows that changed
    in the window, flips, flaky rows, steps, cost."""
    newest, *rest = headline(trends, changes=False)
    items = "".join(f"<li>{escape(line)}</li>" for line in rest)
    commits = changes_html(trends.changes) if trends.changes is not None else ""
    latest = trends.runs[-1] if trends.runs else None
    verdict = badge(_verdict_look(latest.verdict)) + " " if latest is not None else ""
    return (
        f'<div id="changed" class="since"><h2>What changed</h2><p id="newest">{verdict}{escape(newest)}</p>'
        f"<ul>{items}</ul>{commits}</div>"
    )


def changes_html(changes: Changes) -> str:
    """The commits between two runs: the range (a link to the forge's compare page when there is one), then
    a line per commit, at most a screenful, and how many more."""
    first, *rest = changes_lines(changes)
    if changes.link and changes.total:
        first = first.replace(f" ({changes.link})", "")
        head = f'{escape(first)} <a class="compare" href="{escape(changes.link)}">compare</a>'
    else:
        head = escape(first)
    listed = "".join(
        f"<li><code>{escape(commit.sha[:12])}</code> {escape(commit.subject)}</li>" for commit in changes.commits
    )
    more = f'<p class="muted">and {changes.more} more commits</p>' if changes.more > 0 else ""
    return f'<div class="commits"><p>{head}</p>' + (f"<ul>{listed}</ul>" if listed else "") + f"{more}</div>"


def _rows(trends: Trends) -> str:
    runs = trends.runs
    head = tr(["row", f"status, runs 1..{len(runs)}", "what changed", "metrics"], header=True)
    lines = []
    for row in trends.rows:
        cells = [
            plots.StripCell(status, flaky, _strip_title(runs, index, status, flaky))
            for index, (status, flaky) in enumerate(zip(row.statuses, row.flaky, strict=True))
        ]
        css = "trend" + (" flipped" if row.flip is not None else "") + (" flaky-row" if row.flaky_runs >= 2 else "")
        flip = f'<div class="age gating">{escape(age_text(row.age))}</div>' if row.age is not None else ""
        changed = change_text(row, runs)
        flip += f'<div class="change">{escape(changed)}</div>' if changed else ""
        if row.flip is not None:
            worse = " gating" if row.flip[1] in ("FAIL", "ERR") else ""
            flip += (
                f'<div class="flip{worse}">{escape(row.flip[0])} → {escape(row.flip[1])} since the previous run</div>'
            )
        lines.append(
            f'<tr class="{css}" data-row="{escape(row.name)}" data-file="{escape(row.file)}">'
            f'<td>{escape(row.name)}<br><span class="muted">{escape(row.file)}</span></td>'
            f"<td>{plots.status_strip(cells)}</td>"
            f'<td class="changed">{flip}<div class="flaky">{escape(flaky_text(row))}</div></td>'
            f"<td>{_metrics(row, runs)}</td></tr>"
        )
    return '<h2 id="rows">Rows</h2><table class="trends">' + head + "".join(lines) + "</table>"


def _strip_title(runs: tuple[RunPoint, ...], index: int, status: str | None, flaky: bool) -> str:
    shown = "did not run" if status is None else status + (" (flaky)" if flaky else "")
    return f"run {index + 1} {runs[index].run_id}: {shown}"


def _metrics(row: RowTrend, runs: tuple[RunPoint, ...]) -> str:
    parts = []
    for metric in row.metrics:
        parts.append(
            f'<div class="metric-trend" data-metric="{escape(metric.name)}"'
            f'{" data-step=" + chr(34) + str(metric.step.index + 1) + chr(34) if metric.step else ""}>'
            f'<span class="muted name">{escape(metric.name)} ({escape(metric.unit)})</span>{_spark(metric, runs)}'
            + (f'<span class="step-text{" gating" if metric.worse else ""}">{escape(step_text(metric, runs))}</span>'
               if metric.step else "")
            + "</div>"
        )  # fmt: skip
    return "".join(parts)


def _spark(metric: MetricTrend, runs: tuple[RunPoint, ...]) -> str:
    titles = [
        f"run {index + 1} {runs[index].run_id}: " + ("-" if value is None else f"{number(value)} {metric.unit}")
        for index, value in enumerate(metric.values)
    ]
    step = metric.step
    return plots.sparkline(
        metric.values,
        titles,
        step.index if step is not None else None,
        (step.before, step.after) if step is not None else None,
        metric.worse,
    )


def _cost(trends: Trends) -> str:
    total = trends.total_cost()
    if not total:
        return ""
    first = total[0]
    values = [next((c.total for c in run.costs if c.metric == first.metric), None) for run in trends.runs]
    titles = [
        f"run {index + 1} {run.run_id}: " + ("-" if value is None else f"{number(value)} {first.unit}")
        for index, (run, value) in enumerate(zip(trends.runs, values, strict=True))
    ]
    told = "; ".join(cost_text(cost) for cost in total)
    return (
        f'<h2 id="cost">Cost per run</h2><p id="cost-total">in all: {escape(told)}</p>'
        f"{plots.column_bars(values, titles)}"
    )


def _verdict_look(verdict: str) -> status_words.Look:
    """A stored run's verdict (``DRY RUN`` too) in its colour."""
    return status_words.of_word(verdict) or status_words.Look(verdict, "skip")


def _runs(trends: Trends) -> str:
    head = tr(["#", "run", "label", "started", "commit", "verdict", "cost"], header=True, numeric={0})
    lines = []
    for index, run in enumerate(trends.runs, 1):
        cost = run.cost
        lines.append(
            f'<tr class="run"><td class="num">{index}</td><td><code class="run-id">{escape(run.run_id)}</code></td>'
            f"<td>{escape(run.label or '')}</td><td>{escape(run.started_at)}</td>"
            f"<td><code>{escape((run.commit or '')[:12])}</code></td>"
            f"<td>{badge(_verdict_look(run.verdict))}</td>"
            f"<td class='num'>{escape(f'{number(cost.total)} {cost.unit}' if cost else '-')}</td></tr>"
        )
    return '<h2 id="runs">Runs</h2><table class="runs">' + head + "".join(lines) + "</table>"
