"""Trends in words: what changed since the previous run, and a suite's last runs on a terminal.

``since_lines`` is the "since the previous run" section every report of a run
shows (HTML, the Markdown summary, the Prefect artifact): the A/B suites'
ship decisions and changed cases, the metrics that moved, new, fixed and
still failing rows each with its age (``age_text``: ``new tonight``,
``failing since run ...``), the commits between the runs. ``render`` prints
``assay trends``, its headline led by the newest run's verdict and the rows
failing now. The figures come from ``analysis.trends``; ``since_of`` reads
the runs before a run (``records.history``) and the commits between two
runs (``records.git_changes``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from fixtures_core.analysis.trends import (
    Age,
    CaseChange,
    Cost,
    MetricMove,
    MetricTrend,
    RowTrend,
    RunPoint,
    Since,
    Step,
    SuiteChange,
    Trends,
    run_point,
    since_previous,
)
from fixtures_core.changes import Changes
from fixtures_core.records.git_changes import changes_between
from fixtures_core.records.history import History, earlier_runs, earlier_statuses
from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import Store
from fixtures_core.reports import status_words
from fixtures_core.reports.shipgate import points
from fixtures_core.results import Status
from fixtures_core.text import counted, listed, visible

_ABSENT = "·"
_BLOCKS = "▁▂▃▄▅▆▇█"


def _style(status: str | None) -> str:
    """A status's terminal colour (``status_words``); none for a word that is no status (``DRY RUN``)."""
    look = status_words.of_word(status) if status is not None else None
    return look.style if look is not None else ""


def number(value: float) -> str:
    """A figure for people: up to 4 significant digits, thousands separated."""
    return f"{value:,.4g}" if abs(value) < 1e15 else f"{value:.4g}"


def cost_text(cost: Cost) -> str:
    """``4.59 usd (cost_usd over 20 samples)``."""
    return f"{number(cost.total)} {cost.unit} ({cost.metric} over {counted(cost.samples, 'sample')})"


def run_facts(point: RunPoint) -> str:
    """A run named in full: ``ID (label 'nightly', started 2026-12-01T02:00:00Z, commit 0123456789ab)``."""
    facts = [f"label {point.label!r}"] if point.label else []
    facts.append(f"started {point.started_at}")
    if point.commit:
        facts.append(f"commit {point.commit[:12]}")
    return f"{point.run_id} ({', '.join(facts)})"


def since_of(run: RunResult, state: Path) -> Since | None:
    """The run against the previous run of its suite in the state folder ``state`` (None: it has none), with
    the commits between them when the working directory's git repository has both."""
    store = Store(state)
    previous = next(earlier_runs(store, run), None)
    if previous is None:
        return None
    before_previous = (found for found in earlier_statuses(store, run) if found.point.run_id < previous.run_id)
    since = since_previous(previous, run, before_previous)
    before, after = since.previous.commit, run_point(run).commit
    if before and after:
        since = replace(since, changes=changes_between(before, after))
    return since


def with_changes(trends: Trends) -> Trends:
    """The trends with the commits between their last two runs, when the working directory's git repository
    has both."""
    if len(trends.runs) < 2:
        return trends
    before, after = trends.runs[-2].commit, trends.runs[-1].commit
    return replace(trends, changes=changes_between(before, after)) if before and after else trends


def changes_lines(changes: Changes) -> list[str]:
    """``3 commits since the previous run: 0123456789ab..89abcdef0123 (LINK)``, then a line per commit
    (``89abcdef0123 Make the parser stricter``), at most a screenful, and how many more."""
    if changes.total == 0:
        return [f"the same commit as the previous run ({changes.after[:12]})"]
    link = f" ({changes.link})" if changes.link else ""
    lines = [
        f"{counted(changes.total, 'commit')} since the previous run: {changes.before[:12]}..{changes.after[:12]}{link}"
    ]
    lines += [f"{commit.sha[:12]} {commit.subject}" for commit in changes.commits]
    if changes.more > 0:
        lines.append(f"and {changes.more} more commits")
    return lines


def since_of_document(run: RunResult, document: str | Path) -> Since | None:
    """``since_of`` for a run whose document is ``STATE/runs/RUN/run.json`` (None for a copy elsewhere)."""
    path = Path(document)
    if path.parent.name != run.run_id or path.parent.parent.name != "runs":
        return None
    return since_of(run, path.parent.parent.parent)


def since_headline(since: Since) -> str:
    """``since the previous run: 2 new failures, 1 fixed, 1 metric moved, cost +12% (4.1 -> 4.59 usd)``."""
    parts = [decision_text(change) for change in since.suites]
    cases = sum(len(change.cases) for change in since.suites)
    if since.suites:
        parts.append(f"{counted(cases, 'case')} changed")
    if since.rows_counted:
        parts += [counted(len(since.new_failures), "new failure"), f"{len(since.fixed)} fixed"]
        if since.still_failing:
            parts.append(f"{len(since.still_failing)} still failing")
    metrics = list(dict.fromkeys(move.metric for move in since.moves))
    if metrics:
        parts.append(f"{counted(len(metrics), 'metric')} moved")
    change = since.cost_change
    before, after = since.cost_before, since.cost_after
    if change is not None and before is not None and after is not None:
        parts.append(f"cost {change:+.0%} ({number(before.total)} -> {number(after.total)} {after.unit})")
    elif since.cost_after is not None:
        parts.append(f"cost {number(since.cost_after.total)} {since.cost_after.unit} (none before)")
    return "since the previous run: " + ", ".join(parts)


def age_text(age: Age) -> str:
    """``new tonight``, or ``failing since run 11 (ID, 2026-12-11, commit 0123456789ab), 4 runs`` (the run's
    number when the runs shown are numbered, else its id)."""
    if age.new:
        return "new tonight"
    point = age.since
    facts = [point.started_at[:10], *([f"commit {point.commit[:12]}"] if point.commit else [])]
    where = f"{age.number} ({point.run_id}, " if age.number is not None else f"{point.run_id} ("
    since = f"failing since run {where}{', '.join(facts)})"
    if age.at_least:
        return f"{since} or before, {age.runs} runs or more"
    return f"{since}, {counted(age.runs, 'run')}"


def aged(name: str, age: Age | None) -> str:
    """``'row' failing since run ...`` (the name alone without an age)."""
    return f"'{name}' {age_text(age)}" if age is not None else f"'{name}'"


MOVES_SHOWN = 5
CASES_SHOWN = 10


def decision_text(change: SuiteChange) -> str:
    """``ship decision PASS -> FAIL (suite.md)``, or ``ship decision FAIL, as before (suite.md)``."""
    then, now = status_words.suite(change.then).word, status_words.suite(change.now).word
    moved = f"{then} -> {now}" if then != now else f"{now}, as before"
    return f"ship decision {moved} ({change.file})"


def case_text(case: CaseChange) -> str:
    """``case 'F3': margin +8 -> -25, winner variant -> shipped`` (the winner alone when it stayed)."""
    margin = f"margin {points(case.margin_then, sign=True)} -> {points(case.margin_now, sign=True)}"
    winner = (
        f"winner {case.winner_then or '-'} -> {case.winner_now or '-'}"
        if case.winner_then != case.winner_now
        else f"winner {case.winner_now or '-'}"
    )
    return f"case '{case.name}': {margin}, {winner}"


def suite_lines(since: Since) -> list[str]:
    """A line per A/B suite: its changed cases with their values then and now, a changed winner first."""
    lines = []
    for change in since.suites:
        cases = sorted(change.cases, key=_case_order)
        shown = [case_text(case).removeprefix("case ") for case in cases[:CASES_SHOWN]]
        more = len(cases) - CASES_SHOWN
        if shown:
            lines.append(
                f"cases changed in {change.file}: " + "; ".join(shown) + (f"; and {more} more" if more > 0 else "")
            )
    return lines


def _case_order(case: CaseChange) -> tuple[int, float]:
    """A changed winner first, then the largest move of the margin."""
    moved = (
        abs(case.margin_now - case.margin_then)
        if case.margin_now is not None and case.margin_then is not None
        else float("inf")
    )
    return (0 if case.winner_then != case.winner_now else 1, -moved)


def move_text(move: MetricMove) -> str:
    """``latency_ms +35% on 20 rows: provider=anthropic (worse)``: how much (the median change, or its range
    when the rows moved by different amounts), on which rows, and whether it went the wrong way."""
    changes = sorted(c for c in move.changes if c is not None)
    if not changes:
        much = "up" if move.up else "down"
    else:
        low, middle, high = changes[0], statistics.median(changes), changes[-1]
        much = f"{middle:+.0%}" if high - low <= 0.05 else f"{low:+.0%} to {high:+.0%}"
    rows = len(move.rows)
    if move.shared is not None:
        named = f"{move.shared[0]}={move.shared[1]}"
        where = (
            f"on {counted(rows, 'row')}: {named}"
            if rows == move.of
            else f"on {rows} of the {move.of} rows with {named}"
        )
    else:
        where = f"on {counted(rows, 'row')}: " + listed([f"'{name}'" for name in move.rows], 5)
    return f"{move.metric} {much} {where}" + (" (worse)" if move.worse else " (better)" if move.worse is False else "")


def move_lines(since: Since) -> list[str]:
    """``metric moved: latency_ms +35% on 20 rows: provider=anthropic (worse)``, the most rows first."""
    lines = [f"metric moved: {move_text(move)}" for move in since.moves[:MOVES_SHOWN]]
    if len(since.moves) > MOVES_SHOWN:
        lines.append(f"and {len(since.moves) - MOVES_SHOWN} more metric moves (see the metrics)")
    return lines


def since_lines(since: Since, moves: bool = True, changes: bool = True) -> list[str]:
    """The headline, the metrics that moved (unless ``moves`` is False: the page links them), which rows
    changed (each failing one with its age), the commits between the runs (unless ``changes`` is False: the
    page shows them with their link) and the run compared with."""
    lines = [since_headline(since), *suite_lines(since), *(move_lines(since) if moves else [])]
    ages = {age.name: age for age in since.ages}
    if since.new_failures:
        lines.append("new failures: " + listed([f"'{name}'" for name in since.new_failures], 20) + ", all new tonight")
    if since.still_failing:
        lines.append("still failing: " + "; ".join(_listed_ages(since.still_failing, ages)))
    if since.fixed:
        lines.append("fixed: " + listed([f"'{name}'" for name in since.fixed], 20))
    if changes and since.changes is not None:
        lines += changes_lines(since.changes)
    lines.append(f"previous run: {run_facts(since.previous)}")
    return lines


def _listed_ages(names: Sequence[str], ages: dict[str, Age], shown: int = 20) -> list[str]:
    told = [aged(name, ages.get(name)) for name in names[:shown]]
    return told + ([f"and {len(names) - shown} more"] if len(names) > shown else [])


def spark(values: Sequence[float | None]) -> str:
    """A text sparkline: one block per value (its height between the series' least and most, over at least a
    fifth of their size), ``·`` for none."""
    present = [v for v in values if v is not None]
    if not present:
        return _ABSENT * len(values)
    low, high = min(present), max(present)
    least = 0.2 * max(abs(low), abs(high))  # small wiggles stay small, as on the page's sparklines
    if high - low < least:
        middle = (high + low) / 2
        low, high = middle - least / 2, middle + least / 2
    span = high - low
    return "".join(
        _ABSENT if v is None else _BLOCKS[0 if span == 0 else max(0, min(7, int((v - low) / span * 8)))] for v in values
    )


def step_text(metric: MetricTrend, runs: Sequence[RunPoint], row: str | None = None) -> str:
    """``'API high' duration_ms: 3,012 -> 4,521 ms (+50.1%) from run 9 (ID)``."""
    step = metric.step
    assert step is not None
    where = f"{row!r} " if row is not None else ""
    return (
        f"{where}{metric.name}: {number(step.before)} -> {number(step.after)} {metric.unit} ({_change(step)}) "
        f"from run {step.index + 1} ({runs[step.index].run_id})" + (" (worse)" if metric.worse else "")
    )


def _change(step: Step) -> str:
    return f"{step.change:+.1%}" if step.change is not None else f"{step.after - step.before:+,.4g}"


def flaky_text(row: RowTrend) -> str:
    """``flaky in 4 of the last 7 runs`` ('' when never flaky)."""
    if not row.flaky_runs:
        return ""
    return f"flaky in {row.flaky_runs} of the last {counted(row.ran, 'run')}"


def flip_text(row: RowTrend) -> str:
    """``PASS -> FAIL since the previous run`` ('' without a flip)."""
    return "" if row.flip is None else f"{row.flip[0]} -> {row.flip[1]} since the previous run"


def change_text(row: RowTrend, runs: Sequence[RunPoint]) -> str:
    """``FAIL -> PASS at run 9 (ID)``: the row's last change in the window, when it is older than the previous
    run ('' otherwise: ``flip_text`` says that one)."""
    change = row.change
    if change is None or change.index == len(runs) - 1:
        return ""
    return f"{change.before} -> {change.after} at run {change.index + 1} ({runs[change.index].run_id})"


def row_notes(row: RowTrend, runs: Sequence[RunPoint]) -> list[str]:
    """What a row's "what changed" cell says: its age when it fails now, its last change, flip, flakiness."""
    age = age_text(row.age) if row.age is not None else ""
    return [note for note in (age, change_text(row, runs), flip_text(row), flaky_text(row)) if note]


def newest_text(trends: Trends) -> str:
    """``newest run (14 of 14): FAIL, 1 of 4 rows failing: ID (label 'nightly', ...)``."""
    runs = trends.runs
    if not runs:
        return "no run"
    latest = runs[-1]
    ran = sum(row.latest is not None for row in trends.rows)
    failing = len(trends.failing)
    return (
        f"newest run ({len(runs)} of {len(runs)}): {latest.verdict}, {failing} of {counted(ran, 'row')} failing: "
        f"{run_facts(latest)}"
    )


def headline(trends: Trends, changes: bool = True) -> list[str]:
    """What changed, first: the newest run's verdict, the rows failing now with their age (the oldest break
    first), the rows that changed in the window, the commits since the previous run (unless ``changes`` is
    False: the page shows them with their link), flips, flaky rows, metric steps, cost."""
    runs = trends.runs
    lines = [newest_text(trends)]
    failing = trends.failing
    if failing:
        lines.append(
            "failing now, the oldest break first: "
            + "; ".join(aged(row.name, row.age) for row in failing[:10])
            + (f"; and {len(failing) - 10} more" if len(failing) > 10 else "")
        )
    changed = trends.changed
    window = f"the last {counted(len(runs), 'run')}"
    if changed:
        lines.append(
            f"{counted(len(changed), 'row')} changed in {window}: "
            + listed([f"'{row.name}' {row.change.before} -> {row.change.after} at run {row.change.index + 1}"
                      for row in changed if row.change], 10)
        )  # fmt: skip
    else:
        lines.append(f"no row changed status in {window}")
    if changes and trends.changes is not None:
        lines += changes_lines(trends.changes)
    flipped = trends.flipped
    if flipped:
        lines.append(
            f"{counted(len(flipped), 'row')} flipped since the previous run: "
            + listed([f"'{row.name}' {row.flip[0]} -> {row.flip[1]}" for row in flipped if row.flip], 10)
        )
    else:
        lines.append("no row flipped since the previous run")
    for row in trends.flaky:
        lines.append(f"'{row.name}': {flaky_text(row)}")
    for row in trends.stepped:
        lines += [step_text(metric, trends.runs, row.name) for metric in row.steps]
    total = trends.total_cost()
    if total:
        lines.append("cost in all: " + "; ".join(cost_text(cost) for cost in total))
    return lines


def render(history: History, trends: Trends, console: Console) -> None:
    """``assay trends``: the runs, what changed, and a line per row with its status strip."""
    runs = trends.runs
    console.print(
        Text(f"assay trends: {history.suite.shown}: the last {counted(len(runs), 'run')}", style="bold"),
        soft_wrap=True,
    )
    table = Table(title="runs (oldest first)", title_justify="left")
    for name in ("#", "run", "label", "started", "commit", "verdict", "cost"):
        widest = max((len(point.run_id) for point in runs), default=0) if name == "run" else None
        table.add_column(name, justify="right" if name == "#" else "left", no_wrap=name == "run", min_width=widest)
    for index, point in enumerate(runs, 1):
        cost = point.cost
        table.add_row(
            str(index),
            visible(point.run_id),
            visible(point.label or ""),
            visible(point.started_at),
            (point.commit or "")[:12],
            Text(point.verdict, style=_style(point.verdict)),
            f"{number(cost.total)} {cost.unit}" if cost is not None else "-",
        )
    console.print(table)
    console.print()
    for line in headline(trends):
        console.print(visible(line), markup=False, soft_wrap=True)
    title = f"rows: status in runs 1..{len(runs)} (failing now first, then flips and changes)"
    rows = Table(title=title, title_justify="left")
    for name in ("row", "file", "status", "what changed", "metrics"):
        rows.add_column(name)
    for row in trends.rows:
        strip = Text()
        for status, flaky in zip(row.statuses, row.flaky, strict=True):
            strip.append(_cell(status, flaky), style=_style(status) or "dim")
        notes = "; ".join(row_notes(row, runs))
        sparks = "  ".join(f"{m.name} {spark(m.values)}" for m in row.metrics)
        rows.add_row(visible(row.name), visible(row.file), strip, visible(notes), visible(sparks))
    console.print(rows)
    for note in history.notes:
        console.print(f"note: {visible(note)}", style="magenta", markup=False, soft_wrap=True)


def _cell(status: Status | None, flaky: bool) -> str:
    return status_words.symbol(status, flaky)
