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
from dataclasses import dataclass
from html import escape

from fixtures_core.analysis.baseline import MetricDelta
from fixtures_core.analysis.passk import SuiteFigures
from fixtures_core.analysis.trends import Since
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, plots, status_words
from fixtures_core.reports.comparison import FigureLine, Mark, baseline_named, comparison_lines, still_failing_text
from fixtures_core.reports.evidence_links import EvidenceLinks
from fixtures_core.reports.heatmap import Pivot, heatmaps, pivot_of, pivots_of
from fixtures_core.reports.html_parts import Html, badge, document, tr
from fixtures_core.reports.html_suite import (
    ab_sections,
    attempt_links,
    evidence_href,
    evidence_run,
    ship_decisions,
    shipped_scores,
)
from fixtures_core.reports.html_trends import changes_html
from fixtures_core.reports.trends import age_text, move_lines, since_lines
from fixtures_core.results import MetricSummary, Outcome, RowResult, SampleResult
from fixtures_core.text import counted, excerpt
from fixtures_core.verdicts.run import failures

_EXCERPT_LINES = 20
_EXCERPT_CHARS = 1500
_SAMPLES_WITH_OUTPUT = 3  # failing samples per row whose output excerpts are shown

# Sorting and filtering of the rows table: the page works without it (every row is shown).
_SCRIPT = """
(function () {
  document.querySelectorAll("table.comparison tbody.unchanged").forEach(function (body) {
    var button = body.querySelector("button.toggle"), told = button.textContent;
    body.classList.add("collapsed");
    button.hidden = false;
    button.addEventListener("click", function () {
      button.textContent = body.classList.toggle("collapsed") ? told : "hide unchanged lines";
    });
  });
  var table = document.querySelector("table.rows"), filter = document.getElementById("row-filter");
  if (!table || !filter) return;
  function rows() { return Array.prototype.slice.call(table.querySelectorAll("tr.row")); }
  table.querySelectorAll("tbody.group[data-fold]").forEach(function (body) {
    var button = body.querySelector("button.toggle");
    body.classList.add("collapsed");
    if (!button) return;
    var told = button.textContent;
    button.hidden = false;
    button.addEventListener("click", function (event) {
      event.stopPropagation();
      button.textContent = body.classList.toggle("collapsed") ? told : "hide passing rows";
    });
  });
  function reveal() {
    var target = location.hash && document.getElementById(location.hash.slice(1));
    var body = target && target.closest ? target.closest("tbody.group") : null;
    if (body) { body.classList.remove("collapsed"); target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", reveal);
  reveal();
  filter.hidden = false;
  filter.addEventListener("click", function (event) {
    var status = event.target.dataset ? event.target.dataset.status : undefined;
    if (status === undefined) return;
    filter.querySelectorAll("button").forEach(function (b) { b.classList.toggle("on", b === event.target); });
    table.querySelectorAll("tbody.group").forEach(function (b) { b.classList.remove("collapsed"); });
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


@dataclass(frozen=True)
class Context:
    """What a page shows beyond the run itself.

    since:  the run against the previous run of its suite (``records.history``), when there is one.
    links:  links to the evidence on disk, relative to the page; None: the page names folders only.
    pivots: the two-property pivots to draw (None: the run's own ``--group-by`` values with a comma).
    """

    since: Since | None = None
    links: EvidenceLinks | None = None
    pivots: tuple[tuple[str, str], ...] | None = None


COLLAPSE_AT = 20  # rows above which passing rows fold behind their group and "What failed" comes first
_FAILED_SHOWN = 50


def html(run: RunResult, context: Context | None = None) -> str:
    """The whole report of ``run`` as one HTML document: the answer first (the verdict, what changed since
    the previous run, the baseline, the cost, each A/B suite's ship decision, what failed), then the rows,
    pivots, metrics, suites, the comparison and each row's samples."""
    context = context or Context()
    anchors = {row.id: f"row-{index}" for index, row in enumerate(run.rows)}
    lines = {row.id: f"line-{index}" for index, row in enumerate(run.rows)}
    wanted = context.pivots if context.pivots is not None else tuple(pivots_of(run.options.get("group_by")))
    pivots = [pivot_of(run.rows, down, across) for down, across in wanted]
    big = len(run.rows) > COLLAPSE_AT
    body = [
        _header(run, context),
        ship_decisions(run, context.links),
        _failed_section(run, anchors, context) if big else "",
        "".join(heatmaps(run, pivot, lines) for pivot in pivots),
        _rows_section(run, anchors, pivots[0] if pivots else None, context, big),
        _metrics_section(run, anchors),
        ab_sections(run, context.links),
        _suite_section(run),
        _comparison_section(run),
        _samples_section(run, anchors, context),
        '<p class="muted">Written by assay '
        f"{escape(str(run.environment.get('assay_version', '')))}; one file, no network.</p>",
    ]
    return document(f"assay {run.verdict.shown}: {run.run_id}", body, _SCRIPT)


# --- header ---------------------------------------------------------------------

_GATING = ' class="gating"'
_DOTS: tuple[tuple[Outcome, str], ...] = (
    ("pass", "sample passed"),
    ("fail", "sample failed"),
    ("error", "sample errored"),
)
_SHOWN_OPTIONS = ("k", "repeat", "filter", "group_by", "baseline", "tolerance", "engine")


def _header(run: RunResult, context: Context) -> str:
    s = run.summary
    verdict = run.verdict
    look = status_words.verdict(verdict)
    label = f" <span class='muted'>[{escape(run.label)}]</span>" if run.label else ""
    label += f" <span class='muted'>(rechecked: {escape(run.rechecked)})</span>" if run.rechecked else ""
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
        f'<div id="verdict-box" class="verdict-box box-{look.css}">'
        f'<p><span id="verdict" class="badge verdict {look.css}">{escape(look.word)}</span> {escape(counts)}</p>',
        f'<p id="answer"{_GATING if verdict.exit_code else ""}>verdict: {escape(describe.answer(run))}</p>',
    ]
    if run.error:
        parts.append(f'<p class="gating">error: {escape(run.error)}</p>')
    parts += [f'<p class="baseline-context">{escape(line)}</p>' for line in describe.baseline_context(run)]
    cost = describe.cost_line(run)
    if cost:
        parts.append(f'<p id="cost-total">{escape(cost)}</p>')
    parts.append("</div>")
    if context.since is not None:
        lines = since_lines(context.since, moves=False, changes=False)
        commits = changes_html(context.since.changes) if context.since.changes is not None else ""
        detail = "#comparison" if run.comparison is not None else "#metrics"
        worse = [move.worse for move in context.since.moves]
        moved = "".join(
            f'<p class="move{" gating" if index < len(worse) and worse[index] else ""}">{escape(line)} '
            f'<a href="{detail}">detail</a></p>'
            for index, line in enumerate(move_lines(context.since))
        )
        parts.append(
            f'<div id="since" class="since"><p><b>{escape(lines[0])}</b></p>{moved}'
            + "".join(f'<p class="muted">{escape(line)}</p>' for line in lines[1:-1])
            + commits
            + f'<p class="muted">{escape(lines[-1])}</p>'
            + "</div>"
        )
    parts.append('<p class="muted facts">' + " · ".join(f"{escape(k)} {escape(v)}" for k, v in facts if v) + "</p>")
    return "\n".join(parts)


def _option(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


# --- what failed (a big run's first screen) --------------------------------------------------


def _failed_section(run: RunResult, anchors: dict[str, str], context: Context) -> str:
    """Every FAIL or ERR row that counts (an arm row of a suite with a hard gate is evidence, in its
    suite's section), with why, the first failing sample's output and its evidence."""
    bad = [row for row in run.rows if row.status == "ERR" or row in failures(run.rows, run.suites)]
    if not bad:
        return ""
    head = tr(["row", "status", "where", "why, and what the first failing sample printed"], header=True)
    lines = []
    for row in bad[:_FAILED_SHOWN]:
        lines.append(
            f'<tr class="failed" data-row="{escape(row.name)}"><td><a href="#{anchors[row.id]}">{escape(row.name)}</a>'
            f"</td><td>{_status(row)}</td><td><code>{escape(f'{row.file}:{row.line}')}</code></td>"
            f"<td>{_why(run, row, context)}</td></tr>"
        )
    more = (
        f'<p class="muted">and {len(bad) - _FAILED_SHOWN} more: see the rows below</p>'
        if len(bad) > _FAILED_SHOWN
        else ""
    )
    return (
        f'<h2 id="failed">What failed ({len(bad)} of {len(run.rows)} rows)</h2>'
        f'<table class="failed">{head}{"".join(lines)}</table>{more}'
    )


def _why(run: RunResult, row: RowResult, context: Context, regressed: Sequence[str] = ()) -> str:
    """Every reason the row did not pass, then the first failing sample's output excerpt and evidence links."""
    reasons = [describe.row_reason(row), *regressed, f"sampling: {row.sampling}" if row.sampling else None]
    age = context.since.age_of(row) if context.since is not None else None
    dated = f'<span class="age{" new" if age.new else ""}">{escape(age_text(age))}</span> · ' if age is not None else ""
    parts = [dated + escape("; ".join(r for r in reasons if r))]
    if row.status in ("FAIL", "ERR"):
        parts.append(_row_links(run, row, context))
        told = describe.failure(row)
        for stream, text in told.excerpts:
            parts.append(f'<pre class="excerpt" title="{stream} of sample {told.first_sample}">{escape(text)}</pre>')
    return "".join(parts)


def _row_links(run: RunResult, row: RowResult, context: Context) -> str:
    """Links to the row's raw output and, for an A/B arm row, its first failing attempt's evidence."""
    links = context.links
    if links is None:
        return ""
    found = []
    if row.evidence:
        href = evidence_href(links, run.run_id, row.evidence)
        if href:
            found.append(f'<a href="{href}">raw output</a>')
    bad = next((s for s in row.samples if not s.passed and s.attempt is not None), None)
    if bad is not None and bad.attempt is not None:
        found += attempt_links(links, evidence_run(run, row), bad.attempt.evidence)
    return f' <span class="evidence">· {"".join(found)}</span>' if found else ""


# --- rows -----------------------------------------------------------------------


def _rows_section(
    run: RunResult, anchors: dict[str, str], pivot: Pivot | None, context: Context, collapse: bool
) -> str:
    k = describe.k_label(run)
    head = tr(
        ["row", "status", "passed", "pass rate (95% CI)", f"pass@{k}", f"pass^{k}", "median time", "why"],
        header=True,
        numeric={2, 3, 4, 5, 6},
    )
    regressed = _regressions(run)
    groups = _groups(run, pivot)
    bodies = []
    for key, (title, anchor, rows) in groups.items():
        lines = []
        passing = sum(row.passed for row in rows)
        if title:
            failing = sum(row.status in ("FAIL", "ERR") for row in rows)
            toggle = (
                f'<button type="button" class="toggle" hidden>show {counted(passing, "passing row")}</button>'
                if passing
                else ""
            )
            lines.append(
                f'<tr class="group-head" id="{anchor}"><td colspan="8">{escape(title)} '
                f'<span class="muted">{passing}/{len(rows)} passed'
                f"{f', {failing} failing' if failing else ''}</span>{toggle}</td></tr>"
            )
        for row in rows:
            lines.append(_row_line(run, row, anchors, regressed.get(row.name, []), context))
        fold = ' data-fold="1"' if collapse and passing and title else ""
        bodies.append(f'<tbody class="group" data-group="{escape(key)}"{fold}>' + "".join(lines) + "</tbody>")
    return (
        f'<h2 id="rows">Rows</h2>\n{_filter_buttons(run)}<table class="rows">{head}\n' + "\n".join(bodies) + "</table>"
    )


def _groups(run: RunResult, pivot: Pivot | None) -> dict[str, tuple[str, str, list[RowResult]]]:
    """The rows by the first pivot's first property (``provider`` of ``provider,model``), else by fixture
    file when there are several, else one group (titled, so its passing rows can fold, in a big run)."""
    found: dict[str, tuple[str, str, list[RowResult]]] = {}
    if pivot is not None:
        order = {row.id: index for index, row in enumerate(run.rows)}
        for index, value in enumerate(pivot.down_values):
            rows = sorted((row for key, cell in pivot.cells.items() if key[0] == value for row in cell),
                          key=lambda row: order[row.id])  # fmt: skip
            found[value] = (f"{pivot.down}={value}", f"group-{index}", rows)
        return found
    files = list(dict.fromkeys(row.file for row in run.rows))
    if len(files) > 1:
        for index, file in enumerate(files):
            found[file] = (file, f"group-file-{index}", [row for row in run.rows if row.file == file])
        return found
    title = "every row" if len(run.rows) > COLLAPSE_AT else ""
    return {"": (title, "group-all", list(run.rows))}


def _row_line(
    run: RunResult,
    row: RowResult,
    anchors: dict[str, str],
    regressed: list[str],
    context: Context,
) -> str:
    link = f'<a href="#{anchors[row.id]}">{escape(row.name)}</a>'
    pass_at, pass_hat = _passk(row)
    median = describe.duration(describe.median_duration_ms(row))
    look = status_words.row(row)
    css = "row" + (" regressed" if regressed else "") + (" passing" if row.passed and not regressed else "")
    return (
        f'<tr class="{css}" id="{anchors[row.id].replace("row-", "line-")}" data-row="{escape(row.name)}" '
        f'data-status="{escape(look.word)}" data-shown="{escape(look.word)}">'
        f"<td>{link}</td><td>{_status(row)}</td><td class='num'>{describe.passed_cell(row)}</td>"
        f"<td class='num'>{_rate(row)}</td><td class='num'>{pass_at}</td><td class='num'>{pass_hat}</td>"
        f"<td class='num' data-sort='{describe.median_duration_ms(row) or ''}'>{median}</td>"
        f"<td>{_why(run, row, context, regressed)}</td></tr>"
    )


def _filter_buttons(run: RunResult) -> str:
    """Buttons that show only the rows of one status (hidden until the script runs)."""
    present = list(dict.fromkeys(status_words.row(row).word for row in run.rows))
    buttons = ['<button type="button" class="on" data-status="">all</button>']
    buttons += [f'<button type="button" data-status="{escape(s)}">{escape(s)}</button>' for s in present]
    return f'<p id="row-filter" class="filters" hidden>show {"".join(buttons)}</p>'


def _regressions(run: RunResult) -> dict[str, list[str]]:
    """What regressed against the saved run, by row name: its status, its metrics (with their numbers)."""
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
            moved = (
                f" {delta.baseline:.4g} → {delta.current:.4g} {delta.unit}"
                if delta.baseline is not None and delta.current is not None
                else ""
            )
            percent = f" ({delta.delta_percent:+.1f}%)" if delta.delta_percent is not None else ""
            found.setdefault(delta.row, []).append(f"{delta.name} regressed vs {comparison.baseline}:{moved}{percent}")
    return found


def _status(row: RowResult) -> str:
    """The row's badge: its word and colour as every output shows it."""
    return badge(status_words.row(row))


def _rate(row: RowResult) -> str:
    s = row.stochastic
    if s is None or s.pass_rate is None:
        return "-"
    interval = s.pass_rate_interval
    spread = f" ({interval[0]:.2f}–{interval[1]:.2f})" if interval else ""
    return f"{s.pass_rate:.2f}{spread}"


def _passk(row: RowResult) -> tuple[str, str]:
    s = row.stochastic
    if s is None or row.stopped == "configuration":  # left out of the figures: it ran nothing
        return "-", "-"
    if s.withheld:
        title = escape(s.withheld)
        withheld = f'<span class="muted" title="{title}">withheld</span>'
        return withheld, withheld
    return describe.fraction(s.pass_at_k), describe.fraction(s.pass_hat_k)


# --- metrics --------------------------------------------------------------------


def _metrics_section(run: RunResult, anchors: dict[str, str]) -> str:
    """Per metric a plot with a lane per row and a table; folded in a big run (a lane per row is long)."""
    names = list(dict.fromkeys(name for row in run.rows for name in row.metrics))
    if not names:
        return ""
    opened = "" if len(run.rows) > COLLAPSE_AT else " open"
    shipped = shipped_scores(run)
    parts = ['<h2 id="metrics">Metrics</h2>', _legend(run, shipped)]
    saved = _saved_deltas(run)
    for name in names:
        rows = [(row, row.metrics[name]) for row in run.rows if name in row.metrics]
        first = rows[0][1]
        lanes = [
            plots.lane(
                row,
                name,
                metric,
                anchors[row.id],
                saved.get((row.name, name)),
                shipped.get((row.file, row.name, name)),
                "DQ" if row.case_result == "disqualified" else "",
            )
            for row, metric in rows
        ]
        facts = [first.unit, first.aggregate, f"{first.direction} is better" if first.direction != "none" else ""]
        facts.append("informational, never gates" if not first.gate else "")
        off = plots.off_axis_limits(lanes)
        note = (
            f'<p class="muted">threshold {", ".join(f"{v:,.6g}" for v in off)} {escape(first.unit)} '
            "is beyond the axis: no sample is near it</p>"
            if off
            else ""
        )
        table = _metric_table(name, rows, saved, shipped, run)
        parts.append(
            f'<details class="metric-detail"{opened}><summary><h3 class="metric">{escape(name)} <span class="muted">'
            f"({escape(', '.join(f for f in facts if f))})</span></h3></summary>\n"
            f"{plots.strip_plot(name, first.unit, lanes)}\n{note}{table}</details>"
        )
    return "\n".join(parts)


def _saved_deltas(run: RunResult) -> dict[tuple[str, str], MetricDelta]:
    """Each (row, metric) compared with the saved run (``--baseline``), when the run has one."""
    if run.comparison is None:
        return {}
    return {(delta.row, delta.name): delta for delta in run.comparison.metrics}


def _legend(run: RunResult, shipped: dict[tuple[str, str, str], tuple[float, bool, str]]) -> str:
    dots = "".join(
        f'<span><i class="dot" style="background:{status_words.outcome(k).colour}"></i>{label}</span>'
        for k, label in _DOTS
    )
    named = (
        run.comparison.baseline if run.comparison is not None else next(iter(shipped.values()))[2] if shipped else ""
    )
    saved = (
        f'<span style="color:{plots.SAVED_COLOR}">┆ saved run ({escape(named)}); a red ! marks a regression</span>'
        if named
        else ""
    )
    disqualified = '<span style="color:#c62828">DQ: a disqualified arm (it loses its case)</span>' if shipped else ""
    return (
        f'<p class="legend muted">{dots}<span>◇ aggregate</span>'
        '<span style="color:#1565c0">┆ baseline row</span>'
        f'{saved}<span style="color:#c62828">▮ fails a threshold</span>{disqualified}</p>'
    )


def _metric_table(
    name: str,
    rows: Sequence[tuple[RowResult, MetricSummary]],
    saved: dict[tuple[str, str], MetricDelta],
    shipped: dict[tuple[str, str, str], tuple[float, bool, str]],
    run: RunResult,
) -> str:
    compared = run.comparison is not None or any((row.file, row.name, name) in shipped for row, _m in rows)
    titles = ["row", "aggregate", "baseline row", "Δ%", *(["saved run", "Δ vs saved"] if compared else []), "verdict"]
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
        against = saved.get((row.name, name)) if run.comparison is not None else None
        ship = shipped.get((row.file, row.name, name)) if against is None else None
        verdict = status_words.metric(metric).word
        extra: list[str] = []
        if compared:
            extra = _saved_cells(against, ship, metric)
        regressed = (against is not None and against.regressed) or (ship is not None and ship[1])
        if against is not None and against.regressed and run.comparison is not None:
            verdict = f"✗ regressed vs {run.comparison.baseline}" + (f": {against.note}" if against.note else "")
        elif ship is not None and ship[1] and metric.value is not None:
            verdict = (
                f"✗ fell {ship[0] - metric.value:.4g} points below {ship[2]} ({ship[0]:.4g} → {metric.value:.4g}), "
                "breaking a ship gate"
            )
        if row.case_result == "disqualified":
            verdict = "DISQUALIFIED: loses the case" + ("" if verdict == "ok" else f"; {verdict}")
        cells = [row.name, value, baseline, delta, *extra, verdict]
        lines.append(tr(cells, numeric=numeric, css="regressed" if regressed else ""))
    return '<table class="metric-values">' + head + "".join(lines) + "</table>"


def _saved_cells(against: MetricDelta | None, ship: tuple[float, bool, str] | None, metric: MetricSummary) -> list[str]:
    """The saved run's value and the change against it (``--baseline``'s, else the shipped run's score)."""
    if against is not None:
        value = "-" if against.baseline is None else f"{against.baseline:.4g} {metric.unit}"
        return [value, "-" if against.delta_percent is None else f"{against.delta_percent:+.1f}%"]
    if ship is not None:
        moved = "-" if metric.value is None else f"{metric.value - ship[0]:+.4g}"
        return [f"{ship[0]:.4g} {metric.unit} ({ship[2]})", moved]
    return ["-", "-"]


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
    table = f'<table class="suite">{head}' + "".join(lines) + "</table>"
    if len(lines) > COLLAPSE_AT:
        table = f"<details><summary>{counted(len(lines) - 1, 'group')}</summary>{table}</details>"
    return f'<h2 id="suite">pass@{k} and pass^{k}</h2>\n{table}{note}'


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
    numeric = {2, 3, 4}
    head = tr(["", "what", "baseline", "current", "Δ", "note"], header=True, numeric=numeric)

    def line(f: FigureLine) -> str:
        return tr([_mark(f.mark), f.name, f.baseline, f.current, f.delta, f.note], numeric=numeric, css=f.mark)

    moved = "".join(line(f) for f in found.figures if f.moved)
    still = [f for f in found.figures if not f.moved]
    folded = ""
    if still:  # the script folds them behind a button; without it every line shows
        toggle = (
            f'<tr class="toggle-row"><td colspan="6"><button type="button" class="toggle" hidden>'
            f"show {counted(len(still), 'unchanged line')}</button></td></tr>"
        )
        folded = f'<tbody class="unchanged" data-fold="1">{toggle}{"".join(line(f) for f in still)}</tbody>'
    parts = [title, f'<table class="comparison">{head}<tbody class="moved">{moved}</tbody>{folded}</table>']
    if found.still_failing:
        parts.append(
            f'<p class="still-failing">{_mark("informational")} {escape(still_failing_text(found.still_failing))}</p>'
        )
    if found.rows:
        head = tr(["", "row", "baseline", "current"], header=True)
        rows = "".join(tr([_mark(r.mark), r.row, r.before, r.after], css=f"change {r.mark}") for r in found.rows)
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


def _samples_section(run: RunResult, anchors: dict[str, str], context: Context) -> str:
    """Each row's drill-down; in a big run the passing rows' are folded together after the others."""
    parts = ['<h2 id="samples">Rows and their samples</h2>']
    if len(run.rows) <= COLLAPSE_AT:
        parts += [_row_details(run, row, anchors[row.id], context) for row in run.rows]
        return "\n".join(parts)
    passing = [row for row in run.rows if row.passed]
    parts += [_row_details(run, row, anchors[row.id], context) for row in run.rows if not row.passed]
    if passing:
        inner = "\n".join(_row_details(run, row, anchors[row.id], context) for row in passing)
        title = counted(len(passing), "passing row")
        parts.append(f'<details class="passing-rows"><summary>{title}</summary>{inner}</details>')
    return "\n".join(parts)


def _row_details(run: RunResult, row: RowResult, anchor: str, context: Context) -> str:
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
        body.append(_samples_table(run, row, context))
    for sample in [s for s in row.samples if not s.passed][:_SAMPLES_WITH_OUTPUT]:
        body.append(_output(sample))
    if row.evidence:
        href = evidence_href(context.links, run.run_id, row.evidence) if context.links is not None else None
        shown = f'<a href="{href}">{escape(row.evidence)}</a>' if href else escape(row.evidence)
        body.append(f"<p class=\"muted\">every sample's raw output: {shown} in the run's folder</p>")
    return head + "".join(body) + "</details>"


def _samples_table(run: RunResult, row: RowResult, context: Context) -> str:
    names = list(row.metrics) or list(dict.fromkeys(n for s in row.samples for n in s.metrics))
    linked = context.links is not None and any(s.attempt is not None for s in row.samples)
    titles = ["#", "status", "time", "exit", *names, "check", *(["evidence"] if linked else [])]
    head = tr(titles, header=True, numeric=set(range(2, 4 + len(names))))
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
        links = ""
        if linked and context.links is not None:
            found = (
                attempt_links(context.links, evidence_run(run, row), sample.attempt.evidence) if sample.attempt else []
            )
            links = f'<td class="evidence">{"".join(found)}</td>'
        lines.append(
            f'<tr class="sample" data-status="{sample.status}">'
            + "".join(f"<td{_num_class(i, names)}>{escape(c)}</td>" for i, c in enumerate(cells))
            + f"<td>{escape(check)}</td>{links}</tr>"
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
