"""Turn command-line paths into the matrix of rows a run executes."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from fixtures_core.errors import FixtureError, UsageError
from fixtures_core.parser import parse_file
from fixtures_core.spec import Matrix


def fixture_paths(paths: Sequence[str]) -> list[Path]:
    """Fixture files named directly, or every ``*.md`` below a named folder (sorted)."""
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.md") if p.is_file()))
        elif path.exists():
            found.append(path)
        else:
            raise FixtureError(text, 0, "no such fixture file or folder")
    if not found:
        raise UsageError(f"no fixture files found in {', '.join(paths)}")
    return found


def load_matrix(paths: Sequence[str]) -> Matrix:
    """Parse every fixture file (raises FixtureError on the first malformed file)."""
    return Matrix(files=tuple(parse_file(p) for p in fixture_paths(paths)))


def select(matrix: Matrix, name_glob: str | None = None, repeat: int | None = None) -> Matrix:
    """Keep rows whose name matches ``name_glob``; override every row's repeat."""
    files = []
    for fixture in matrix.files:
        rows = [r for r in fixture.rows if name_glob is None or fnmatch.fnmatchcase(r.name, name_glob)]
        if repeat is not None:
            rows = [replace(r, repeat=repeat) for r in rows]
        files.append(replace(fixture, rows=tuple(rows)))
    selected = Matrix(files=tuple(files))
    if not selected.rows:
        raise UsageError(f"--filter {name_glob!r} matches no row" if name_glob else "the fixtures contain no rows")
    return selected
