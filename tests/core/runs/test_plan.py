"""What a run will execute (``fixtures_core.runs.plan``): its sample slots, the order of a row's samples."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.runs.options import DEFAULT_PARALLEL, RunOptions
from fixtures_core.runs.plan import plan, sample_slots

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
