"""The pass-rate heat-map: the count of rows passed in each cell, and a colour scale anchored where rows
stop passing, so 8/10 (two rows failing every sample) never reads like 10/10."""

from __future__ import annotations

import re
from dataclasses import replace

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.heatmap import heatmaps, pivot_of
from fixtures_core.results import RowResult
from tests.core.analysis.test_trends import row, run


def cell_rows(provider: str, failing: int, flaky: int = 0) -> list[RowResult]:
    """10 rows of one cell: ``failing`` fail every sample, ``flaky`` pass with one sample of 3 failing."""
    found = []
    for index in range(10):
        passed = 0 if index < failing else 2 if index < failing + flaky else 3
        made = row(f"{provider} m{index}", passed)
        status = "FAIL" if index < failing else "PASS"
        found.append(replace(made, status=status, properties={"provider": provider, "size": "all"}))
    return found


def cells(night: RunResult) -> dict[str, tuple[str, tuple[int, int, int]]]:
    page = heatmaps(night, pivot_of(night.rows, "provider", "size"), {})
    found = {}
    pattern = r'data-cell="(\w+)\|all" style="background:#(\w{6})"[^>]*><a href="#">([^<]*)</a>'
    for provider, colour, text in re.findall(pattern, page):
        found[provider] = (text, (int(colour[0:2], 16), int(colour[2:4], 16), int(colour[4:6], 16)))
    return found


def test_a_cell_with_failing_rows_is_never_a_shade_of_green() -> None:
    rows = cell_rows("all", 0) + cell_rows("flaky", 0, flaky=3) + cell_rows("one", 1) + cell_rows("two", 2)
    rows += cell_rows("none", 10)
    found = cells(run(0, rows))

    assert {name: text for name, (text, _rgb) in found.items()} == {
        "all": "10/10", "flaky": "10/10", "one": "9/10", "two": "8/10", "none": "0/10",
    }  # fmt: skip
    for name in ("all", "flaky"):
        r, g, _b = found[name][1]
        assert g > r  # green: every row passed
    for name in ("one", "two", "none"):
        r, g, _b = found[name][1]
        assert r > g + 30  # amber to red: a row failed
    # 8/10 and 10/10 stand far apart (a distance in RGB of well over 100), and 8/10 is redder than 9/10
    distance = sum((a - b) ** 2 for a, b in zip(found["two"][1], found["all"][1], strict=True)) ** 0.5
    assert distance > 100
    assert found["two"][1][1] < found["one"][1][1] and found["none"][1][1] < found["two"][1][1]
    assert found["flaky"][1] != found["all"][1]  # some samples failed in rows that passed: a paler green
