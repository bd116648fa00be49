"""A suite's saved runs read back: selected by label or fixture file, the previous run of a run, and runs
that could not be read named rather than skipped."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.errors import RunFileError
from fixtures_core.records.history import previous_run, suite_runs
from fixtures_core.records.store import Store
from tests.core.analysis.test_trends import history, run


def saved(tmp_path: Path) -> Store:
    """Fourteen nightly runs and, between them, two runs of another label and an unlabelled one."""
    store = Store(tmp_path / ".assay")
    for night in history():
        store.write_run(night)
    store.write_run(replace(run(3, []), run_id="20261204T030000.000000Z-abc1234-main", label="pr"))
    store.write_run(replace(run(5, []), run_id="20261206T030000.000000Z-abc1234-main", label="pr"))
    store.write_run(replace(run(6, []), run_id="20261207T030000.000000Z-abc1234-main", label=None))
    return store


def test_the_last_runs_of_the_newest_runs_suite(tmp_path: Path) -> None:
    store = saved(tmp_path)
    found = suite_runs(store, None, last=5)
    assert found.suite.shown == "label 'nightly'"
    assert [r.run_id[:8] for r in found.runs] == ["20261210", "20261211", "20261212", "20261213", "20261214"]


def test_runs_are_selected_by_label_or_fixture_file(tmp_path: Path) -> None:
    store = saved(tmp_path)
    assert [r.label for r in suite_runs(store, "pr").runs] == ["pr", "pr"]
    by_file = suite_runs(store, "nightly.md", last=100).runs  # every run that ran the file, whatever its label
    assert len(by_file) == 14 + 3
    with pytest.raises(RunFileError, match="no saved run of this suite"):
        suite_runs(store, "weekly")


def test_the_previous_run_is_the_newest_earlier_run_of_the_same_suite(tmp_path: Path) -> None:
    store = saved(tmp_path)
    nights = history()
    previous = previous_run(store, nights[7])
    assert previous is not None and previous.run_id == nights[6].run_id  # not the 'pr' or unlabelled ones between
    assert previous_run(store, nights[0]) is None


def test_an_unreadable_or_incomplete_run_among_the_selected_ones_is_named(tmp_path: Path) -> None:
    store = saved(tmp_path)
    broken = store.run_file("20261212T030000.000000Z-abc1234-main")
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    store.run_dir("20261213T030000.000000Z-abc1234-main").mkdir()
    found = suite_runs(store, "nightly", last=3)
    assert len(found.runs) == 3
    assert found.notes == (
        "20261212T030000.000000Z-abc1234-main: unreadable (cannot read: Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1))",
        "20261213T030000.000000Z-abc1234-main: incomplete (no run.json)",
    )
