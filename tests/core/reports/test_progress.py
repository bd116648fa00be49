"""Progress counts and their two renderings, on a clock the test controls."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from fixtures_core.parsing.parser import parse_document
from fixtures_core.reports.progress import Progress, clock_text, live_view, plain_line
from fixtures_core.results import Check, Outcomes, RowResult, SampleResult
from fixtures_core.spec import FixtureFile, Matrix, RowSpec

FIXTURE = (
    "---\nrepeat: 4\n---\n\n| Name | Command | Skip |\n|---|---|---|\n"
    "| alpha | true | |\n| beta | true | |\n| gamma | true | true |\n"
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def matrix() -> Matrix:
    rows = parse_document(FIXTURE, "f.md")[0]
    return Matrix((FixtureFile("f.md", "0" * 64, rows),))


def sample(index: int, status: str) -> SampleResult:
    return SampleResult(index, status, 1.0, 0, "", "", Check("pass"))  # type: ignore[arg-type]


def finished(spec: RowSpec, samples: int, status: str = "PASS") -> RowResult:
    return RowResult(
        spec.id, "f.md", spec.name, spec.line, status, spec.repeat, (), {},  # type: ignore[arg-type]
        tuple(sample(i, "PASS") for i in range(samples)), Outcomes("pass", "pass"),
    )  # fmt: skip


def test_counts_eta_and_rows_in_flight() -> None:
    clock = Clock()
    m = matrix()
    alpha, beta, gamma = m.rows
    progress = Progress(m, clock)
    first = progress.snapshot()
    assert (first.rows_total, first.samples_total, first.samples_done, first.eta_s) == (3, 8, 0, None)  # SKIP: none

    progress.row_started(alpha)
    progress.row_started(beta)
    progress.row_started(gamma)  # a skipped row never runs
    progress.sample_finished(alpha, sample(0, "PASS"))
    progress.sample_finished(alpha, sample(1, "FAIL"))
    clock.now += 10
    s = progress.snapshot()
    assert (s.samples_done, s.samples_failed, s.samples_errored) == (2, 1, 0)
    assert s.elapsed_s == 10 and s.eta_s == 30  # 10 s for 2 samples, 6 to go
    assert [(r.name, r.done, r.repeat) for r in s.in_flight] == [("alpha", 2, 4), ("beta", 0, 4)]


def test_a_row_that_stops_early_shortens_the_total() -> None:
    m = matrix()
    alpha, beta, gamma = m.rows
    progress = Progress(m, Clock())
    progress.row_started(alpha)
    progress.sample_finished(alpha, sample(0, "ERR"))
    progress.row_finished(finished(alpha, samples=1, status="ERR"))  # stopped after its ERR sample
    progress.row_finished(finished(replace(gamma), samples=0, status="SKIP"))
    s = progress.snapshot()
    assert (s.rows_done, s.samples_total, s.samples_errored, s.in_flight) == (2, 5, 1, ())
    progress.row_finished(finished(beta, samples=0, status="SKIP"))  # its skip command said so
    assert progress.snapshot().samples_total == 1


def test_samples_past_a_rows_max_never_show_more_done_than_planned() -> None:
    # A row that shares a sample budget may take extra samples past its repeat: 5 of alpha's planned 4.
    m = matrix()
    alpha = m.rows[0]
    clock = Clock()
    progress = Progress(m, clock)
    progress.row_started(alpha)
    for index in range(5):
        progress.sample_finished(alpha, sample(index, "PASS"))
    clock.now += 10
    s = progress.snapshot()
    assert (s.samples_done, s.samples_total) == (5, 8)
    for index in range(5, 9):
        progress.sample_finished(alpha, sample(index, "PASS"))
    s = progress.snapshot()
    assert (s.samples_done, s.samples_total, s.eta_s) == (9, 9, 0)  # never 9/8, never a negative ETA


def test_plain_line_says_everything_on_one_line() -> None:
    clock = Clock()
    m = matrix()
    progress = Progress(m, clock)
    progress.row_started(m.rows[0])
    progress.sample_finished(m.rows[0], sample(0, "FAIL"))
    clock.now += 65
    assert plain_line(progress.snapshot()) == (
        "assay: 1/8 samples, 0/3 rows done, 1 failed, 0 errored; elapsed 1:05, eta 7:35; running alpha (1/4)"
    )


def test_a_wait_shows_until_its_own_waiter_got_what_it_waited_for() -> None:
    # Two samples wait for slots of a limit; the first to get one must not clear what the other shows.
    progress = Progress(matrix(), Clock())
    first, second = object(), object()
    progress.waiting(first, "waiting for provider=a (2 of 2 held)")
    progress.waiting(second, "waiting for provider=b (1 of 1 held)")
    assert progress.snapshot().waiting == "waiting for provider=b (1 of 1 held)", "the latest wait is shown"
    progress.waiting(second, None)
    assert progress.snapshot().waiting == "waiting for provider=a (2 of 2 held)", "the first still waits"
    progress.waiting(first, "waiting for provider=a (1 of 2 held)")
    progress.waiting(first, None)
    assert progress.snapshot().waiting is None


def test_live_view_renders() -> None:
    m = matrix()
    progress = Progress(m, Clock())
    progress.row_started(m.rows[1])
    console = Console(record=True, width=100, force_terminal=False)
    console.print(live_view(progress.snapshot()))
    text = console.export_text()
    assert "0/8 samples  0/3 rows" in text and "running beta (0/4)" in text and "eta ?" in text


def test_clock_text() -> None:
    assert [clock_text(v) for v in (None, 4.4, 65, 3723)] == ["?", "0:04", "1:05", "1:02:03"]
