"""The A/B stage of closing a run (``fixtures_core.abstage``): the run's status over rows and suites."""

from __future__ import annotations

from pathlib import Path

from tests.suites import run_in_process


def test_skipped_rows_never_become_the_runs_status(tmp_path: Path) -> None:
    fixture = tmp_path / "skips.md"
    fixture.write_text("| Name | Command | Skip |\n|---|---|---|\n| first | `true` | true |\n| second | `true` | |\n")

    run = run_in_process(fixture, tmp_path / "state")

    assert [r.status for r in run.rows] == ["SKIP", "PASS"]
    assert (run.status, run.verdict) == ("PASS", "PASS")


def test_a_suite_whose_rows_are_all_skipped_passes(tmp_path: Path) -> None:
    fixture = tmp_path / "suite.md"
    fixture.write_text(
        "---\nexec: echo\narms: {a: {}, b: {}}\nrequires: [no-such-tool-assay-test]\n---\n| Name |\n|---|\n| one |\n"
    )

    run = run_in_process(fixture, tmp_path / "state")

    assert [r.status for r in run.rows] == ["SKIP", "SKIP"]
    assert run.suites[0].cases[0].verdict == "SKIP" and run.verdict == "PASS"
