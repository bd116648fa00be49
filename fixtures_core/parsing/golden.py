"""Golden files: a ``Stdout`` or ``Stderr`` value ``@path`` is compared with that file, as in Gavel.

``@dir/*.md`` (a glob) makes one row per matching file, named ``NAME [stem]``,
with the file's ``file``, ``filename``, ``dir``, ``absfile``, ``absdir``,
``basename`` and ``ext`` as properties. ``\\@text`` is the literal ``@text``.
A missing file, or a glob that matches none, is a configuration error of that row; a
golden file has the limits of a fixture file (``limits``: a regular file, at
most ``MAX_FIXTURE_BYTES``), so a FIFO or a device never hangs parsing.
"""

from __future__ import annotations

import glob
import os
from dataclasses import replace
from pathlib import Path

from fixtures_core.errors import FixtureError
from fixtures_core.limits import MAX_FIXTURE_BYTES, LimitExceeded, read_regular_file
from fixtures_core.parsing.row_errors import with_error
from fixtures_core.spec import RowSpec

_GLOB_CHARS = frozenset("*?[")


def resolve_golden(row: RowSpec, source_dir: str) -> list[RowSpec]:
    """``row`` with its ``@`` references read, expanded to one row per file for a glob.

    A golden file that cannot be read, or a glob that matches none, makes that row ERR (only it).
    """
    if row.error is not None:
        return [row]
    pattern = next((v for v in (row.expect.stdout, row.expect.stderr) if _is_glob(v)), None)
    if pattern is None:
        return [_read_or_broken(row, source_dir, None)]
    matches = _glob(pattern, source_dir)
    if not matches:
        error = FixtureError(row.file, row.line, f"glob {pattern!r} matched no files (under {source_dir})", "Stdout")
        return [with_error(row, error)]
    return [_read_or_broken(_one_file(row, match, source_dir), source_dir, match) for match in matches]


def _read_or_broken(row: RowSpec, source_dir: str, match: str | None) -> RowSpec:
    try:
        return _read_references(row, source_dir, match)
    except FixtureError as exc:
        return with_error(row, exc)


def _is_glob(value: str | None) -> bool:
    return value is not None and value.startswith("@") and any(ch in _GLOB_CHARS for ch in value)


def _glob(pattern: str, source_dir: str) -> list[str]:
    absolute = os.path.join(source_dir, pattern[1:])
    return sorted(p for p in glob.glob(absolute, recursive=True) if os.path.isfile(p))


def _one_file(row: RowSpec, match: str, source_dir: str) -> RowSpec:
    basename = os.path.basename(match)
    stem, ext = os.path.splitext(basename)
    values = {
        "file": os.path.relpath(match, source_dir),
        "filename": stem,
        "dir": os.path.relpath(os.path.dirname(match), source_dir),
        "absfile": match,
        "absdir": os.path.dirname(match),
        "basename": basename,
        "ext": ext,
    }
    return replace(row, name=f"{row.name} [{stem}]", properties={**row.properties, **values})


def _read_references(row: RowSpec, source_dir: str, match: str | None) -> RowSpec:
    expect = row.expect
    for stream, field in (("stdout", "Stdout"), ("stderr", "Stderr")):
        value = getattr(expect, stream)
        if value is None:
            continue
        if value.startswith("\\@"):
            expect = replace(expect, **{stream: value[1:]})
        elif value.startswith("@"):
            target = match if match is not None and _is_glob(value) else os.path.join(source_dir, value[1:])
            changes = {stream: _read(target, value, row, field), f"{stream}_file": target}
            expect = replace(expect, **changes)  # type: ignore[arg-type]
    return replace(row, expect=expect)


def _read(target: str, value: str, row: RowSpec, field: str) -> str:
    try:
        return read_regular_file(Path(target), MAX_FIXTURE_BYTES, "golden file").decode("utf-8")
    except FileNotFoundError:
        raise FixtureError(row.file, row.line, f"golden file {value!r} not found ({target})", field) from None
    except LimitExceeded as exc:
        raise FixtureError(row.file, row.line, f"golden file {value!r}: {exc}", field) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FixtureError(row.file, row.line, f"cannot read golden file {value!r}: {exc}", field) from None
