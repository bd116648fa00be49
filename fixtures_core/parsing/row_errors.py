"""Row-scoped configuration errors: a broken row, table, block or golden file makes exactly its own
rows ERR, and every other row of the file still runs (Gavel runs them too).

A broken row keeps its name and line (so reports, filters and baselines find it) and carries its
one-line error; it runs nothing. Errors of what every row depends on (the frontmatter) still stop
the whole file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from fixtures_core.errors import FixtureError
from fixtures_core.spec import Expectation, PropertyValue, RowSpec


def broken_row(error: FixtureError, name: str, line: int, properties: Mapping[str, PropertyValue]) -> RowSpec:
    """A row that is ERR with ``error`` without running anything."""
    return RowSpec(
        file=error.path,
        line=line,
        name=name or f"line {line}",
        argv=(),
        expect=Expectation(),
        properties=dict(properties),
        error=str(error),
    )


def row_or_broken(
    build: Callable[[], RowSpec], name: str, line: int, properties: Mapping[str, PropertyValue]
) -> RowSpec:
    """The row ``build`` makes, or a broken row named ``name`` when it raises a FixtureError."""
    try:
        return build()
    except FixtureError as exc:
        return broken_row(exc, name, line, properties)


def with_error(row: RowSpec, error: FixtureError) -> RowSpec:
    """``row`` broken by ``error`` (one found after parsing: a template, a CEL expression, a baseline)."""
    return row if row.error is not None else replace(row, error=str(error))
