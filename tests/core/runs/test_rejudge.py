"""Re-judging a stored A/B run reads the options the run recorded; a damaged one is an error, never dropped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.records.rundoc import load_run
from fixtures_core.records.store import Store
from fixtures_core.runs.options import RunOptions
from fixtures_core.runs.rejudge import rejudge
from tests.core.conftest import ExampleRun


def edited_run_file(example_run: ExampleRun, folder: Path, **options: object) -> Path:
    """A copy of the example run's run.json whose recorded options are changed as given."""
    document = json.loads(Store(example_run.state).run_file(example_run.run.run_id).read_text())
    document["options"].update(options)
    path = folder / "edited.json"
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("paths", "examples/ab/suite.md", "a list of strings"),
        ("paths", ["examples/ab/suite.md", 3], "a list of strings"),
        ("filter", 3, "a string or a list of strings"),
        ("filter", ["arm*", 3], "a string or a list of strings"),
        ("repeat", "3", "a whole number >= 1"),
        ("repeat", True, "a whole number >= 1"),
        ("repeat", 0, "a whole number >= 1"),
        ("k", 2.5, "a whole number >= 1"),
        ("group_by", "arm", "a list of strings"),
    ],
)
def test_a_malformed_recorded_option_names_the_run_file_and_the_option(
    example_run: ExampleRun, tmp_path: Path, option: str, value: object, expected: str
) -> None:
    path = edited_run_file(example_run, tmp_path, **{option: value})

    with pytest.raises(UsageError) as caught:
        rejudge(str(path), RunOptions(paths=(), out=str(tmp_path / "state")))

    assert str(caught.value) == (
        f"{path}: recorded option '{option}' must be {expected}, got {value!r}: the run file was edited or is damaged"
    )


def test_a_rejudged_run_points_at_the_evidence_it_was_judged_from(example_run: ExampleRun, tmp_path: Path) -> None:
    state = tmp_path / "state"
    shutil.copytree(example_run.state, state)  # the shared run is only read: re-judge a copy of its folder
    store, original = Store(state), example_run.run
    assert all(row.evidence for row in original.rows)

    first = rejudge(original.run_id, RunOptions(paths=(), out=str(state))).run
    again = rejudge(first.run_id, RunOptions(paths=(), out=str(state))).run  # a re-judged run re-judged

    for run in (first, again):
        folder = store.run_dir(run.run_id)
        assert not (folder / "evidence").exists(), "a re-judged run writes no evidence of its own"
        assert [row.evidence for row in run.rows] == [f"../{original.run_id}/{row.evidence}" for row in original.rows]
        for row in run.rows:
            assert (folder / str(row.evidence)).resolve() == (
                store.run_dir(original.run_id) / str(row.evidence)
            ).resolve()
            assert (folder / str(row.evidence)).is_file()
        assert load_run(store.run_file(run.run_id)).rows == run.rows
