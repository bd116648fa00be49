"""Check a whole matrix before anything runs; every problem names file and line."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from fixtures_core.cel import compile_expression
from fixtures_core.errors import CelError, FixtureError
from fixtures_core.parsing.builtins import UNSUPPORTED_NAMES, cel_names, template_names
from fixtures_core.parsing.encodable import text_errors
from fixtures_core.parsing.suite import validate_suites, workspace_names
from fixtures_core.parsing.template import TemplateError, check_names
from fixtures_core.spec import Matrix, MetricSpec, RowSpec


def validate_matrix(matrix: Matrix) -> list[FixtureError]:
    """Every configuration error of the matrix, in file order (empty when it can run)."""
    errors: list[FixtureError] = []
    for fixture in matrix.files:
        errors.extend(_duplicate_names(fixture.rows))
        errors.extend(_budget_errors(fixture.rows))
    rows_by_name: dict[str, list[RowSpec]] = defaultdict(list)
    for row in matrix.rows:
        rows_by_name[row.name].append(row)
    for row in matrix.rows:
        unencodable = text_errors(row)
        errors.extend(unencodable)
        if not unencodable:  # CEL and templates would stumble over the same text
            errors.extend(_row_errors(row))
        errors.extend(_baseline_errors(row, rows_by_name))
    errors.extend(validate_suites(matrix))
    return _unique(errors)


def _duplicate_names(rows: Iterable[RowSpec]) -> list[FixtureError]:
    seen: dict[str, int] = {}
    errors = []
    for row in rows:
        if row.name in seen:
            errors.append(
                FixtureError(
                    row.file, row.line, f"duplicate row name '{row.name}' (first at line {seen[row.name]})", "Name"
                )
            )
        else:
            seen[row.name] = row.line
    return errors


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
