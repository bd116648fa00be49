"""Turn command-line paths into the matrix of rows a run executes."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from fixtures_core.errors import FixtureError, UsageError
from fixtures_core.parsing.devlyn import find_bench
from fixtures_core.parsing.parser import read_file
from fixtures_core.parsing.sampling import with_sampling
from fixtures_core.spec import Matrix, RowSpec, Sampling

GAVEL_SUFFIX = ".fixture.md"
# What devlyn's run-suite.sh takes as a fixture argument (``[FS][0-9]*``): a fixture folder's name or its
# short id, the part before the slug.
FIXTURE_ID = re.compile(r"[FS]\d[\w.-]*")
SHORT_ID = re.compile(r"[FS]\d+[A-Za-z]?")


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
    own row ERR, a broken file (its frontmatter, its bytes) its own rows, and every other row runs.

    A path that does not exist and reads as a devlyn fixture id (``F2``, ``F2-goodbye-command``: what
    devlyn's ``run-suite.sh F2 F5`` takes) names a fixture of the suites given beside it: only those run.
    A retired fixture (``fixtures/retired/``) runs only when an id names it.
    """
    files = [path for path in paths if not _fixture_id(path)]
    ids = [path for path in paths if _fixture_id(path)]
    if ids and not files:
        raise UsageError(
            f"{ids[0]}: a fixture id names a fixture of a benchmark: give its folder too (FOLDER {ids[0]})"
        )
    matrix = Matrix(files=tuple(read_file(path) for path in fixture_paths(files)))
    return only_fixtures(matrix, ids) if ids else without_retired(matrix)


def without_retired(matrix: Matrix) -> Matrix:
    """The matrix without the rows of retired devlyn fixtures (they run only when an id names them)."""
    return Matrix(
        files=tuple(replace(f, rows=tuple(r for r in f.rows if r.ab is None or not r.ab.retired)) for f in matrix.files)
    )


def _fixture_id(text: str) -> bool:
    return FIXTURE_ID.fullmatch(text) is not None and not os.path.lexists(text)


def names_fixture(case: str, name: str) -> bool:
    """Whether ``name`` names the case ``case``: its whole name, or a devlyn fixture's short id
    (``F2`` for ``F2-goodbye-command``)."""
    return case == name or (SHORT_ID.fullmatch(name) is not None and case.startswith(name + "-"))


def only_fixtures(matrix: Matrix, ids: Sequence[str]) -> Matrix:
    """The rows of the suite cases ``ids`` name (every other row left out): an id names the fixtures it
    names that are not retired, else the retired ones it names (seed 04 keeps them for replay). An id
    that names no case of the given suites is a UsageError naming the cases there are."""
    active = list(dict.fromkeys(r.ab.case for r in matrix.rows if r.ab is not None and not r.ab.retired))
    retired = list(dict.fromkeys(r.ab.case for r in matrix.rows if r.ab is not None and r.ab.retired))
    wanted: set[str] = set()
    for name in ids:
        named = [case for case in active if names_fixture(case, name)]
        named = named or [case for case in retired if names_fixture(case, name)]
        if not named:
            known = ", ".join(active[:12]) + (f" and {len(active) - 12} more" if len(active) > 12 else "")
            known += f"; retired: {', '.join(retired)}" if retired else ""
            given = ", ".join(f.path for f in matrix.files)
            raise UsageError(f"{name}: no such fixture in {given} (its fixtures: {known or 'none'})")
        wanted.update(named)
    files = []
    for fixture in matrix.files:
        rows = [r for r in fixture.rows if r.ab is not None and r.ab.case in wanted]
        files.append(replace(fixture, rows=tuple(rows)))
    return Matrix(files=tuple(files))


def select(matrix: Matrix, name_globs: Sequence[str] = (), repeat: int | None = None) -> Matrix:
    """Keep rows whose name matches any of ``name_globs`` (all rows without one), and the
    baseline rows they compare with (a comparison must never be dropped by a filter);
    override every row's repeat (``RunOptions.check`` checks it)."""
    wanted = {r.name for r in matrix.rows if not name_globs or any(_matches(r, g) for g in name_globs)}
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


def _matches(row: RowSpec, glob: str) -> bool:
    """A row matches a ``--filter`` glob by its name, or by its suite case (a fixture id: ``F2``)."""
    if fnmatch.fnmatchcase(row.name, glob):
        return True
    return row.ab is not None and (fnmatch.fnmatchcase(row.ab.case, glob) or names_fixture(row.ab.case, glob))


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
