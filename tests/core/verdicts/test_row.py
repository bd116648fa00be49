"""A row's verdict, its steps in order (``fixtures_core.verdicts.row``)."""

from __future__ import annotations

from fixtures_core.results import Check, Outcomes, RowResult, SampleResult, Status
from fixtures_core.verdicts import row as row_verdict


def sample(index: int, status: Status, error: str | None = None) -> SampleResult:
    command = Check("not_evaluated" if status == "SKIP" else "pass")
    return SampleResult(index, status, 0.0, None, "", "", command, error=error)


def row(status: Status, *samples: SampleResult, error: str | None = None) -> RowResult:
    return RowResult(
        id="f.md:3",
        file="f.md",
        name="r",
        line=3,
        status=status,
        repeat=len(samples),
        command=("true",),
        properties={},
        samples=samples,
        outcomes=Outcomes("pass", "not_evaluated"),
        error=error,
    )


def test_a_row_none_of_whose_samples_ran_is_skipped_with_their_reason() -> None:
    # run_row combines SKIP samples like PASS ones: the raw row says PASS.
    raw = row("PASS", sample(0, "SKIP", "dry run"), sample(1, "SKIP", "dry run"))

    skipped = row_verdict.dry_run_skipped(raw)

    assert (skipped.status, skipped.error, skipped.passed) == ("SKIP", "dry run", False)


def test_a_row_with_a_sample_that_ran_or_without_samples_keeps_its_status() -> None:
    ran = row("PASS", sample(0, "PASS"), sample(1, "SKIP", "dry run"))
    errored = row("ERR", sample(0, "SKIP", "dry run"), error="cancelled after 1 of 2 samples")
    empty = row("PASS")

    assert [row_verdict.dry_run_skipped(r) for r in (ran, errored, empty)] == [ran, errored, empty]


def test_a_disqualified_arm_fails_naming_what_disqualified_it() -> None:
    arm = row("PASS", sample(0, "PASS"))

    lost = row_verdict.with_case(arm, "lost")
    disqualified = row_verdict.with_case(arm, "disqualified", ["disqualifier: silent catch at a.py:3"])

    assert (lost.status, lost.case_result, lost.error) == ("PASS", "lost", None)  # losing is no failure
    assert (disqualified.status, disqualified.case_result) == ("FAIL", "disqualified")
    assert disqualified.error == "loses its case whatever its score: disqualifier: silent catch at a.py:3"


def test_a_judge_error_makes_the_arm_err_beside_its_own_reasons() -> None:
    failed = row("FAIL", sample(0, "FAIL"), error="metric score: 40 points below min 50")

    judged = row_verdict.judged(failed, "sample 0: judge output is not JSON")

    assert judged.status == "ERR"  # ERR > FAIL
    assert judged.error == "metric score: 40 points below min 50; judge: sample 0: judge output is not JSON"


def test_the_sampling_rule_and_a_stop() -> None:
    samples = [sample(0, "PASS"), sample(1, "FAIL"), sample(2, "PASS"), sample(3, "PASS"), sample(4, "PASS")]

    assert row_verdict.ran(samples, None).status == "FAIL"  # seed 01: any FAIL
    assert row_verdict.ran(samples, None, pass_rate=0.8).status == "PASS"  # 4/5 = 0.8 meets 0.8
    stopped = row_verdict.ran(samples, "time budget 2m ran out after 5 of 6 samples")
    assert (stopped.status, stopped.error) == ("ERR", "time budget 2m ran out after 5 of 6 samples")
