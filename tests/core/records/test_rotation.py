"""Retiring a devlyn fixture (seed 04's rotation policy): the record, the move, and replay by id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.parsing.devlyn import find_bench
from fixtures_core.parsing.matrix import load_matrix
from fixtures_core.records.rotation import retire

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "devlyn"


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "bench")
    return tmp_path / "bench"


def cases(paths: list[str]) -> list[str]:
    return list(dict.fromkeys(row.ab.case for row in load_matrix(paths).rows if row.ab is not None))


def test_retiring_moves_the_fixture_and_writes_seed_04s_rotation_record(bench: Path) -> None:
    found = find_bench(bench)
    assert found is not None

    done = retire(found, "F1", "both arms > 95 on two shipped runs", replacement="F2", rationale="harder")

    assert done.moved_to == bench / "fixtures" / "retired" / "F1-loud-flag" and done.moved_to.is_dir()
    assert not (bench / "fixtures" / "F1-loud-flag").exists()
    assert done.record.parent == bench / "history" / "runs" and done.record.name.endswith("-fixture-rotation.json")
    record = json.loads(done.record.read_text())
    assert {k: v for k, v in record.items() if k != "retired_at"} == {
        "retired": "F1-loud-flag",
        "retired_reason": "both arms > 95 on two shipped runs",
        "replacement": "F2-count-words",
        "replacement_rationale": "harder",
    }
    assert record["retired_at"].endswith("Z")


def test_a_retired_fixture_runs_only_when_its_id_is_given(bench: Path) -> None:
    found = find_bench(bench)
    assert found is not None
    retire(found, "F1", "saturated")

    assert cases([str(bench)]) == ["F2-count-words", "F8-known-limit-docstring", "F9-e2e-version"]
    assert cases([str(bench), "F1"]) == ["F1-loud-flag"]  # replayed on demand
    assert sorted(cases([str(bench), "F1-loud-flag", "F2"])) == ["F1-loud-flag", "F2-count-words"]
    matrix = load_matrix([str(bench), "F1"])
    assert all(row.ab is not None and row.ab.retired for row in matrix.rows)


def test_an_id_names_the_fixture_in_use_before_a_retired_one(bench: Path) -> None:
    shutil.copytree(bench / "fixtures" / "F1-loud-flag", bench / "fixtures" / "retired" / "F1-old-flag")
    assert cases([str(bench), "F1"]) == ["F1-loud-flag"]
    assert cases([str(bench), "F1-old-flag"]) == ["F1-old-flag"]


def test_retiring_what_is_not_a_fixture_says_so(bench: Path) -> None:
    found = find_bench(bench)
    assert found is not None
    with pytest.raises(UsageError, match=r"^retire F7: names no fixture of .* \(its fixtures: F1-loud-flag, "):
        retire(found, "F7", "why")
    with pytest.raises(UsageError, match=r"^--replacement F1-loud-flag: that is the fixture being retired$"):
        retire(found, "F1", "why", replacement="F1-loud-flag")
    assert (bench / "fixtures" / "F1-loud-flag").is_dir() and not (bench / "history").exists()
