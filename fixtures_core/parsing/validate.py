"""Check a whole matrix before anything runs; every problem names file and line."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from fixtures_core.cel import compile_expression
from fixtures_core.errors import CelError, FixtureError
from fixtures_core.parsing.builtins import UNSUPPORTED_NAMES, cel_names, template_names
from fixtures_core.parsing.encodable import text_errors
from fixtures_core.parsing.matrix import load_matrix
from fixtures_core.parsing.row_errors import with_error
from fixtures_core.parsing.suite import suite_row_errors, workspace_names
from fixtures_core.parsing.template import TemplateError, check_names
from fixtures_core.spec import Matrix, MetricSpec, RowSpec


def validate_matrix(matrix: Matrix) -> list[FixtureError]:
    """Every configuration error the checks find in the parsed matrix, in file order (empty when it can
    run); the errors broken rows carry from parsing are on the rows (``RowSpec.error``)."""
    matrix, found = _row_findings(matrix)
    file_errors = [e for fixture in matrix.files for e in _file_errors(fixture.rows)]
    return _unique([*file_errors, *(e for errors in found for row_errors in errors for e in row_errors)])


def isolate_row_errors(matrix: Matrix) -> Matrix:
    """The matrix with each configuration error where it belongs: a row's on that row (it is ERR without
    running), one of a whole file (found in its frontmatter: a metric or property every row takes from it;
    a budget of the file) on every row of that file, which keeps it among its ``errors``; every other
    row, and every other file, runs."""
    matrix, found = _row_findings(matrix)
    files = []
    for fixture, per_row in zip(matrix.files, found, strict=True):
        shared = [*_file_errors(fixture.rows)]
        shared += [
            e
            for errors in per_row
            for e in errors
            if e.path == fixture.path and e.line is not None and e.line <= fixture.frontmatter_end
        ]
        shared = _unique(shared)
        rows = []
        for row, errors in zip(fixture.rows, per_row, strict=True):
            own = [e for e in errors if e not in shared]
            first = shared[0] if shared else own[0] if own else None
            rows.append(with_error(row, first) if first is not None else row)
        told = tuple(dict.fromkeys([*fixture.errors, *(str(e) for e in shared)]))
        files.append(replace(fixture, rows=tuple(rows), errors=told))
    return Matrix(files=tuple(files))


def _row_findings(matrix: Matrix) -> tuple[Matrix, list[list[list[FixtureError]]]]:
    """The matrix with duplicate names renamed, and each row's errors, by file and row."""
    matrix, duplicates = _renamed_duplicates(matrix)
    by_name = _by_name(matrix)
    found = [
        [[*duplicates.get((row.file, row.line, row.name), []), *_errors_of(row, by_name)] for row in fixture.rows]
        for fixture in matrix.files
    ]
    return matrix, found


def validate_paths(paths: Sequence[str]) -> tuple[Matrix, list[str]]:
    """Every configuration error of the fixtures at ``paths``, not only the first (``assay validate``): per
    file, in file order, each error of the whole file (every one of its frontmatter), then each broken
    row's; and the matrix."""
    matrix = isolate_row_errors(load_matrix(paths))
    errors = [
        error
        for fixture in matrix.files
        for error in [*fixture.errors, *(row.error for row in fixture.rows if row.error is not None)]
    ]
    return matrix, list(dict.fromkeys(errors))


def _file_errors(rows: Sequence[RowSpec]) -> list[FixtureError]:
    return _budget_errors(rows)


def _by_name(matrix: Matrix) -> dict[str, list[RowSpec]]:
    rows_by_name: dict[str, list[RowSpec]] = defaultdict(list)
    for row in matrix.rows:
        rows_by_name[row.name].append(row)
    return rows_by_name


def _errors_of(row: RowSpec, rows_by_name: dict[str, list[RowSpec]]) -> list[FixtureError]:
    """The configuration errors of one row that parsing could not see (a broken row has its own)."""
    if row.error is not None:
        return []
    errors = text_errors(row)
    if not errors:  # CEL and templates would stumble over the same text
        errors = [*_row_errors(row), *suite_row_errors(row)]
    return [*errors, *_baseline_errors(row, rows_by_name)]


def _renamed_duplicates(matrix: Matrix) -> tuple[Matrix, dict[tuple[str, int, str], list[FixtureError]]]:
    """A second row of a file with a taken name is renamed ``NAME (line N)`` and carries the error."""
    errors: dict[tuple[str, int, str], list[FixtureError]] = {}
    files = []
    for fixture in matrix.files:
        seen: dict[str, int] = {}
        rows = []
        for row in fixture.rows:
            if row.name in seen:
                message = f"duplicate row name '{row.name}' (first at line {seen[row.name]})"
                row = replace(row, name=f"{row.name} (line {row.line})")
                errors[(row.file, row.line, row.name)] = [FixtureError(row.file, row.line, message, "Name")]
            else:
                seen[row.name] = row.line
            rows.append(row)
        files.append(replace(fixture, rows=tuple(rows)))
    return Matrix(files=tuple(files)), errors


def _budget_errors(rows: Sequence[RowSpec]) -> list[FixtureError]:
    """A file's budget sums one of its metrics: a metric no row extracts would never stop anything."""
    budget = next((row.budget for row in rows if row.budget is not None), None)
    if budget is None:
        return []
    names = sorted({m.name for row in rows for m in row.metrics})
    if budget.metric in names:
        return []
    path, _, line = budget.where.rpartition(":")
    known = ", ".join(names) or "none"
    message = f"budget sums metric '{budget.metric}', which no row of this file extracts (metrics: {known})"
    return [FixtureError(path, int(line), message, "budget")]


def _row_errors(row: RowSpec) -> list[FixtureError]:
    errors = []
    known = [*template_names(row), *workspace_names(row)]
    templated = [("command", arg) for arg in row.argv] + [(f"env.{k}", v) for k, v in row.env.items()]
    if row.cwd:
        templated.append(("cwd", row.cwd))
    for field, text in templated:
        try:
            check_names(text, known, UNSUPPORTED_NAMES)
        except TemplateError as exc:
            errors.append(FixtureError(row.file, row.line, f"row '{row.name}': {exc}", field))
    expressions = [("CEL", row.expect.cel, row.expect.cel_line), ("indeterminate", row.indeterminate, row.line)]
    expressions += [(f"metrics[{m.name}].extract", m.extract, m.line) for m in row.metrics]
    for field, expression, line in expressions:
        if expression:
            try:
                compile_expression(expression, cel_names(row))
            except CelError as exc:
                errors.append(FixtureError(row.file, line, f"{exc.message} in {expression!r}", field))
    names: set[str] = set()
    for metric in row.metrics:
        if metric.name in names:
            errors.append(FixtureError(metric.file, metric.line, f"duplicate metric name '{metric.name}'", "metrics"))
        names.add(metric.name)
    return errors


def _baseline_errors(row: RowSpec, rows_by_name: dict[str, list[RowSpec]]) -> list[FixtureError]:
    errors = []
    for metric in row.metrics:
        baseline = metric.baseline_for(row.name)
        if baseline is None:
            continue
        field = f"metrics[{metric.name}].baseline"
        where = f"row '{row.name}' (line {row.line})"
        candidates = rows_by_name.get(baseline, [])
        if not candidates:
            known = ", ".join(sorted(rows_by_name)) or "none"
            errors.append(
                FixtureError(
                    metric.file,
                    metric.line,
                    f"{where}: baseline row '{metric.baseline}' not found (rows: {known})",
                    field,
                )
            )
            continue
        if len(candidates) > 1:
            places = ", ".join(f"{c.file}:{c.line}" for c in candidates)
            errors.append(
                FixtureError(
                    metric.file,
                    metric.line,
                    f"{where}: baseline row '{metric.baseline}' is ambiguous ({places})",
                    field,
                )
            )
            continue
        mismatch = _spec_mismatch(metric, candidates[0])
        if mismatch:
            errors.append(FixtureError(metric.file, metric.line, f"{where}: {mismatch}", field))
    return errors


def _spec_mismatch(metric: MetricSpec, baseline_row: RowSpec) -> str | None:
    other = next((m for m in baseline_row.metrics if m.name == metric.name), None)
    if other is None:
        return f"baseline row '{baseline_row.name}' has no metric '{metric.name}'"
    for attribute in ("unit", "aggregate", "direction"):
        mine, theirs = getattr(metric, attribute), getattr(other, attribute)
        if mine != theirs:
            return (
                f"metric '{metric.name}' has {attribute} '{mine}' but baseline row "
                f"'{baseline_row.name}' has '{theirs}': both sides must match"
            )
    return None


def _unique(errors: list[FixtureError]) -> list[FixtureError]:
    seen: set[str] = set()
    unique = []
    for error in errors:
        if str(error) not in seen:
            seen.add(str(error))
            unique.append(error)
    return unique
