"""Static SVG plots, written by hand from the results: no plotting library, no script.

A metric's plot has one lane per row: every sample as a point, the row's
aggregate as a tick, its baseline row's value as a dashed line, and the values
that fail a threshold shaded. SVG text is a standard every browser has drawn
the same way for twenty years, works offline, and costs no dependency.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from fixtures_core.analysis.baseline import MetricDelta
from fixtures_core.reports import status_words
from fixtures_core.results import MetricSummary, Outcome, RowResult

WIDTH = 900
_LABEL_W = 170
_RIGHT = 24
_LANE_H = 28
_TOP = 8
_AXIS_H = 34
_JITTER = (-6.0, 2.0, -2.0, 6.0, 0.0)  # vertical offsets by sample index, so equal values stay visible
Scale = Callable[[float], float]  # a value to its x coordinate
SAVED_COLOR = "#6a1b9a"  # the saved run's value (``--baseline``), apart from the baseline row's blue


@dataclass(frozen=True)
class Point:
    """One sample's value of a metric; ``outcome`` is the sample's (pass, fail, error)."""

    sample: int
    value: float
    outcome: Outcome


@dataclass(frozen=True)
class Lane:
    """One row of a metric plot."""

    label: str
    points: tuple[Point, ...]
    aggregate: float | None = None
    aggregate_name: str = ""
    baseline: float | None = None
    baseline_name: str = ""
    bad_above: float | None = None  # values above this fail a threshold
    bad_below: float | None = None  # values below this fail a threshold
    anchor: str = ""  # id of the row's details in the page
    saved: float | None = None  # the saved run's value of the metric for this row (``--baseline``, or shipped)
    regressed: bool = False  # it regressed against the saved run: the lane is marked
    saved_name: str = "the saved run"
    mark: str = ""  # a word before the label: ``DQ`` for a disqualified arm


def lane(
    row: RowResult,
    name: str,
    metric: MetricSummary,
    anchor: str = "",
    saved: MetricDelta | None = None,
    shipped: tuple[float, bool, str] | None = None,
    mark: str = "",
) -> Lane:
    """The lane of one row for one metric: its samples' values, aggregate, baseline and failing zones,
    and the saved run's value and whether it regressed against it (``saved``, from ``--baseline``; else
    ``shipped``: an A/B arm's score in the shipped run, whether its drop broke a gate, and that run's name);
    ``mark`` goes before the label (``DQ``)."""
    points = tuple(
        Point(s.index, float(v.value), _sample_outcome(s.status))
        for s in row.samples
        if (v := s.metrics.get(name)) is not None and v.value is not None
    )
    comparison = metric.comparison
    baseline = comparison.baseline_value if comparison is not None else None
    above, below = metric.threshold.max, metric.threshold.min
    allowed = metric.threshold.regression_percent
    if baseline is not None and allowed is not None and metric.direction != "none":
        limit = baseline + abs(baseline) * allowed / 100 * (1 if metric.direction == "lower" else -1)
        if metric.direction == "lower":
            above = limit if above is None else min(above, limit)
        else:
            below = limit if below is None else max(below, limit)
    return Lane(
        label=row.name,
        points=points,
        aggregate=metric.value,
        aggregate_name=metric.aggregate,
        baseline=baseline,
        baseline_name=comparison.baseline if comparison is not None else "",
        bad_above=above,
        bad_below=below,
        anchor=anchor,
        saved=saved.baseline if saved is not None else shipped[0] if shipped is not None else None,
        regressed=saved.regressed if saved is not None else shipped is not None and shipped[1],
        saved_name="the saved run" if saved is not None or shipped is None else shipped[2],
        mark=mark,
    )


def _sample_outcome(status: str) -> Outcome:
    return {"PASS": "pass", "FAIL": "fail", "ERR": "error"}.get(status, "not_evaluated")  # type: ignore[return-value]


def domain(lanes: Sequence[Lane]) -> tuple[float, float]:
    """The x range: every point, aggregate and baseline, and the threshold limits near them.

    A limit far from the data (``max: 120000`` for values near 3000) would squeeze
    every point into a corner, so it stays off the axis (the plot says so).
    """
    seen = [p.value for ln in lanes for p in ln.points]
    seen += [v for ln in lanes for v in (ln.aggregate, ln.baseline, ln.saved) if v is not None]
    if not seen:
        return 0.0, 1.0
    low, high = min(seen), max(seen)
    span = high - low or (abs(high) * 0.2 or 1.0)
    limits = [v for ln in lanes for v in (ln.bad_above, ln.bad_below) if v is not None]
    near = [v for v in limits if low - span <= v <= high + span]
    low, high = min([low, *near]), max([high, *near])
    pad = (high - low or span) * 0.06
    return low - pad, high + pad


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values (1, 2, 2.5, 5 times a power of ten) covering [low, high]."""
    span = high - low
    if span <= 0 or not math.isfinite(span):
        return [low]
    raw = span / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 12))
        value += step
    return ticks


def strip_plot(metric: str, unit: str, lanes: Sequence[Lane]) -> str:
    """An SVG strip plot of one metric: a lane per row."""
    low, high = domain(lanes)
    plot_w = WIDTH - _LABEL_W - _RIGHT
    height = _TOP + _LANE_H * len(lanes) + _AXIS_H

    def x(value: float) -> float:
        return _LABEL_W + (min(max(value, low), high) - low) / (high - low) * plot_w

    parts = [
        f'<svg class="plot" data-metric="{escape(metric)}" xmlns="http://www.w3.org/2000/svg" '
        f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}" role="img" '
        f'aria-label="{escape(metric)} per row">'
    ]
    for index, one in enumerate(lanes):
        top = _TOP + index * _LANE_H
        parts.append(_lane_svg(one, top, x, low, high, unit))
    parts.append(_axis_svg(_TOP + _LANE_H * len(lanes), low, high, x, unit))
    parts.append("</svg>")
    return "".join(parts)


def _lane_svg(one: Lane, top: float, x: Scale, low: float, high: float, unit: str) -> str:
    mid = top + _LANE_H / 2
    right = WIDTH - _RIGHT
    out = [f'<g class="lane" data-row="{escape(one.label)}">']
    shade = "#c62828"
    if one.bad_above is not None and one.bad_above < high:
        left = x(one.bad_above)
        out.append(
            f'<rect class="threshold" x="{left:.1f}" y="{top + 2}" width="{right - left:.1f}" '
            f'height="{_LANE_H - 4}" fill="{shade}" fill-opacity="0.12">'
            f"<title>fails above {_num(one.bad_above)} {escape(unit)}</title></rect>"
        )
    if one.bad_below is not None and one.bad_below > low:
        edge = x(one.bad_below)
        out.append(
            f'<rect class="threshold" x="{_LABEL_W}" y="{top + 2}" width="{edge - _LABEL_W:.1f}" '
            f'height="{_LANE_H - 4}" fill="{shade}" fill-opacity="0.12">'
            f"<title>fails below {_num(one.bad_below)} {escape(unit)}</title></rect>"
        )
    marked = ("! " if one.regressed else "") + (f"{one.mark} " if one.mark else "") + one.label
    label = marked if len(marked) <= 26 else marked[:25] + "…"
    colour = ' fill="#c62828" font-weight="bold"' if one.regressed or one.mark else ""
    text = f'<text x="{_LABEL_W - 8}" y="{mid + 4:.1f}" text-anchor="end" font-size="12"{colour}>{escape(label)}</text>'
    if one.anchor:
        text = f'<a href="#{escape(one.anchor)}">{text}</a>'
    told = f"{one.label}: regressed against {one.saved_name}" if one.regressed else one.label
    if one.mark:
        told += f" ({one.mark})"
    out.append(f"{text}<title>{escape(told)}</title>")
    out.append(f'<line x1="{_LABEL_W}" x2="{right}" y1="{mid:.1f}" y2="{mid:.1f}" stroke="#e0e0e0" stroke-width="1"/>')
    if one.baseline is not None:
        bx = x(one.baseline)
        out.append(
            f'<line class="baseline" x1="{bx:.1f}" x2="{bx:.1f}" y1="{top + 1}" y2="{top + _LANE_H - 1}" '
            f'stroke="#1565c0" stroke-width="2" stroke-dasharray="4 3">'
            f"<title>baseline {escape(one.baseline_name)}: {_num(one.baseline)} {escape(unit)}</title></line>"
        )
    if one.saved is not None:
        sx = x(one.saved)
        what = f"regressed against {one.saved_name}" if one.regressed else one.saved_name
        width = 3 if one.regressed else 2
        out.append(
            f'<line class="saved{" regressed" if one.regressed else ""}" x1="{sx:.1f}" x2="{sx:.1f}" '
            f'y1="{top + 1}" y2="{top + _LANE_H - 1}" stroke="{SAVED_COLOR}" stroke-width="{width}" '
            f'stroke-dasharray="2 2"><title>{what}: {_num(one.saved)} {escape(unit)}</title></line>'
        )
    for point in one.points:
        py = mid + _JITTER[point.sample % len(_JITTER)]
        out.append(
            f'<circle class="sample" data-sample="{point.sample}" cx="{x(point.value):.1f}" cy="{py:.1f}" r="4" '
            f'fill="{status_words.outcome(point.outcome).colour}" fill-opacity="0.75">'
            f"<title>sample {point.sample}: {_num(point.value)} {escape(unit)} ({point.outcome})</title></circle>"
        )
    if one.aggregate is not None:
        ax = x(one.aggregate)
        out.append(
            f'<path class="aggregate" d="M{ax:.1f} {mid - 9:.1f} L{ax + 5:.1f} {mid:.1f} L{ax:.1f} {mid + 9:.1f} '
            f'L{ax - 5:.1f} {mid:.1f} Z" fill="none" stroke="#212121" stroke-width="2">'
            f"<title>{escape(one.aggregate_name)}: {_num(one.aggregate)} {escape(unit)}</title></path>"
        )
    out.append("</g>")
    return "".join(out)


def _axis_svg(top: float, low: float, high: float, x: Scale, unit: str) -> str:
    out = [
        f'<g class="axis"><line x1="{_LABEL_W}" x2="{WIDTH - _RIGHT}" y1="{top:.1f}" y2="{top:.1f}" stroke="#616161"/>'
    ]
    for tick in nice_ticks(low, high):
        tx = x(tick)
        out.append(
            f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top:.1f}" y2="{top + 4:.1f}" stroke="#616161"/>'
            f'<text x="{tx:.1f}" y="{top + 16:.1f}" text-anchor="middle" font-size="11">{_num(tick)}</text>'
        )
    out.append(
        f'<text x="{WIDTH - _RIGHT}" y="{top + 30:.1f}" text-anchor="end" font-size="11" fill="#616161">'
        f"{escape(unit)}</text></g>"
    )
    return "".join(out)


def off_axis_limits(lanes: Sequence[Lane]) -> list[float]:
    """Threshold limits that lie outside the plotted range (so the page can say so)."""
    low, high = domain(lanes)
    limits = {v for ln in lanes for v in (ln.bad_above, ln.bad_below) if v is not None}
    return sorted(v for v in limits if v < low or v > high)


def bar(value: float | None, width: int = 120) -> str:
    """A horizontal bar for a rate in [0, 1]."""
    if value is None:
        return ""
    filled = max(0.0, min(1.0, value)) * width
    return (
        f'<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{width}" height="10" viewBox="0 0 {width} 10">'
        f'<rect width="{width}" height="10" fill="#eeeeee"/><rect width="{filled:.1f}" height="10" fill="#43a047"/>'
        "</svg>"
    )


def _num(value: float) -> str:
    return f"{value:.4g}"


# --- across runs: status strips, sparklines, bars (``assay trends``) ---------------------------

_CELL = 14
_GAP = 3


@dataclass(frozen=True)
class StripCell:
    """One run of a row: its status (None: it did not run), whether it was flaky, a tooltip."""

    status: str | None
    flaky: bool
    title: str


_FLAKY = status_words.Look("flaky", "warn").colour


def _status_colour(status: str) -> str:
    look = status_words.of_word(status)
    return look.colour if look is not None else _FLAKY


def status_strip(cells: Sequence[StripCell]) -> str:
    """A row's statuses across runs as squares, oldest first: green PASS, red FAIL, purple ERR, grey
    SKIP, an empty frame where it did not run; an orange bar under a run where it was flaky."""
    width = max(1, len(cells)) * (_CELL + _GAP)
    height = _CELL + 5
    parts = [
        f'<svg class="strip" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="status per run">'
    ]
    for index, cell in enumerate(cells):
        x = index * (_CELL + _GAP)
        title = f"<title>{escape(cell.title)}</title>"
        if cell.status is None:
            parts.append(
                f'<rect class="absent" x="{x + 0.5}" y="0.5" width="{_CELL - 1}" height="{_CELL - 1}" rx="2" '
                f'fill="none" stroke="#bdbdbd">{title}</rect>'
            )
            continue
        colour = _status_colour(cell.status)
        parts.append(
            f'<rect class="run {escape(cell.status)}" data-status="{escape(cell.status)}" x="{x}" y="0" '
            f'width="{_CELL}" height="{_CELL}" rx="2" fill="{colour}">{title}</rect>'
        )
        if cell.flaky:
            parts.append(
                f'<rect class="flaky" x="{x}" y="{_CELL + 1}" width="{_CELL}" height="3" fill="{_FLAKY}">{title}</rect>'
            )
    parts.append("</svg>")
    return "".join(parts)


def sparkline(
    values: Sequence[float | None],
    titles: Sequence[str],
    step: int | None = None,
    levels: tuple[float, float] | None = None,
    worse: bool | None = None,
    width: int = 200,
    height: int = 36,
) -> str:
    """A small line of a metric across runs (oldest first, one slot per run), a dot per value; with
    ``step`` (the index of the first run after it) a dashed line where the level changed and each
    part's median (``levels``) drawn flat, red when the change is ``worse``."""
    present = [v for v in values if v is not None]
    pad = 4.0
    slots = max(1, len(values) - 1)
    low, high = (min(present), max(present)) if present else (0.0, 1.0)
    if levels is not None:
        low, high = min(low, *levels), max(high, *levels)
    # Small wiggles stay small: the range is at least a fifth of the values' size, centred on them.
    least = 0.2 * max(abs(low), abs(high)) or 1.0
    if high - low < least:
        middle = (high + low) / 2
        low, high = middle - least / 2, middle + least / 2
    span = high - low

    def x(index: float) -> float:
        return pad + index / slots * (width - 2 * pad)

    def y(value: float) -> float:
        return height - pad - (value - low) / span * (height - 2 * pad)

    parts = [
        f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">'
    ]
    colour = "#c62828" if worse else "#1565c0"
    if step is not None and levels is not None:
        sx = x(step - 0.5)
        parts.append(
            f'<line class="step" x1="{sx:.1f}" x2="{sx:.1f}" y1="0" y2="{height}" stroke="{colour}" '
            f'stroke-width="1.5" stroke-dasharray="3 2"><title>the level changed here</title></line>'
        )
        parts.append(
            f'<line class="level" x1="{x(0):.1f}" x2="{sx:.1f}" y1="{y(levels[0]):.1f}" y2="{y(levels[0]):.1f}" '
            f'stroke="{colour}" stroke-opacity="0.35" stroke-width="3"/>'
            f'<line class="level" x1="{sx:.1f}" x2="{x(len(values) - 1):.1f}" y1="{y(levels[1]):.1f}" '
            f'y2="{y(levels[1]):.1f}" stroke="{colour}" stroke-opacity="0.35" stroke-width="3"/>'
        )
    points = [(x(i), y(v)) for i, v in enumerate(values) if v is not None]
    if len(points) > 1:
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f'<polyline points="{path}" fill="none" stroke="#616161" stroke-width="1.2"/>')
    for index, value in enumerate(values):
        if value is None:
            continue
        parts.append(
            f'<circle class="value" cx="{x(index):.1f}" cy="{y(value):.1f}" r="2.6" fill="#424242">'
            f"<title>{escape(titles[index])}</title></circle>"
        )
    parts.append("</svg>")
    return "".join(parts)


def column_bars(values: Sequence[float | None], titles: Sequence[str], width: int = 600, height: int = 80) -> str:
    """Vertical bars, one per run (oldest first), their height the value (cost per run)."""
    present = [v for v in values if v is not None]
    high = max(present) if present and max(present) > 0 else 1.0
    slot = width / max(1, len(values))
    parts = [
        f'<svg class="bars" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">'
    ]
    for index, value in enumerate(values):
        if value is None:
            continue
        tall = max(1.0, value / high * (height - 4))
        parts.append(
            f'<rect class="bar" x="{index * slot + 2:.1f}" y="{height - tall:.1f}" width="{slot - 4:.1f}" '
            f'height="{tall:.1f}" fill="#5c6bc0"><title>{escape(titles[index])}</title></rect>'
        )
    parts.append("</svg>")
    return "".join(parts)
