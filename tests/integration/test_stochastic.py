"""Issue 4 acceptance through the command line: pass@k, pass^k, flaky rows, groups, withholding.

The fixture's commands pass on a known set of sample indices (they read
``$ASSAY_SAMPLE``), and append ``ROW SAMPLE`` to a counter file, which proves
how many times each command really ran. Every expected figure below is worked
out by hand from those patterns.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import run_local

# Five samples per row (indices 0..4); a sample passes when its command exits 0.
#   alternating (arm a): passes on {0, 2, 4}  -> c = 3
#   steady      (arm a): passes on all five   -> c = 5
#   broken      (arm b): passes on none       -> c = 0
#   lucky       (arm b): passes on {3}        -> c = 1
#   parked      (arm b): skipped, never runs
PATTERN_FIXTURE = """\
---
repeat: 5
---

| Name | arm | Command | Skip |
|---|---|---|---|
| alternating | a | `echo "$ASSAY_ROW $ASSAY_SAMPLE" >> COUNTER; [ $((ASSAY_SAMPLE % 2)) -eq 0 ]` | |
| steady | a | `echo "$ASSAY_ROW $ASSAY_SAMPLE" >> COUNTER` | |
| broken | b | `echo "$ASSAY_ROW $ASSAY_SAMPLE" >> COUNTER; exit 3` | |
| lucky | b | `echo "$ASSAY_ROW $ASSAY_SAMPLE" >> COUNTER; [ $ASSAY_SAMPLE -eq 3 ]` | |
| parked | b | `echo "$ASSAY_ROW $ASSAY_SAMPLE" >> COUNTER` | true |
"""

# n = 5, k = 2, C(5, 2) = 10. pass@2 = 1 - C(5-c, 2)/10, pass^2 = C(c, 2)/10.
EXPECTED_ROWS = {
    # c=3: pass@2 = 1 - C(2,2)/10 = 9/10; pass^2 = C(3,2)/10 = 3/10
    "alternating": {"passed": 3, "pass_rate": 3 / 5, "pass_at_k": 9 / 10, "pass_hat_k": 3 / 10, "class": "flaky"},
    # c=5: pass@2 = 1 - C(0,2)/10 = 1; pass^2 = C(5,2)/10 = 1
    "steady": {"passed": 5, "pass_rate": 1.0, "pass_at_k": 1.0, "pass_hat_k": 1.0, "class": "stable-pass"},
    # c=0: pass@2 = 1 - C(5,2)/10 = 0; pass^2 = C(0,2)/10 = 0
    "broken": {"passed": 0, "pass_rate": 0.0, "pass_at_k": 0.0, "pass_hat_k": 0.0, "class": "stable-fail"},
    # c=1: pass@2 = 1 - C(4,2)/10 = 1 - 6/10 = 2/5; pass^2 = C(1,2)/10 = 0
    "lucky": {"passed": 1, "pass_rate": 1 / 5, "pass_at_k": 2 / 5, "pass_hat_k": 0.0, "class": "flaky"},
}
PASSING_SAMPLES = {"alternating": [0, 2, 4], "steady": [0, 1, 2, 3, 4], "broken": [], "lucky": [3]}

# Suite over the 4 counted rows (parked is skipped, never counted):
#   pass@2 = (9/10 + 1 + 0 + 2/5) / 4 = 23/40 = 0.575
#   pass^2 = (3/10 + 1 + 0 + 0) / 4 = 13/40 = 0.325
#   rows meeting pass@k (pass@2 == 1, i.e. every 2 of 5 samples include a pass: n - c < 2): steady = 1
#   rows meeting pass^k (every sample passed): steady = 1
# arm a (alternating, steady): pass@2 = (9/10 + 1)/2 = 0.95, pass^2 = (3/10 + 1)/2 = 0.65, rows 1 and 1 of 2
# arm b (broken, lucky; parked skipped): pass@2 = (0 + 2/5)/2 = 0.2, pass^2 = 0, rows 0 and 0 of 2


def rows_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for fixture in document["fixtures"] for row in fixture["rows"]}


def pattern_fixture(tmp_path: Path) -> tuple[Path, Path]:
    counter = tmp_path / "counter.txt"
    fixture = tmp_path / "pattern.md"
    fixture.write_text(PATTERN_FIXTURE.replace("COUNTER", str(counter)))
    return fixture, counter


def line_with(stdout: str, start: str) -> str:
    return next(line.strip() for line in stdout.splitlines() if line.strip().startswith(start))


def table_line(stdout: str, row: str) -> list[str]:
    """The cells of a row of the terminal rows table."""
    line = next(line for line in stdout.splitlines() if line.startswith("│") and line.split("│")[1].strip() == row)
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_known_pass_pattern_gives_exact_row_group_and_suite_figures(tmp_path: Path) -> None:
    fixture, counter = pattern_fixture(tmp_path)
    done, document = run_local(fixture, tmp_path, "--k", "2", "--group-by", "arm")
    assert done.returncode == 1, done.stdout + done.stderr  # failing samples still fail their rows

    # Every sample of every non-skipped row ran exactly once, skipped rows never.
    calls = Counter(tuple(line.rsplit(" ", 1)) for line in counter.read_text().splitlines())
    assert calls == Counter({(row, str(i)): 1 for row in EXPECTED_ROWS for i in range(5)})

    rows = rows_of(document)
    assert {name: row["status"] for name, row in rows.items()} == {
        "alternating": "FAIL",
        "steady": "PASS",
        "broken": "FAIL",
        "lucky": "FAIL",
        "parked": "SKIP",
    }
    for name, expected in EXPECTED_ROWS.items():
        row = rows[name]
        assert [s["index"] for s in row["samples"] if s["status"] == "PASS"] == PASSING_SAMPLES[name]
        figures = row["stochastic"]
        assert figures["n"] == 5 and figures["k"] == 2
        assert figures["passed"] == expected["passed"]
        assert figures["class"] == expected["class"]
        for key in ("pass_rate", "pass_at_k", "pass_hat_k"):
            assert figures[key] == pytest.approx(expected[key]), (name, key)
        assert "withheld" not in figures
        low, high = figures["pass_rate_interval"]
        assert 0 <= low <= expected["pass_rate"] <= high <= 1
    assert "stochastic" not in rows["parked"]
    assert rows["parked"]["samples"] == []

    suite = document["summary"]["stochastic"]
    assert suite["k"] == 2 and suite["rows"] == 4
    assert suite["pass_at_k"] == pytest.approx(23 / 40)
    assert suite["pass_hat_k"] == pytest.approx(13 / 40)
    # a row meets pass@2 when pass@2 == 1 (n - c < 2): only steady; pass^2 when c == n: steady
    assert (suite["rows_pass_at_k"], suite["rows_pass_hat_k"]) == (1, 1)
    assert suite["skipped"] == ["parked"]
    assert "withheld" not in suite
    groups = suite["groups"]["arm"]
    assert set(groups) == {"a", "b"}
    assert groups["a"]["rows"] == 2
    assert groups["a"]["pass_at_k"] == pytest.approx(19 / 20)
    assert groups["a"]["pass_hat_k"] == pytest.approx(13 / 20)
    assert (groups["a"]["rows_pass_at_k"], groups["a"]["rows_pass_hat_k"]) == (1, 1)
    assert groups["b"]["rows"] == 2
    assert groups["b"]["pass_at_k"] == pytest.approx(1 / 5)
    assert groups["b"]["pass_hat_k"] == pytest.approx(0)
    assert (groups["b"]["rows_pass_at_k"], groups["b"]["rows_pass_hat_k"]) == (0, 0)
    assert groups["b"]["skipped"] == ["parked"]
    assert document["summary"]["skipped"] == 1 and document["summary"]["samples"] == 20

    # Terminal: pass@2 / pass^2 columns, flaky rows flagged, suite and group lines.
    out = done.stdout
    header = next(line for line in out.splitlines() if "pass@2" in line)
    assert "pass^2" in header
    alternating = table_line(out, "alternating")
    assert alternating[1:3] == ["FAIL (flaky)", "3/5"] and alternating[-2:] == ["0.9", "0.3"]
    assert table_line(out, "lucky")[1] == "FAIL (flaky)"
    assert table_line(out, "lucky")[-2:] == ["0.4", "0"]
    assert table_line(out, "steady")[1] == "PASS" and table_line(out, "steady")[-2:] == ["1", "1"]
    assert table_line(out, "broken")[1] == "FAIL"  # stable-fail is not flaky
    assert table_line(out, "parked")[1] == "SKIP"
    assert line_with(out, "suite:") == "suite: pass@2 0.575 (rows 1/4), pass^2 0.325 (rows 1/4)"
    assert line_with(out, "arm=a:") == "arm=a: pass@2 0.95 (rows 1/2), pass^2 0.65 (rows 1/2)"
    assert line_with(out, "arm=b:") == "arm=b: pass@2 0.2 (rows 0/2), pass^2 0 (rows 0/2)"


def test_k_above_the_sample_count_withholds_rows_and_headlines(tmp_path: Path) -> None:
    fixture, _ = pattern_fixture(tmp_path)
    done, document = run_local(fixture, tmp_path, "--k", "9", "--group-by", "arm")
    assert done.returncode == 1, done.stdout + done.stderr  # the verdict does not depend on k
    rows = rows_of(document)
    counted = ["alternating", "steady", "broken", "lucky"]
    for name in counted:
        figures = rows[name]["stochastic"]
        assert "pass_at_k" not in figures and "pass_hat_k" not in figures
        assert "k=9" in figures["withheld"] and "n=5" in figures["withheld"]
        assert figures["n"] == 5 and figures["passed"] == EXPECTED_ROWS[name]["passed"]  # still reported
    suite = document["summary"]["stochastic"]
    assert "pass_at_k" not in suite and "pass_hat_k" not in suite
    assert suite["withheld_rows"] == counted
    for name in counted:
        assert repr(name) in suite["withheld"]
    assert suite["skipped"] == ["parked"]
    assert document["summary"]["stochastic"]["groups"]["arm"]["a"]["withheld_rows"] == ["alternating", "steady"]
    assert "pass_at_k" not in document["summary"]["stochastic"]["groups"]["arm"]["b"]

    out = done.stdout
    assert table_line(out, "alternating")[-2:] == ["withheld", "withheld"]
    suite_line = line_with(out, "suite:")
    assert suite_line.startswith(
        "suite: pass@9 and pass^9 withheld: 4 rows (k=9 > n=5: 'alternating', 'steady', 'broken', 'lucky')"
    )
    assert "k=9 > n=5" in suite_line


def test_an_indeterminate_sample_withholds_the_row_and_the_headline(tmp_path: Path) -> None:
    fixture = tmp_path / "judged.md"
    fixture.write_text(
        "---\nrepeat: 3\n---\n\n"
        "| Name | Command | Indeterminate |\n|---|---|---|\n"
        "| judged | `echo ok` | `sample == 1` |\n"
        "| clear | `echo ok` | `false` |\n"
    )
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr  # needing judgment is not a failure
    rows = rows_of(document)
    judged = rows["judged"]
    assert [s.get("indeterminate", False) for s in judged["samples"]] == [False, True, False]
    assert judged["status"] == "PASS"
    assert "pass_at_k" not in judged["stochastic"]
    assert judged["stochastic"]["withheld"] == "sample 1 needs human judgment (indeterminate)"
    assert rows["clear"]["stochastic"]["pass_at_k"] == pytest.approx(1.0)  # n=3, c=3, k=3
    suite = document["summary"]["stochastic"]
    assert "pass_at_k" not in suite and suite["withheld_rows"] == ["judged"]
    assert "'judged'" in suite["withheld"] and "human judgment" in suite["withheld"]
    assert table_line(done.stdout, "judged")[-2:] == ["withheld", "withheld"]
    assert "human judgment" in line_with(done.stdout, "suite:")


def test_repeat_one_without_flags_keeps_the_verdict(tmp_path: Path) -> None:
    fixture = tmp_path / "single.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| good | `true` |\n| bad | `false` |\n")
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert document["status"] == "FAIL"
    rows = rows_of(document)
    assert rows["good"]["status"] == "PASS" and rows["bad"]["status"] == "FAIL"
    assert [len(r["samples"]) for r in rows.values()] == [1, 1]
    # The new figures are in the JSON: n = k = 1, pass@1 = pass^1 = the single outcome.
    assert rows["good"]["stochastic"]["k"] == 1 and rows["good"]["stochastic"]["class"] == "stable-pass"
    assert rows["good"]["stochastic"]["pass_at_k"] == pytest.approx(1.0)
    assert rows["bad"]["stochastic"]["pass_hat_k"] == pytest.approx(0.0)
    assert rows["bad"]["stochastic"]["class"] == "stable-fail"
    assert "k" not in document["summary"]["stochastic"]  # no --k: each row's own n
    assert "groups" not in document["summary"]["stochastic"]
    assert "flaky" not in done.stdout
    assert done.stdout.strip().splitlines()[-2:] == [
        "FAIL  1 passed, 1 failed, 0 errored, 0 skipped; 2 samples",
        "verdict: FAIL · exit 1 — 1 row failed: 'bad'",
    ]
