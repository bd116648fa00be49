"""The words every report shows (``fixtures_core.reports.describe``): durations, failure texts, verdict.

Rows are built by hand where an exact edge is needed, and taken from a real run of the mixed
fixture (tests/core/reports/conftest.py) where the words must match what the pipeline produced.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, status_words
from fixtures_core.results import BudgetFigures, Check, Outcomes, RowResult, Sampled, SampleResult, Status


def sample(index: int, status: Status, ms: float, stdout: str = "", stderr: str = "", **fields: object) -> SampleResult:
    return SampleResult(index, status, ms, 0, stdout, stderr, Check("pass"), **fields)  # type: ignore[arg-type]


def row(status: Status, *samples: SampleResult, error: str | None = None, repeat: int = 3) -> RowResult:
    outcomes = Outcomes("pass", "pass")
    return RowResult("f.md::r", "f.md", "r", 12, status, repeat, ("true",), {}, samples, outcomes, error=error)


# --- durations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "shown"),
    [(None, "-"), (0.4, "0 ms"), (12.6, "13 ms"), (9_999.0, "9999 ms"), (10_000.0, "10.0 s"), (61_250.0, "61.2 s")],
)
def test_duration(ms: float | None, shown: str) -> None:
    assert describe.duration(ms) == shown


def test_median_duration_ignores_skipped_samples() -> None:
    # ran: 30, 10, 20 ms -> median 20; the skipped sample's 1000 ms does not count
    ran = row(
        "PASS", sample(0, "PASS", 30.0), sample(1, "SKIP", 1000.0), sample(2, "FAIL", 10.0), sample(3, "PASS", 20.0)
    )
    assert describe.median_duration_ms(ran) == 20.0
    assert describe.median_duration_ms(row("SKIP", sample(0, "SKIP", 5.0))) is None
    assert describe.median_duration_ms(row("SKIP")) is None


@pytest.mark.parametrize(
    ("value", "shown"), [(None, "-"), (0.0, "0"), (1.0, "1"), (0.5, "0.5"), (2 / 3, "0.667"), (0.1005, "0.101")]
)
def test_fraction(value: float | None, shown: str) -> None:
    assert describe.fraction(value) == shown


# --- failure texts --------------------------------------------------------------------------


def test_failure_names_failing_samples_their_reason_and_an_excerpt_of_the_first() -> None:
    cel = Check("fail", expression="json.ok")
    failed = row(
        "FAIL",
        sample(0, "PASS", 1.0, assertions=Check("pass", expression="json.ok")),
        sample(1, "FAIL", 1.0, "l1\nl2\nl3\nl4\nl5\n", "", assertions=cel),
        sample(2, "FAIL", 1.0, "other", "err", assertions=cel),
    )
    failure = describe.failure(failed)
    assert (failure.where, failure.error, failure.expression) == ("f.md:12", None, "json.ok")
    assert (failure.failing_samples, failure.first_sample) == ((1, 2), 1)
    assert failure.sample_reason == describe.CEL_FALSE  # the expression itself is failure.expression
    assert failure.excerpts == (("stdout", "l1\nl2\nl3\nl4"),)  # four lines; an empty stream is left out


def test_failure_does_not_repeat_the_rows_error_as_the_samples_reason() -> None:
    failed = row("ERR", sample(0, "ERR", 1.0, error="timed out after 5 s"), error="sample 0: timed out after 5 s")
    failure = describe.failure(failed)
    assert (failure.error, failure.sample_reason, failure.failing_samples) == (
        "sample 0: timed out after 5 s",
        None,
        (0,),
    )


def test_failure_excerpt_is_bounded() -> None:
    failure = describe.failure(row("FAIL", sample(0, "FAIL", 1.0, "x" * 1000)))
    ((stream, text),) = failure.excerpts
    assert (stream, len(text), text.endswith("…")) == ("stdout", 301, True)  # 300 characters and the ellipsis


def test_failure_of_a_row_whose_samples_all_passed_has_no_sample_details() -> None:
    failure = describe.failure(row("FAIL", sample(0, "PASS", 1.0), error="metric t: 5 s is above max 1"))
    assert (failure.failing_samples, failure.first_sample, failure.sample_reason, failure.excerpts) == (
        (),
        None,
        None,
        (),
    )


def test_failures_of_a_real_run_are_its_fail_and_err_rows_in_order(mixed_run: RunResult) -> None:
    big, broken = describe.failures(mixed_run)
    assert (big.row.name, big.where.endswith("mixed.md:15"), big.error) == (
        "big",
        True,
        "metric size: 500 bytes is above max 100",
    )
    assert big.failing_samples == ()  # every sample passed its checks: the metric failed the row
    assert (broken.row.name, broken.expression, broken.failing_samples) == ("broken", "json.size > 0", (0,))
    assert broken.excerpts == (("stdout", "not json\x01"),)


# --- verdict and counts ---------------------------------------------------------------------


def test_verdict_and_counts_of_a_real_run(mixed_run: RunResult) -> None:
    # small, small b PASS; big FAIL; broken ERR (one sample, it stopped the row); later SKIP: 3+3+3+1 samples
    assert (mixed_run.verdict.shown, status_words.verdict(mixed_run.verdict).tone, mixed_run.verdict.exit_code) == (
        "ERR",
        "error",
        2,
    )
    assert describe.answer(mixed_run) == "ERR · exit 2 — 1 row errored: 'broken'; 1 row failed: 'big'"
    assert describe.counts(mixed_run) == "2 passed, 1 failed, 1 errored, 1 skipped; 10 samples"


@pytest.mark.parametrize(
    ("status", "dry_run", "shown"),
    [
        ("PASS", False, ("PASS", "pass")),
        ("FAIL", False, ("FAIL", "fail")),
        ("SKIP", True, ("DRY RUN", "skip")),  # never a green PASS of what did not run
        ("PASS", True, ("DRY RUN", "skip")),  # (a dry run written before its document said SKIP)
        ("ERR", True, ("ERR", "error")),
    ],
)
def test_verdict_of_a_dry_run_is_never_pass(
    mixed_run: RunResult, status: Status, dry_run: bool, shown: tuple[str, str]
) -> None:
    run = replace(mixed_run, status=status, options={**mixed_run.options, "dry_run": dry_run})
    assert (run.verdict.shown, status_words.verdict(run.verdict).tone) == shown
    assert describe.counts(run).endswith("; nothing was scored") is dry_run


# --- adaptive sampling ------------------------------------------------------------------------


def adaptive_rows(run: RunResult, count: int, repeat: int) -> RunResult:
    """``run`` with its first ``count`` rows made adaptive (max ``repeat``, decided on the samples they have)."""
    seen = iter(range(len(run.rows)))

    def change(found: RowResult) -> RowResult:
        return replace(found, repeat=repeat, sampling="decided after 5: ...") if next(seen) < count else found

    fixtures = tuple(replace(f, rows=tuple(change(r) for r in f.rows)) for f in run.fixtures)
    return replace(run, fixtures=fixtures)


def test_the_saving_of_adaptive_sampling_counts_only_adaptive_rows(matrix_run: RunResult) -> None:
    # The example matrix: 4 rows of 5 samples. Three made adaptive with a max of 20 took 5 each:
    # 15 of at most 60 samples, 75% fewer. The fixed row counts in neither figure.
    adaptive = adaptive_rows(matrix_run, 3, 20)
    assert [len(r.samples) for r in adaptive.rows] == [5, 5, 5, 5]
    assert describe.sampling_saving(adaptive) == "15 of at most 60 samples (75% fewer than fixed k)"
    assert describe.sampling_saving(matrix_run) is None


def test_every_report_shows_the_saving_of_adaptive_sampling(matrix_run: RunResult) -> None:
    from io import StringIO

    from rich.console import Console

    from fixtures_core.reports import html, markdown, terminal

    adaptive = adaptive_rows(matrix_run, 4, 10)
    saving = "20 of at most 40 samples (50% fewer than fixed k)"
    shown = StringIO()
    terminal.render(adaptive, Console(file=shown, width=200))
    assert f"adaptive sampling: {saving}" in shown.getvalue()
    assert f"Adaptive sampling (4 rows: {saving})" in markdown.render(adaptive)
    assert f"adaptive sampling: {saving}" in html.html(adaptive)


def budgeted_run(run: RunResult) -> RunResult:
    """``run`` (4 rows of 5 samples) as if its rows shared a sample budget of fixed k with max 4: the first
    decided, the second curtailed, the third took 1 extra sample and was undecided when the budget ran out,
    the fourth took 2 and reached its cap of 7 (extras are counted past each row's own stop point)."""
    ends = iter(
        [Sampled("decided", 0, 12), Sampled("curtailed", 0, 12), Sampled("budget", 1, 12), Sampled("cap", 2, 7)]
    )

    def change(found: RowResult) -> RowResult:
        return replace(found, repeat=4, sampling="...", sampled=next(ends))

    fixtures = tuple(replace(f, rows=tuple(change(r) for r in f.rows)) for f in run.fixtures)
    rows = [row for f in fixtures for row in f.rows]
    return replace(run, fixtures=fixtures, summary=replace(run.summary, sample_budget=BudgetFigures.of(16, rows)))


def test_a_sample_budget_says_what_it_spent_and_how_its_rows_ended(matrix_run: RunResult) -> None:
    run = budgeted_run(matrix_run)
    figures = run.summary.sample_budget
    # 4 rows took 5 samples each: 20 of a budget of 16 (what the figures count is what the rows took).
    assert figures is not None and (figures.spent, figures.fixed, figures.extra_rows, figures.extra) == (20, 16, 2, 3)
    assert describe.sampling_saving(run) == (
        "20 of a sample budget of 16 spent (fixed k: 16); 4 rows: 1 decided, 1 curtailed, 1 undecided at their "
        "cap, 1 undecided when the budget ran out; 2 rows took 3 extra samples"
    )
    cells = [describe.passed_cell(row) for row in run.rows]
    assert cells[0].endswith("/5 (max 4)")
    assert cells[2].endswith("/5 (5 samples: 4 of its max 4, then 1 from the budget)")
    assert cells[3].endswith("/5 (5 samples: 3 of its max 4, then 2 from the budget)")  # stopped at 3, then 2 more


def test_every_report_shows_what_the_sample_budget_spent(matrix_run: RunResult) -> None:
    from io import StringIO

    from rich.console import Console

    from fixtures_core.reports import html, markdown, terminal

    run = budgeted_run(matrix_run)
    spending = describe.sampling_saving(run)
    shown = StringIO()
    terminal.render(run, Console(file=shown, width=400))
    assert f"adaptive sampling: {spending}" in shown.getvalue()
    assert f"Adaptive sampling (4 rows: {spending})" in markdown.render(run)
    assert f"adaptive sampling: {spending}" in html.html(run)
    told = "5 samples: 3 of its max 4, then 2 from the budget"
    assert told in shown.getvalue() and told in markdown.render(run) and told in html.html(run)
