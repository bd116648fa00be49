"""Turn command-line paths into the matrix of rows a run executes."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from fixtures_core.errors import FixtureError, UsageError
from fixtures_core.parsing.devlyn import find_bench
from fixtures_core.parsing.parser import read_file
from fixtures_core.parsing.sampling import with_sampling
from fixtures_core.spec import Matrix, RowSpec, Sampling

GAVEL_SUFFIX = ".fixture.md"


def fixture_paths(paths: Sequence[str]) -> list[Path]:
    """Fixture files named directly, or the fixture files below a named folder (sorted); a folder that is
    a devlyn benchmark (``fixtures/test-repo`` and ``fixtures/F*/``) is read as one suite.

    Below a folder, the fixture files are its ``*.fixture.md`` files when it has any (Gavel's walk:
    ``**/*.fixture.md``, so a README or an agent's ``SKILL.md`` beside them never runs), else every
    ``*.md``. Hidden folders below a named folder (``.git``, ``.venv``, ``.assay``, ``.agents``) are not
    searched, and a file reached twice (named and inside a named folder) is read once.
    """
    found: list[Path] = []
    for text in paths:
        path = Path(text)
        if path.is_dir() and find_bench(path) is not None:
            found.append(path)  # a devlyn benchmark: its fixture folders, not its Markdown, are the suite
        elif path.is_dir():
            found.extend(_walk(path))
        elif path.exists():
            found.append(path)
        else:
            raise FixtureError(text, None, "no such fixture file or folder")
    if not found:
        raise UsageError(f"no fixture files found in {', '.join(paths)}")
    unique: dict[Path, Path] = {}
    for path in found:
        try:
            unique.setdefault(path.resolve(), path)
        except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError on a loop, later ones OSError
            raise FixtureError(str(path), None, "a symlink loop (the link leads back to itself): remove it") from None
    return list(unique.values())


def _walk(folder: Path) -> list[Path]:
    """The fixture files below ``folder`` (``fixture_paths``), sorted."""
    markdown = sorted(
        p
        for p in folder.rglob("*.md")
        # not is_file(): a FIFO or device named *.md is reported by the reader, never skipped
        if not p.is_dir() and not any(part.startswith(".") for part in p.relative_to(folder).parts[:-1])
    )
    gavel = [p for p in markdown if p.name.endswith(GAVEL_SUFFIX)]
    return gavel or markdown


def load_matrix(paths: Sequence[str]) -> Matrix:
    """Parse every fixture file. An error stays where it belongs: a broken row, table or block makes its
    own row ERR, a broken file (its frontmatter, its bytes) its own rows, and every other row runs."""
    return Matrix(files=tuple(read_file(path) for path in fixture_paths(paths)))


def select(matrix: Matrix, name_globs: Sequence[str] = (), repeat: int | None = None) -> Matrix:
    """Keep rows whose name matches any of ``name_globs`` (all rows without one), and the
    baseline rows they compare with (a comparison must never be dropped by a filter);
    override every row's repeat (``RunOptions.check`` checks it)."""
    wanted = {r.name for r in matrix.rows if not name_globs or any(fnmatch.fnmatchcase(r.name, g) for g in name_globs)}
    wanted |= _baselines_of(matrix, wanted)
    files = []
    for fixture in matrix.files:
        rows = [r for r in fixture.rows if r.name in wanted]
        if repeat is not None:  # an adaptive row's repeat is its max
            rows = [with_sampling(replace(r, repeat=repeat, sampling=_at_most(r.sampling, repeat))) for r in rows]
        files.append(replace(fixture, rows=tuple(rows)))
    selected = Matrix(files=tuple(files))
    if not selected.rows:
        if name_globs:
            raise UsageError(f"--filter {', '.join(map(repr, name_globs))} matches no row")
        raise UsageError("the fixtures contain no rows")
    return selected


def samples_at_once(matrix: Matrix) -> Matrix:
    """``--parallel-samples``: the samples of every row that does not say ``serial`` may run at once
    (a row that says ``serial: true`` keeps its order: its author knows it shares state)."""
    return Matrix(
        files=tuple(
            replace(f, rows=tuple(replace(r, serial=False) if r.serial is None else r for r in f.rows))
            for f in matrix.files
        )
    )


def _at_most(sampling: Sampling | None, repeat: int) -> Sampling | None:
    return sampling if sampling is None or not sampling.adaptive else replace(sampling, max=repeat)


def adaptive_rows(matrix: Matrix) -> Matrix:
    """``--adaptive``: every row that does not say ``sampling`` and takes two samples or more samples
    adaptively, at most its ``repeat`` (a row that says ``sampling: fixed`` keeps its count)."""

    def adaptive(row: RowSpec) -> RowSpec:
        if row.sampling is not None or row.repeat < 2 or row.error is not None:
            return row
        return with_sampling(replace(row, sampling=Sampling(max=row.repeat)))

    return Matrix(files=tuple(replace(f, rows=tuple(adaptive(r) for r in f.rows)) for f in matrix.files))


def budgeted_rows(matrix: Matrix) -> Matrix:
    """``--sample-budget``: every adaptive row shares the run's sample budget."""

    def budgeted(row: RowSpec) -> RowSpec:
        if not row.adaptive or row.budgeted or row.sampling is None:
            return row
        return replace(row, sampling=replace(row.sampling, budget=True))

    return Matrix(files=tuple(replace(f, rows=tuple(budgeted(r) for r in f.rows)) for f in matrix.files))


def _baselines_of(matrix: Matrix, names: set[str]) -> set[str]:
    """Every row name that the named rows compare with, directly or through other baseline rows."""
    found: set[str] = set()
    frontier = set(names)
    while frontier:
        needed = set().union(*(r.compared_baselines() for r in matrix.rows if r.name in frontier))
        frontier = needed - names - found
        found |= frontier
    return found
