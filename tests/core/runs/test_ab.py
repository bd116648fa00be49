"""The A/B stage of closing a run (``fixtures_core.runs.ab``): the run's status over rows and suites."""

from __future__ import annotations

from pathlib import Path

from tests.suites import run_in_process


def test_skipped_rows_never_become_the_runs_status(tmp_path: Path) -> None:
    fixture = tmp_path / "skips.md"
    fixture.write_text("| Name | Command | Skip |\n|---|---|---|\n| first | `true` | true |\n| second | `true` | |\n")

    run = run_in_process(fixture, tmp_path / "state")

    assert [r.status for r in run.rows] == ["SKIP", "PASS"]
    assert (run.status, run.verdict.exit_code) == ("PASS", 0)


def test_a_suite_whose_rows_are_all_skipped_passes(tmp_path: Path) -> None:
    fixture = tmp_path / "suite.md"
    fixture.write_text(
        "---\nexec: echo\narms: {a: {}, b: {}}\nrequires: [no-such-tool-assay-test]\n---\n| Name |\n|---|\n| one |\n"
    )

    run = run_in_process(fixture, tmp_path / "state")

    assert [r.status for r in run.rows] == ["SKIP", "SKIP"]
    assert run.suites[0].cases[0].verdict == "SKIP" and run.status == "PASS"


def _arm_suite(tmp_path: Path, gates: str) -> Path:
    """Two arms; the bare arm's CEL is false on every sample (it prints 'bare')."""
    fixture = tmp_path / "suite.md"
    fixture.write_text(
        "---\nexec: echo\narms:\n  variant: {args: [variant]}\n  bare: {args: [bare]}\n"
        + gates
        + '---\n| Name | CEL Validation |\n|---|---|\n| one | `stdout.contains("variant")` |\n'
    )
    return fixture


def test_without_a_hard_gate_a_failing_arm_fails_the_run(tmp_path: Path) -> None:
    run = run_in_process(_arm_suite(tmp_path, ""), tmp_path / "state")

    assert {r.name: r.status for r in run.rows} == {"one/variant": "PASS", "one/bare": "FAIL"}
    # nothing else decides: a failing row is never green by default
    assert (run.status, run.verdict.exit_code) == ("FAIL", 1)


def test_with_a_hard_gate_the_gate_decides_over_a_failing_arm(tmp_path: Path) -> None:
    gates = (
        "gates:\n  - {name: variant passes, cel: 'rows.all(r, r.arms.variant.status == \"PASS\")', severity: hard}\n"
    )
    run = run_in_process(_arm_suite(tmp_path, gates), tmp_path / "state")

    assert {r.name: r.status for r in run.rows} == {"one/variant": "PASS", "one/bare": "FAIL"}
    assert (run.status, run.verdict.exit_code) == ("PASS", 0)  # the bare arm doing worse is what the suite measures
