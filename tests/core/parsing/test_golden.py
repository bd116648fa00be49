"""``@file`` golden files and ``@glob`` row expansion (``fixtures_core.parsing.golden``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixtures_core.parsing.parser import parse_file


def write(tmp_path: Path, stdout_cell: str) -> Path:
    path = tmp_path / "f.md"
    path.write_text(f"| Name | Command | Stdout |\n|---|---|---|\n| r | echo | {stdout_cell} |\n", encoding="utf-8")
    return path


def test_at_file_reads_the_golden_file_relative_to_the_fixture(tmp_path: Path) -> None:
    (tmp_path / "want.txt").write_text("hi\n", encoding="utf-8")
    (row,) = parse_file(write(tmp_path, "@want.txt")).rows
    assert (row.expect.stdout, row.expect.stdout_file) == ("hi\n", str(tmp_path / "want.txt"))


def test_escaped_at_is_literal(tmp_path: Path) -> None:
    (row,) = parse_file(write(tmp_path, "\\@handle")).rows
    assert (row.expect.stdout, row.expect.stdout_file) == ("@handle", None)


def test_missing_golden_file_names_file_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "@nope.txt")
    (row,) = parse_file(path).rows
    assert row.error == f"{path.as_posix()}:3: Stdout: golden file '@nope.txt' not found ({tmp_path / 'nope.txt'})"


def test_a_missing_golden_file_breaks_only_its_own_row(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("hi\n", encoding="utf-8")
    text = "| Name | Command | Stdout |\n|---|---|---|\n| a | echo hi | @nope.txt |\n| b | echo hi | @here.txt |\n"
    path = tmp_path / "two.md"
    path.write_text(text, encoding="utf-8")
    a, b = parse_file(path).rows
    assert a.error is not None and "golden file '@nope.txt' not found" in a.error
    assert b.error is None and b.expect.stdout == "hi\n"


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_golden_file_that_is_no_regular_file_is_refused_without_reading(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "want.txt"
    if kind == "fifo":
        os.mkfifo(target)  # reading it would block forever
    path = write(tmp_path, "@want.txt" if kind == "fifo" else "@/dev/zero")
    (row,) = parse_file(path).rows
    assert row.error is not None and row.error.startswith(f"{path.as_posix()}:3: Stdout: golden file ")
    assert ("a FIFO" if kind == "fifo" else "a character device") in row.error


def test_glob_makes_one_row_per_file_with_file_properties(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    for stem in ("b", "a"):
        (tmp_path / "out" / f"{stem}.md").write_text(stem, encoding="utf-8")
    rows = parse_file(write(tmp_path, "@out/*.md")).rows
    assert [(r.name, r.expect.stdout, r.properties["filename"], r.properties["file"]) for r in rows] == [
        ("r [a]", "a", "a", "out/a.md"),
        ("r [b]", "b", "b", "out/b.md"),
    ]
    assert rows[0].properties["ext"] == ".md"


def test_glob_without_matches_is_an_error(tmp_path: Path) -> None:
    (row,) = parse_file(write(tmp_path, "@none/*.txt")).rows
    assert row.error is not None and ":3: Stdout: glob '@none/*.txt' matched no files" in row.error
