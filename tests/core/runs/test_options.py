"""Options checked before anything runs: a value out of range is a usage error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.runs.options import RunOptions
from fixtures_core.runs.plan import plan


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"repeat": 0}, "--repeat must be a whole number >= 1, got 0"),
        ({"repeat": -1}, "--repeat must be a whole number >= 1, got -1"),
        ({"repeat": 10**30}, "--repeat must be at most 100,000 samples, got 1e+30"),
        ({"k": 100_001}, "--k must be at most 100,000 samples, got 100001"),
        ({"parallel": 0}, "--parallel must be >= 1, got 0"),
        ({"engine": "dask"}, "--engine must be prefect or local, got 'dask'"),
        (
            {"rows_as_tasks": True, "engine": "local"},
            "--rows-as-tasks shapes the Prefect flow run: not with --engine local",
        ),
        (
            {"row_subflows": True, "engine": "local"},
            "--row-subflows shapes the Prefect flow run: not with --engine local",
        ),
        (
            {"row_subflows": True, "rows_as_tasks": True},
            "--row-subflows and --rows-as-tasks ask for opposite shapes: give one (subflows are the default)",
        ),
    ],
)
def test_options_out_of_range_are_usage_errors(values: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as raised:
        RunOptions(paths=("a.md",), **values).check()  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_a_state_folder_that_is_a_file_is_a_usage_error_before_anything_is_read(tmp_path: Path) -> None:
    not_a_folder = tmp_path / "state"
    not_a_folder.write_text("")
    with pytest.raises(UsageError) as raised:
        plan(RunOptions(paths=(str(tmp_path / "missing.md"),), out=str(not_a_folder)))
    assert str(raised.value) == f"--out {not_a_folder} is not a folder: give the state folder (default .assay)"
