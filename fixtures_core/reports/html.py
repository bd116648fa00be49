"""The HTML report of a run: one self-contained file that works offline.

No font, no request: inline CSS, static SVG plots (``reports.plots``) and
``<details>`` for the drill-down, so the file opens the same in any browser,
from a CI artifact or an e-mail, years from now. A few lines of inline script
add sorting and a status filter to the rows table; without script the page
shows everything. It shows the verdict and why, the rows with pass@k/pass^k
and flaky marks, a distribution plot per metric (with the saved run's values
and its regressions), pass@k per group, the comparison with a saved run, each
A/B suite (``html_suite``), and each row's samples with the failing check and
an output excerpt.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fixtures_core.analysis.baseline import MetricDelta
from fixtures_core.analysis.passk import SuiteFigures
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, plots
from fixtures_core.reports.comparison import Mark, baseline_named, comparison_lines, still_failing_text
from fixtures_core.reports.html_parts import Html, tr
from fixtures_core.reports.html_suite import ab_sections
from fixtures_core.results import MetricSummary, RowResult, SampleResult
from fixtures_core.text import excerpt

_EXCERPT_LINES = 20
_EXCERPT_CHARS = 1500
_SAMPLES_WITH_OUTPUT = 3  # failing samples per row whose output excerpts are shown

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:#212121;
 margin:0 auto;max-width:1100px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #e0e0e0}
h3{font-size:15px;margin:18px 0 4px}
table{border-collapse:collapse;margin:6px 0}th,td{padding:3px 10px;border-bottom:1px solid #eeeeee;
 text-align:left;vertical-align:top}th{background:#fafafa}td.num,th.num{text-align:right;white-space:nowrap}
table.rows td:first-child{white-space:nowrap}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;color:#fff;font-size:12px}
.PASS{background:#2e7d32}.FAIL{background:#c62828}.ERR{background:#8e24aa}.SKIP{background:#9e9e9e}
.verdict{font-size:20px;padding:3px 14px}.flaky{color:#ef6c00;font-weight:600}
.muted{color:#757575}.gating{color:#c62828;font-weight:600}pre{background:#f5f5f5;padding:8px;
 overflow-x:auto;white-space:pre-wrap;word-break:break-all;max-height:24em}
details{margin:6px 0;border:1px solid #e0e0e0;border-radius:4px;padding:4px 10px}
summary{cursor:pointer;font-weight:600}.legend span{margin-right:14px}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:4px}
code{background:#f5f5f5;padding:0 3px}svg.plot{max-width:100%;height:auto;display:block}
.verdict-box{border:2px solid #e0e0e0;border-radius:6px;padding:8px 14px;margin:8px 0}
.verdict-box.box-FAIL,.verdict-box.box-ERR{border-color:#c62828;background:#fff5f5}
.verdict-box.box-PASS{border-color:#2e7d32}
.verdict-box p{margin:4px 0}tr.regressed td{background:#ffebee}
.filters button{margin-right:6px;border:1px solid #bdbdbd;background:#fff;border-radius:10px;padding:1px 10px;
 cursor:pointer}.filters button.on{background:#424242;color:#fff}table.rows th{cursor:pointer}
.ship-gate-verdict .badge{font-size:16px;padding:3px 12px}
"""
# Sorting and filtering of the rows table: the page works without it (every row is shown).
_SCRIPT = """
(function () {
  var table = document.querySelector("table.rows"), filter = document.getElementById("row-filter");
  if (!table || !filter) return;
  function rows() { return Array.prototype.slice.call(table.querySelectorAll("tr.row")); }
  filter.hidden = false;
  filter.addEventListener("click", function (event) {
    var status = event.target.dataset ? event.target.dataset.status : undefined;
    if (status === undefined) return;
    filter.querySelectorAll("button").forEach(function (b) { b.classList.toggle("on", b === event.target); });
    rows().forEach(function (r) { r.hidden = !(status === "" || r.dataset.status === status); });
  });
  table.querySelectorAll("th").forEach(function (head, column) {
    head.title = "sort";
    head.addEventListener("click", function () {
      var up = head.dataset.dir !== "up";
      head.dataset.dir = up ? "up" : "down";
      function key(r) {
        var cell = r.children[column], text = cell.dataset.sort !== undefined ? cell.dataset.sort : cell.textContent;
        var number = parseFloat(text);
        return isNaN(number) ? text.trim() : number;
      }
      rows().sort(function (a, b) {
        var x = key(a), y = key(b);
        var order = typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === "number" ? -1 : 1;
        return up ? order : -order;
      }).forEach(function (r) { r.parentNode.appendChild(r); });
    });
  });
})();
"""


def html(run: RunResult) -> str:
    """The whole report of ``run`` as one HTML document."""
    anchors = {row.id: f"row-{index}" for index, row in enumerate(run.rows)}
    body = [
        _header(run),
        _rows_section(run, anchors),
        _metrics_section(run, anchors),
        ab_sections(run.suites),
        _suite_section(run),
        _comparison_section(run),
        _samples_section(run, anchors),
        '<p class="muted">Written by assay '
        f"{escape(str(run.environment.get('assay_version', '')))}; one file, no network.</p>",
    ]
    title = f"assay {run.verdict.shown}: {run.run_id}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{_SCRIPT}</script>\n</body></html>\n"
    )


# --- header ---------------------------------------------------------------------

_GATING = ' class="gating"'
_SHOWN_OPTIONS = ("k", "repeat", "filter", "group_by", "baseline", "tolerance", "engine")


def _header(run: RunResult) -> str:
    s = run.summary
    verdict = run.verdict
    label = f" <span class='muted'>[{escape(run.label)}]</span>" if run.label else ""
    counts = (
        f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped; "
        f"{s.samples} samples in {s.rows} rows"
    )
    facts = [("started", run.started_at), ("finished", run.finished_at)]
    env = run.environment
    git = env.get("git")
    if isinstance(git, dict) and git.get("commit"):
        dirty = " (dirty)" if git.get("dirty") else ""
        facts.append(("commit", f"{str(git['commit'])[:12]} {git.get('branch') or ''}{dirty}"))
    facts += [(k, str(env[k])) for k in ("python", "platform") if k in env]
    facts += [(f"--{k.replace('_', '-')}", _option(v)) for k, v in run.options.items() if k in _SHOWN_OPTIONS]
    parts = [
        f"<h1>assay run <code>{escape(run.run_id)}</code>{label}</h1>",
        f'<div id="verdict-box" class="verdict-box box-{verdict.colour}">'
        f'<p><span id="verdict" class="badge verdict {verdict.colour}">{verdict.shown}</span> {escape(counts)}</p>',
        f'<p id="answer"{_GATING if verdict.exit_code else ""}>verdict: {escape(describe.answer(run))}</p>',
    ]
    if run.error:
        parts.append(f'<p class="gating">error: {escape(run.error)}</p>')
    parts.append("</div>")
    parts.append('<p class="muted">' + " · ".join(f"{escape(k)} {escape(v)}" for k, v in facts if v) + "</p>")
    return "\n".join(parts)


def _option(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


# --- rows -----------------------------------------------------------------------


def _rows_section(run: RunResult, anchors: dict[str, str]) -> str:
    k = describe.k_label(run)
    head = tr(
        ["row", "status", "passed", "pass rate (95% CI)", f"pass@{k}", f"pass^{k}", "median time", "why"],
        header=True,
        numeric={2, 3, 4, 5, 6},
    )
    regressed = _regressions(run)
    lines = []
    for row in run.rows:
        link = f'<a href="#{anchors[row.id]}">{escape(row.name)}</a>'
        pass_at, pass_hat = _passk(row)
        median = describe.duration(describe.median_duration_ms(row))
        sampled = f"sampling: {row.sampling}" if row.sampling else None
        why = "; ".join(filter(None, [describe.row_reason(row), *regressed.get(row.name, []), sampled]))
        css = "row regressed" if row.name in regressed else "row"
        lines.append(
            f'<tr class="{css}" data-row="{escape(row.name)}" data-status="{row.status}">'
            f"<td>{link}</td><td>{_status(row)}</td><td class='num'>{describe.passed_cell(row)}</td>"
            f"<td class='num'>{_rate(row)}</td><td class='num'>{pass_at}</td><td class='num'>{pass_hat}</td>"
            f"<td class='num' data-sort='{describe.median_duration_ms(row) or ''}'>{median}</td>"
            f"<td>{escape(why)}</td></tr>"
        )
    return (
        f'<h2 id="rows">Rows</h2>\n{_filter_buttons(run)}<table class="rows">{head}\n' + "\n".join(lines) + "</table>"
    )


def _filter_buttons(run: RunResult) -> str:
    """Buttons that show only the rows of one status (hidden until the script runs)."""
    present = [s for s in ("PASS", "FAIL", "ERR", "SKIP") if any(row.status == s for row in run.rows)]
    buttons = ['<button type="button" class="on" data-status="">all</button>']
    buttons += [f'<button type="button" data-status="{s}">{s}</button>' for s in present]
    return f'<p id="row-filter" class="filters" hidden>show {"".join(buttons)}</p>'


def _regressions(run: RunResult) -> dict[str, list[str]]:
    """What regressed against the saved run, by row name: its status, its metrics."""
    comparison = run.comparison
    if comparison is None:
        return {}
    found: dict[str, list[str]] = {}
    for change in comparison.changes:
        if change.gating:
            found.setdefault(change.row, []).append(
                f"regressed vs {comparison.baseline}: {change.before} → {change.after}"
            )
    for delta in comparison.metrics:
        if delta.regressed:
            found.setdefault(delta.row, []).append(f"{delta.name} regressed vs {comparison.baseline}")
    return found


def _status(row: RowResult) -> str:
    flaky = row.stochastic is not None and row.stochastic.row_class == "flaky"
    mark = ' <span class="flaky" title="some samples passed, some failed">flaky</span>' if flaky else ""
    return f'<span class="badge {row.status}">{row.status}</span>{mark}'


def _rate(row: RowResult) -> str:
    s = row.stochastic
    if s is None or s.pass_rate is None:
        return "-"
    interval = s.pass_rate_interval
    spread = f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
    return f"{s.pass_rate:.2f}{spread}"


def _passk(row: RowResult) -> tuple[str, str]:
    s = row.stochastic
    if s is None:
        return "-", "-"
    if s.withheld:
        title = escape(s.withheld)
        withheld = f'<span class="muted" title="{title}">withheld</span>'
        return withheld, withheld
    return describe.fraction(s.pass_at_k), describe.fraction(s.pass_hat_k)


# --- metrics --------------------------------------------------------------------


def _metrics_section(run: RunResult, anchors: dict[str, str]) -> str:
    names = list(dict.fromkeys(name for row in run.rows for name in row.metrics))
    if not names:
        return ""
    parts = ['<h2 id="metrics">Metrics</h2>', _legend(run)]
    saved = _saved_deltas(run)
    for name in names:
        rows = [(row, row.metrics[name]) for row in run.rows if name in row.metrics]
        first = rows[0][1]
        lanes = [plots.lane(row, name, metric, anchors[row.id], saved.get((row.name, name))) for row, metric in rows]
        facts = [first.unit, first.aggregate, f"{first.direction} is better" if first.direction != "none" else ""]
        facts.append("informational, never gates" if not first.gate else "")
        off = plots.off_axis_limits(lanes)
        note = (
            f'<p class="muted">threshold {", ".join(f"{v:,.6g}" for v in off)} {escape(first.unit)} '
            "is beyond the axis: no sample is near it</p>"
            if off
            else ""
        )
        parts.append(
            f'<h3 class="metric">{escape(name)} <span class="muted">({escape(", ".join(f for f in facts if f))})'
            f"</span></h3>\n{plots.strip_plot(name, first.unit, lanes)}\n{note}{_metric_table(name, rows, saved, run)}"
        )
    return "\n".join(parts)


def _saved_deltas(run: RunResult) -> dict[tuple[str, str], MetricDelta]:
    """Each (row, metric) compared with the saved run (``--baseline``), when the run has one."""
    if run.comparison is None:
        return {}
    return {(delta.row, delta.name): delta for delta in run.comparison.metrics}


def _legend(run: RunResult) -> str:
    dots = "".join(
        f'<span><i class="dot" style="background:{plots.COLORS[k]}"></i>{label}</span>'
        for k, label in (("pass", "sample passed"), ("fail", "sample failed"), ("error", "sample errored"))
    )
    saved = (
        f'<span style="color:{plots.SAVED_COLOR}">┆ saved run ({escape(run.comparison.baseline)}); '
        "a red ! marks a regression</span>"
        if run.comparison is not None
        else ""
    )
    return (
        f'<p class="legend muted">{dots}<span>◇ aggregate</span>'
        '<span style="color:#1565c0">┆ baseline row</span>'
        f'{saved}<span style="color:#c62828">▮ fails a threshold</span></p>'
    )


def _metric_table(
    name: str,
    rows: Sequence[tuple[RowResult, MetricSummary]],
    saved: dict[tuple[str, str], MetricDelta],
    run: RunResult,
) -> str:
    compared = run.comparison is not None
    titles = ["row", "aggregate", "baseline row", "Δ%", *(["saved run", "Δ% vs saved"] if compared else []), "verdict"]
    numeric = {1, 2, 3, 4, 5} if compared else {1, 2, 3}
    head = tr(titles, header=True, numeric=numeric)
    lines = []
    for row, metric in rows:
        value = "-" if metric.value is None else f"{metric.value:.4g} {metric.unit}"
        comparison = metric.comparison
        baseline = delta = ""
        if comparison is not None:
            known = comparison.baseline_value is not None
            baseline = f"{comparison.baseline_value:.4g} ({comparison.baseline})" if known else comparison.baseline
            percent = comparison.regression_percent
            delta = "-" if percent is None else f"{percent:+.1f}%"
        against = saved.get((row.name, name)) if compared else None
        verdict = _metric_verdict(metric)
        extra: list[str] = []
        if compared:
            extra = ["-" if against is None or against.baseline is None else f"{against.baseline:.4g} {metric.unit}"]
            shown = None if against is None else against.delta_percent
            extra.append("-" if shown is None else f"{shown:+.1f}%")
        regressed = against is not None and against.regressed
        if regressed and against is not None and run.comparison is not None:
            verdict = f"✗ regressed vs {run.comparison.baseline}" + (f": {against.note}" if against.note else "")
        cells = [row.name, value, baseline, delta, *extra, verdict]
        lines.append(tr(cells, numeric=numeric, css="regressed" if regressed else ""))
    return '<table class="metric-values">' + head + "".join(lines) + "</table>"


def _metric_verdict(metric: MetricSummary) -> str:
    if not metric.gate:
        return "informational"
    if metric.status in ("fail", "error"):
        return f"{'✗' if metric.status == 'fail' else 'error:'} {metric.error or ''}"
    if metric.status == "not_evaluated":
        return "not evaluated" + (f": {metric.error}" if metric.error else "")
    return "ok"


# --- suite figures --------------------------------------------------------------


def _suite_section(run: RunResult) -> str:
    saving = describe.sampling_saving(run)
    note = f'<p class="muted">adaptive sampling: {escape(saving)}</p>' if saving else ""
    figures = run.summary.stochastic
    if figures is None:
        return note
    k = describe.k_label(run)
    head = tr(
        ["group", "rows", f"pass@{k}", "", f"rows meeting pass@{k}", f"pass^{k}", "", f"rows meeting pass^{k}"],
        header=True,
        numeric={1, 2, 4, 5, 7},
    )
    lines = [_suite_row("all rows", figures)]
    for prop, groups in (run.summary.groups or {}).items():
        lines += [_suite_row(f"{prop}={value}", group) for value, group in groups.items()]
    table = f'<h2 id="suite">pass@{k} and pass^{k}</h2>\n<table class="suite">{head}' + "".join(lines) + "</table>"
    return table + note


def _suite_row(name: str, figures: SuiteFigures) -> str:
    if figures.withheld:
        return (
            f'<tr class="group"><td>{escape(name)}</td><td class="num">{figures.rows}</td>'
            f'<td colspan="6" class="muted">withheld: {escape(figures.withheld)}</td></tr>'
        )
    return (
        f'<tr class="group"><td>{escape(name)}</td><td class="num">{figures.rows}</td>'
        f'<td class="num">{describe.fraction(figures.pass_at_k)}</td><td>{plots.bar(figures.pass_at_k)}</td>'
        f'<td class="num">{figures.rows_pass_at_k}/{figures.rows}</td>'
        f'<td class="num">{describe.fraction(figures.pass_hat_k)}</td><td>{plots.bar(figures.pass_hat_k)}</td>'
        f'<td class="num">{figures.rows_pass_hat_k}/{figures.rows}</td></tr>'
    )


# --- comparison -----------------------------------------------------------------


def _comparison_section(run: RunResult) -> str:
    comparison = run.comparison
    if comparison is None:
        note = describe.no_comparison_note(run)  # an errored run with --baseline: no comparison verdict
        return f'<h2 id="comparison">Comparison</h2><p class="gating">{escape(note)}</p>' if note else ""
    found = comparison_lines(comparison)
    title = (
        f'<h2 id="comparison">Comparison with {escape(baseline_named(comparison, run.options.get("baseline")))}</h2>'
        f'<p class="muted">tolerance {found.tolerance}; <b class="gating">!</b> a gating line that '
        "regressed, · informational (never gates)</p>"
    )
    if found.error is not None:
        return f'{title}<p class="gating">Comparison failed: {escape(found.error)}</p>'
    numeric = {2, 3, 4, 5}
    head = tr(["", "what", "baseline", "current", "Δ", "p", "note"], header=True, numeric=numeric)
    figures = "".join(
        tr([_mark(f.mark), f.name, f.baseline, f.current, f.delta, f.p, f.note], numeric=numeric, css=f.mark)
        for f in found.figures
    )
    parts = [title, f'<table class="comparison">{head}{figures}</table>']
    if found.still_failing:
        parts.append(
            f'<p class="still-failing">{_mark("informational")} {escape(still_failing_text(found.still_failing))}</p>'
        )
    if found.rows:
        head = tr(["", "row", "baseline", "current", "p"], header=True, numeric={4})
        rows = "".join(
            tr([_mark(r.mark), r.row, r.before, r.after, r.p], numeric={4}, css=f"change {r.mark}") for r in found.rows
        )
        parts.append(f'<h3>Changed rows</h3><table class="changes">{head}{rows}</table>')
    parts += [f'<p class="muted">warning: {escape(w)}</p>' for w in found.warnings]
    if found.verdict is not None:
        css = ' class="gating"' if comparison.regressed else ""
        parts.append(f'<p id="comparison-verdict"{css}>{escape(found.verdict)}</p>')
    return "\n".join(parts)


def _mark(mark: Mark) -> Html:
    if mark == "regressed":
        return Html('<b class="gating">!</b>')
    return Html('<span class="muted">·</span>' if mark == "informational" else "")


# --- samples --------------------------------------------------------------------


def _samples_section(run: RunResult, anchors: dict[str, str]) -> str:
    parts = ['<h2 id="samples">Rows and their samples</h2>']
    for row in run.rows:
        parts.append(_row_details(row, anchors[row.id]))
    return "\n".join(parts)


def _row_details(row: RowResult, anchor: str) -> str:
    opened = " open" if row.status in ("FAIL", "ERR") else ""
    where = f"{row.file}:{row.line}"
    head = (
        f'<details class="row-detail" id="{anchor}"{opened}><summary>{escape(row.name)} {_status(row)} '
        f'<span class="muted">{describe.passed_phrase(row)} · {escape(where)}</span></summary>'
    )
    body = []
    reason = describe.row_reason(row)
    if reason and row.status != "PASS":
        body.append(f"<p>{escape(reason)}</p>")
    expression = describe.assertion_expression(row)
    if expression:
        body.append(f"<p>CEL <code>{escape(expression)}</code></p>")
    props = ", ".join(f"{k}={v}" for k, v in row.properties.items() if isinstance(v, (str, int, float)))
    if props:
        body.append(f'<p class="muted">{escape(props)}</p>')
    if row.samples:
        body.append(_samples_table(row))
    for sample in [s for s in row.samples if not s.passed][:_SAMPLES_WITH_OUTPUT]:
        body.append(_output(sample))
    if row.evidence:
        body.append(f"<p class=\"muted\">every sample's raw output: {escape(row.evidence)} in the run's folder</p>")
    return head + "".join(body) + "</details>"


def _samples_table(row: RowResult) -> str:
    names = list(row.metrics) or list(dict.fromkeys(n for s in row.samples for n in s.metrics))
    head = tr(["#", "status", "time", "exit", *names, "check"], header=True, numeric=set(range(2, 4 + len(names))))
    lines = []
    for sample in row.samples:
        values = []
        for name in names:
            value = sample.metrics.get(name)
            values.append("-" if value is None or value.value is None else f"{value.value:.4g}")
        check = "" if sample.passed else describe.sample_reason(sample)
        cells = [
            str(sample.index),
            sample.status,
            describe.duration(sample.duration_ms),
            _opt_int(sample.exit_code),
            *values,
        ]
        lines.append(
            f'<tr class="sample" data-status="{sample.status}">'
            + "".join(f"<td{_num_class(i, names)}>{escape(c)}</td>" for i, c in enumerate(cells))
            + f"<td>{escape(check)}</td></tr>"
        )
    return '<table class="samples">' + head + "".join(lines) + "</table>"


def _num_class(index: int, names: Sequence[str]) -> str:
    return ' class="num"' if 2 <= index < 4 + len(names) else ""


def _output(sample: SampleResult) -> str:
    blocks = []
    for stream, text in (("stdout", sample.stdout), ("stderr", sample.stderr)):
        shown = excerpt(text, _EXCERPT_CHARS, lines=_EXCERPT_LINES)
        if shown:
            cut = " (excerpt)" if sample.excerpted or shown != text.strip() else ""
            blocks.append(f"<p class='muted'>{stream} of sample {sample.index}{cut}</p><pre>{escape(shown)}</pre>")
    return "".join(blocks)


# --- small formats --------------------------------------------------------------


def _opt_int(value: int | None) -> str:
    return "-" if value is None else str(value)
