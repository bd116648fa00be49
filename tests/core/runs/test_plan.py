"""What a run will execute (``fixtures_core.runs.plan``): its sample slots, the order of a row's samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.runs.options import DEFAULT_PARALLEL, RunOptions
from fixtures_core.runs.plan import Plan, plan, rows_at_once, sample_budget, sample_slots

MATRIX = "| Name | Command |\n|---|---|\n| one | `true` |\n"
SUITE = "---\nexec: echo\narms: {a: {}, b: {}}\n---\n| Name |\n|---|\n| one |\n"


def slots(tmp_path: Path, text: str, **options: object) -> int:
    path = tmp_path / "fixture.md"
    path.write_text(text, encoding="utf-8")
    run_options = RunOptions(paths=(str(path),), **options)  # type: ignore[arg-type]
    return sample_slots(run_options, plan(run_options).matrix)


@pytest.mark.parametrize(
    ("text", "options", "expected"),
    [
        (MATRIX, {}, DEFAULT_PARALLEL),  # a plain matrix: 4 samples in flight
        (SUITE, {}, 1),  # seed 04: A/B attempts one at a time by default
        (SUITE, {"concurrency": 3}, 3),  # unless the command line asks for more
        (SUITE, {"parallel": 2}, 2),
        (SUITE.replace("---\n|", "concurrency: 2\n---\n|"), {}, 2),  # or the suite
    ],
    ids=["matrix", "suite", "suite --concurrency", "suite --parallel", "suite concurrency:"],
)
def test_sample_slots_default_to_one_with_arms(
    tmp_path: Path, text: str, options: dict[str, object], expected: int
) -> None:
    assert slots(tmp_path, text, **options) == expected


def test_parallel_samples_opts_in_the_rows_that_do_not_say_serial(tmp_path: Path) -> None:
    path = tmp_path / "fixture.md"
    path.write_text(
        "| Name | Command | Serial |\n|---|---|---|\n| unsaid | `true` | |\n| kept | `true` | true |\n",
        encoding="utf-8",
    )
    default = plan(RunOptions(paths=(str(path),))).matrix.rows
    opted = plan(RunOptions(paths=(str(path),), parallel_samples=True)).matrix.rows
    assert [r.samples_in_order for r in default] == [True, True]
    assert [r.samples_in_order for r in opted] == [False, True]


ADAPTIVE = (
    "---\nrepeat: 20\nsampling: adaptive\n---\n| Name | Command |\n|---|---|\n| one | `true` |\n| two | `true` |\n"
)


def planned(tmp_path: Path, text: str, **options: object) -> tuple[RunOptions, Plan]:
    path = tmp_path / "fixture.md"
    path.write_text(text, encoding="utf-8")
    run_options = RunOptions(paths=(str(path),), **options)  # type: ignore[arg-type]
    return run_options, plan(run_options)


def test_a_sample_budget_covers_its_rows_max_or_is_refused(tmp_path: Path) -> None:
    options, fixed = planned(tmp_path, ADAPTIVE, sample_budget="fixed")
    assert all(row.budgeted for row in fixed.matrix.rows)
    budget = sample_budget(options, fixed)
    assert budget is not None and budget.total == 40  # fixed k: 2 rows x max 20
    _, more = planned(tmp_path, ADAPTIVE, sample_budget="55")
    assert sample_budget(RunOptions(paths=(), sample_budget="55"), more).total == 55  # type: ignore[union-attr]
    with pytest.raises(UsageError, match=r"--sample-budget 39 is below the 40 samples its 2 adaptive rows take"):
        planned(tmp_path, ADAPTIVE, sample_budget="39")
    with pytest.raises(UsageError, match="no row is adaptive"):
        planned(tmp_path, MATRIX, sample_budget="fixed")
    with pytest.raises(
        UsageError, match="--sample-budget must be fixed .* or a whole number of samples >= 1, got 'most'"
    ):
        planned(tmp_path, ADAPTIVE, sample_budget="most")
    _, said = planned(tmp_path, ADAPTIVE.replace("sampling: adaptive", "sampling: {budget: fixed}"))
    assert all(row.budgeted for row in said.matrix.rows)  # the file's own budget: fixed
    _, dry = planned(tmp_path, ADAPTIVE, sample_budget="fixed", dry_run=True)
    assert sample_budget(RunOptions(paths=(), sample_budget="fixed", dry_run=True), dry) is None  # spends nothing


def test_with_a_sample_budget_every_row_is_in_flight_unless_parallel_says(tmp_path: Path) -> None:
    # A row that waits for left-over samples holds its row's thread: every row gets one, so that a row
    # waiting never keeps a later row (which may leave samples) from starting. Slots still bound samples.
    wide = ADAPTIVE + "".join(f"| r{i} | `true` |\n" for i in range(8))
    options, budgeted = planned(tmp_path, wide, sample_budget="fixed")
    assert (rows_at_once(options, budgeted.matrix), sample_slots(options, budgeted.matrix)) == (10, DEFAULT_PARALLEL)
    options, told = planned(tmp_path, wide, sample_budget="fixed", parallel=3)
    assert rows_at_once(options, told.matrix) == 3
    options, plain = planned(tmp_path, wide)
    assert rows_at_once(options, plain.matrix) == DEFAULT_PARALLEL
