"""A pivot of a run's rows by two of their properties (``--group-by provider,model``), as heat-maps.

One table per measure: the first property's values down, the second's
across, a cell per pair holding its rows. The pass-rate map says in each
cell how many of its rows passed (``8/10``) and colours it on a scale
anchored where rows stop passing: green when every row passed (a paler
green when some samples failed in rows that passed), and from amber (one
row of many failing) to red (none passing) as soon as one row failed, so
8/10 never reads like 10/10. Each metric's map colours the mean of its rows'
aggregates from best to worst (by the metric's direction; blue shades when it
has none). A cell links to its rows in the rows table (its first failing
row, else its first row), and its tooltip names its failing rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from fixtures_core.records.rundoc import RunResult
from fixtures_core.results import RowResult

NONE = "(none)"


@dataclass(frozen=True)
class Pivot:
    """The rows of a run by two properties: ``cells[(down, across)]`` holds the rows of that pair."""

    down: str
    across: str
    down_values: tuple[str, ...]
    across_values: tuple[str, ...]
    cells: Mapping[tuple[str, str], tuple[RowResult, ...]]

    def title(self, key: tuple[str, str]) -> str:
        return f"{self.down}={key[0]} · {self.across}={key[1]}"


def pivots_of(group_by: object) -> list[tuple[str, str]]:
    """The two-property pivots among ``--group-by`` values (``provider,model``)."""
    values = group_by if isinstance(group_by, (list, tuple)) else []
    found = []
    for value in values:
        names = [name.strip() for name in str(value).split(",")]
        if len(names) == 2 and all(names) and names[0] != names[1]:
            found.append((names[0], names[1]))
    return found


def _value(row: RowResult, name: str) -> str:
    value = row.properties.get(name)
    return NONE if value in (None, "") else str(value)


def pivot_of(rows: Sequence[RowResult], down: str, across: str) -> Pivot:
    """The rows by ``down`` x ``across`` (SKIP rows too: a cell of them says so)."""
    cells: dict[tuple[str, str], list[RowResult]] = {}
    for row in rows:
        cells.setdefault((_value(row, down), _value(row, across)), []).append(row)
    downs = tuple(sorted({key[0] for key in cells}))
    acrosses = tuple(sorted({key[1] for key in cells}))
    return Pivot(down, across, downs, acrosses, {key: tuple(found) for key, found in cells.items()})


def heatmaps(run: RunResult, pivot: Pivot, lines: Mapping[str, str]) -> str:
    """The pass-rate heat-map, then each metric's (collapsed); ``lines`` maps a row's id to the id of its
    line in the rows table, which a cell links to."""
    metrics = list(dict.fromkeys(name for row in run.rows for name in row.metrics))
    parts = [
        f'<h3 class="pivot">{escape(pivot.down)} × {escape(pivot.across)}: pass rate</h3>',
        _table(pivot, "pass rate", _pass_cell, lines),
        _legend(),
    ]
    if metrics:
        inner = "".join(
            f"<h3>{escape(pivot.down)} × {escape(pivot.across)}: {escape(name)}</h3>"
            + _table(pivot, name, _metric_cells(pivot, name), lines)
            for name in metrics
        )
        parts.append(f'<details class="metric-heatmaps"><summary>Heat-maps of the metrics</summary>{inner}</details>')
    return "\n".join(parts)


@dataclass(frozen=True)
class _Shown:
    text: str
    colour: str
    title: str


Shown = Callable[[tuple[str, str], Sequence[RowResult]], _Shown]


def _table(pivot: Pivot, measure: str, shown: Shown, lines: Mapping[str, str]) -> str:
    head = "".join(f"<th>{escape(value)}</th>" for value in pivot.across_values)
    table = [f'<tr><th class="corner">{escape(pivot.down)} \\ {escape(pivot.across)}</th>{head}</tr>']
    for down in pivot.down_values:
        cells = []
        for across in pivot.across_values:
            key = (down, across)
            rows = pivot.cells.get(key)
            if not rows:
                cells.append('<td class="cell empty"></td>')
                continue
            found = shown(key, rows)
            title = f"{pivot.title(key)}: {found.title}"
            target = next((row for row in rows if row.status in ("FAIL", "ERR")), rows[0])
            cells.append(
                f'<td class="cell" data-cell="{escape(down)}|{escape(across)}" style="background:{found.colour}" '
                f'title="{escape(title)}"><a href="#{lines.get(target.id, "")}">{escape(found.text)}</a></td>'
            )
        table.append(f"<tr><th>{escape(down)}</th>{''.join(cells)}</tr>")
    return f'<table class="heat" data-measure="{escape(measure)}">' + "".join(table) + "</table>"


def _pass_cell(_key: tuple[str, str], rows: Sequence[RowResult]) -> _Shown:
    counted = [row for row in rows if row.status != "SKIP"]
    samples = [s for row in counted for s in row.samples if s.status in ("PASS", "FAIL", "ERR")]
    passed = sum(s.passed for s in samples)
    rows_passed = sum(row.passed for row in counted)
    if not counted:
        return _Shown("skip", "#eeeeee", f"{len(rows)} rows skipped")
    failing = [row.name for row in counted if not row.passed]
    told = f"{rows_passed}/{len(counted)} rows passed, {passed}/{len(samples)} samples"
    if failing:
        told += "; failing: " + ", ".join(failing[:8]) + (" …" if len(failing) > 8 else "")
    text = f"{rows_passed}/{len(counted)}"
    if any(row.status == "ERR" for row in counted):
        text += " E"
    return _Shown(text, pass_colour(rows_passed, len(counted), passed == len(samples)), told)


PASSED = (129, 199, 132)  # every row and every sample passed
PASSED_FLAKY = (197, 225, 165)  # every row passed, some samples failed
FAILING_FEW = (255, 204, 128)  # amber: one row of many failing
FAILING_ALL = (239, 128, 128)  # red: no row passing


def pass_colour(rows_passed: int, rows: int, every_sample: bool = True) -> str:
    """A pass-rate cell's colour (module docstring): the scale is anchored where a row fails, so a cell
    with a failing row is amber to red, never a shade of green (light enough for dark text)."""
    if rows_passed >= rows:
        return _hex(PASSED if every_sample else PASSED_FLAKY)
    share = rows_passed / rows if rows else 0.0  # below 1: from red (0) towards amber (all but one)
    most = (rows - 1) / rows if rows > 1 else 1.0
    return _hex(_between(FAILING_ALL, FAILING_FEW, share / most if most else 0.0))


def _between(start: tuple[int, int, int], end: tuple[int, int, int], share: float) -> tuple[int, int, int]:
    r, g, b = (round(a + (z - a) * share) for a, z in zip(start, end, strict=True))
    return (r, g, b)


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _legend() -> str:
    keys = [(PASSED, "all"), (PASSED_FLAKY, "all, some samples failed"), (FAILING_FEW, "one of many failing"),
            (FAILING_ALL, "none")]  # fmt: skip
    shown = "".join(f'<span class="key" style="background:{_hex(rgb)}">{escape(told)}</span>' for rgb, told in keys)
    return f'<p class="muted legend heat-legend">rows passed: {shown}</p>'


def _rate_colour(rate: float) -> str:
    """Red at 0, amber at 0.5, green at 1 (light enough for dark text): a metric's map, best to worst."""
    low, middle, high = (239, 154, 154), (255, 224, 130), (165, 214, 167)
    start, end, share = (low, middle, rate * 2) if rate < 0.5 else (middle, high, (rate - 0.5) * 2)
    return _hex(_between(start, end, share))


def _metric_cells(pivot: Pivot, name: str) -> Shown:
    means: dict[tuple[str, str], float] = {}
    unit, direction = "", "none"
    for key, rows in pivot.cells.items():
        values = [m.value for row in rows if (m := row.metrics.get(name)) is not None and m.value is not None]
        summaries = [row.metrics[name] for row in rows if name in row.metrics]
        if summaries:
            unit, direction = summaries[0].unit, summaries[0].direction
        if values:
            means[key] = math.fsum(values) / len(values)
    low, high = (min(means.values()), max(means.values())) if means else (0.0, 1.0)

    def shown(key: tuple[str, str], _rows: Sequence[RowResult]) -> _Shown:
        value = means.get(key)
        if value is None:
            return _Shown("-", "#f5f5f5", f"no value of {name}")
        share = 0.5 if high == low else (value - low) / (high - low)
        if direction == "none":
            shade = round(245 - share * 110)
            colour = f"#{shade:02x}{min(255, shade + 20):02x}ff"
        else:
            colour = _rate_colour(1 - share if direction == "lower" else share)
        return _Shown(f"{value:.3g}", colour, f"mean of the rows' aggregates: {value:,.4g} {unit}")

    return shown
