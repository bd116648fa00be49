"""Fixture text written to a real file and read back with ``parse_file``, for the parsing tests.

Line numbers in the tests' assertions are 1-based lines of the written file.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.parser import parse_file
from fixtures_core.spec import RowSpec


def write(tmp_path: Path, text: str, name: str = "fixture.md") -> Path:
    """Write dedented fixture text (first line is line 1) and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def parse(tmp_path: Path, text: str) -> tuple[RowSpec, ...]:
    """The rows of ``text`` written to ``tmp_path/fixture.md``."""
    return parse_file(write(tmp_path, text)).rows


def parse_error(tmp_path: Path, text: str) -> tuple[str, FixtureError]:
    """The display path of the written file and the error parsing it raised."""
    path = write(tmp_path, text)
    with pytest.raises(FixtureError) as caught:
        parse_file(path)
    return path.as_posix(), caught.value


def by_name(rows: tuple[RowSpec, ...]) -> dict[str, RowSpec]:
    """Rows keyed by name."""
    return {row.name: row for row in rows}


def row_error(tmp_path: Path, text: str) -> tuple[str, str]:
    """The display path of the written file and the one error its broken rows carry (the file parses:
    a broken row, table, block or golden file makes only its own rows ERR)."""
    path = write(tmp_path, text)
    errors = {row.error for row in parse_file(path).rows if row.error is not None}
    assert len(errors) == 1, errors
    return path.as_posix(), errors.pop()
