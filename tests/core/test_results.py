"""One definition of a row's and a sample's outcome (``fixtures_core.results``)."""

from __future__ import annotations

from fixtures_core.results import Check, Outcomes, RowResult, SampleResult, Status, skipped_if_unrun


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

    skipped = skipped_if_unrun(raw)

    assert (skipped.status, skipped.error, skipped.passed) == ("SKIP", "dry run", False)


def test_a_row_with_a_sample_that_ran_or_without_samples_keeps_its_status() -> None:
    ran = row("PASS", sample(0, "PASS"), sample(1, "SKIP", "dry run"))
    errored = row("ERR", sample(0, "SKIP", "dry run"), error="cancelled after 1 of 2 samples")
    empty = row("PASS")

    assert [skipped_if_unrun(r) for r in (ran, errored, empty)] == [ran, errored, empty]
