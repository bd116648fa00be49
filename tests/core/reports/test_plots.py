"""Static SVG plots: lanes from results, the axis range, ticks, and the drawn elements."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.plots import Lane, Point, domain, lane, nice_ticks, off_axis_limits, strip_plot

SVG = "{http://www.w3.org/2000/svg}"


def test_a_lane_has_every_sample_its_aggregate_its_baseline_and_the_failing_zone(matrix_run: RunResult) -> None:
    rows = {r.name: r for r in matrix_run.rows}
    cli = rows["CLI high"]
    metric = cli.metrics["duration_ms"]
    one = lane(cli, "duration_ms", metric)
    assert [p.value for p in one.points] == list(metric.values)
    assert one.aggregate == metric.value and one.aggregate_name == "median"
    assert metric.comparison is not None and one.baseline == metric.comparison.baseline_value
    assert one.baseline_name == "API high"
    # lower is better, 25% allowed over the baseline row's median, and max 120000 ms: the tighter limit wins
    assert one.bad_above == pytest.approx(one.baseline * 1.25)  # type: ignore[operator]
    assert one.bad_below is None


def test_a_failed_sample_is_drawn_as_failed(matrix_run: RunResult) -> None:
    flaky = next(r for r in matrix_run.rows if r.name == "API flaky")
    points = lane(flaky, "duration_ms", flaky.metrics["duration_ms"]).points
    assert [p.outcome for p in points] == ["pass", "pass", "pass", "fail", "pass"]


def test_far_limits_stay_off_the_axis() -> None:
    lanes = [Lane("a", (Point(0, 3000.0, "pass"), Point(1, 3500.0, "pass")), bad_above=120_000.0)]
    low, high = domain(lanes)
    assert low < 3000 and 3500 < high < 4000
    assert off_axis_limits(lanes) == [120_000.0]
    near = [Lane("a", (Point(0, 3000.0, "pass"), Point(1, 3500.0, "pass")), bad_above=3600.0)]
    assert domain(near)[1] > 3600 and off_axis_limits(near) == []


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [(0.0, 1.0, [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]), (1234.0, 5678.0, [2000.0, 3000.0, 4000.0, 5000.0]),
     (0.013, 0.047, [0.02, 0.03, 0.04]), (5.0, 5.0, [5.0])],
)  # fmt: skip
def test_ticks_are_round_numbers_inside_the_range(low: float, high: float, expected: list[float]) -> None:
    assert nice_ticks(low, high) == pytest.approx(expected)


def test_the_plot_is_valid_svg_with_a_point_per_sample(matrix_run: RunResult) -> None:
    lanes = [lane(r, "duration_ms", r.metrics["duration_ms"], f"row-{i}") for i, r in enumerate(matrix_run.rows)]
    root = ET.fromstring(strip_plot("duration_ms", "ms", lanes))  # well-formed XML, or this raises
    assert root.get("class") == "plot" and root.get("data-metric") == "duration_ms"
    assert len(root.findall(f".//{SVG}circle[@class='sample']")) == 20
    assert len(root.findall(f".//{SVG}path[@class='aggregate']")) == 4
    assert len(root.findall(f".//{SVG}line[@class='baseline']")) == 3  # every row but the baseline row itself
    assert len(root.findall(f".//{SVG}rect[@class='threshold']")) == 3
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any(t.startswith("baseline API high: ") for t in titles)


def test_text_in_a_plot_is_escaped() -> None:
    svg = strip_plot("m<1>", "ms & s", [Lane("<script>x</script>", (Point(0, 1.0, "pass"),), aggregate=1.0)])
    assert "<script>" not in svg
    ET.fromstring(svg)
