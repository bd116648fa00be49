"""Fixture tables: every table with a ``Name`` column is a matrix, one row per table row.

Column titles are matched as Gavel matches them (case-insensitive, with its
aliases); any other column is a property under its lower-cased title.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace
from functools import partial

from markdown_it.token import Token

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.config import Where, read_exit_code, read_repeat, read_skip, read_timeout
from fixtures_core.parsing.row_errors import broken_row, row_or_broken
from fixtures_core.parsing.sampling import read_pass_rate, read_sampling
from fixtures_core.parsing.settings import Inherited
from fixtures_core.parsing.throughput import read_serial
from fixtures_core.spec import Expectation, FixtureWarning, PropertyValue, RowSpec

COLUMNS = {
    "name": "name", "test name": "name",
    "command": "exec", "cli": "exec", "exec": "exec",
    "args": "args", "cli args": "args", "arguments": "args",
    "cwd": "cwd", "working directory": "cwd", "dir": "cwd",
    "exit code": "exit_code", "exitcode": "exit_code", "expected exit code": "exit_code",
    "stdout": "stdout", "expected output": "stdout", "output": "stdout",
    "stderr": "stderr",
    "cel validation": "cel", "cel": "cel", "validation": "cel", "expr": "cel",
    "repeat": "repeat",
    "timeout": "timeout",
    "skip": "skip",
    "os": "os",
    "arch": "arch",
    "indeterminate": "indeterminate",
    "serial": "serial",
    "pass rate": "pass_rate",
    "sampling": "sampling",
}  # fmt: skip
# Columns Gavel reads into fields its command fixtures never check (or into features assay lacks).
IGNORED_COLUMNS = {
    **dict.fromkeys(
        ["expected count", "count", "expected format", "format", "expected error", "error", "expected matches",
         "matches", "expected results", "results", "expected files", "files", "template output"],
        "Gavel reads it but never checks it for commands; assay ignores it too",
    ),
    "query": "Gavel's AST queries are not supported; the row runs as a command",
    "terminal": "no pseudo-terminal is allocated; the command runs with pipes (stdout and stderr apart)",
    "term": "no pseudo-terminal is allocated; the command runs with pipes (stdout and stderr apart)",
}  # fmt: skip
SHELL_CHARS = frozenset(" \t|&;<>()$`*?[]{}~'\"\n")
_TEMPLATE_ACTION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_CELL_PIPE = re.compile(r"(?<!\\)\|")  # a pipe not preceded by a backslash separates cells, as markdown-it splits
_QUOTE_MARKERS = re.compile(r"^\s*(?:>\s?)*")
_DELIMITER_ROW = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$")


def column_key(title: str) -> str:
    """What a column sets: a COLUMNS value, ``ignored``, or '' (a property)."""
    normal = " ".join(title.lower().split())
    return COLUMNS.get(normal) or ("ignored" if normal in IGNORED_COLUMNS else "")


def table_rows(
    tokens: list[Token], lines: list[str], offset: int, settings: Inherited, path: str
) -> tuple[list[RowSpec], list[FixtureWarning]]:
    """The rows of one table (none for a table without a Name column) and what assay ignores in it."""
    header_line, header = _first_row(tokens)
    keys = [column_key(h) for h in header]
    where = Where(path, offset + header_line + 1)
    if "name" not in keys:
        shown = ", ".join(h for h in header if h) or "none"
        note = f"table has no Name column (columns: {shown}): not a fixture table, no row runs"
        return [], [FixtureWarning(path, where.line, note)]
    duplicate = _duplicate_columns(header, keys, where)
    warnings = [
        FixtureWarning(path, where.line, f"column '{h}' is ignored: {IGNORED_COLUMNS[' '.join(h.lower().split())]}")
        for h, k in zip(header, keys, strict=True)
        if k == "ignored"
    ]
    header_cells = len(split_raw_row(lines[offset + header_line]))
    by_title = dict(zip(header, keys, strict=True))
    rows = []
    for line0, cells in _rows(tokens, "tbody_open", "tbody_close"):
        line = offset + line0 + 1
        raw = lines[offset + line0]
        raw_count = len(split_raw_row(raw))
        if raw_count > header_cells or "|" not in raw:
            warnings.append(FixtureWarning(path, line, _cell_count_note(raw, raw_count, header_cells)))
        named = dict(zip(header, cells, strict=True))  # a short row's missing cells are empty, as in Gavel
        name = next((v for h, v in named.items() if by_title[h] == "name" and v not in ("", "-")), "")
        properties = _row_properties(named, by_title, settings)
        if duplicate is not None:
            rows.append(broken_row(duplicate, name, line, properties))
            continue
        rows.append(row_or_broken(partial(_table_row, named, by_title, line, settings, path), name, line, properties))
    return rows, warnings


def _cell_count_note(raw: str, count: int, header_cells: int) -> str:
    """markdown-it, like Gavel's goldmark, drops a row's extra cells and leaves its missing ones empty."""
    what = "the extra cells are ignored" if count > header_cells else "its missing cells are empty"
    hint = "" if "|" in raw else " (a table ends at a blank line: add one if this line is not a row)"
    return f"row has {count} cells but the header has {header_cells}: {what}, as in Gavel{hint}"


def _duplicate_columns(header: list[str], keys: list[str], where: Where) -> FixtureError | None:
    """Two columns that set the same thing would silently hide one of them: every row of the table is ERR."""
    seen: dict[str, str] = {}
    for title, key in zip(header, keys, strict=True):
        identity = key if key not in ("", "ignored") else f"{key or 'property'} {title.strip().lower()}"
        if identity in seen:
            return where.error(title, f"columns '{seen[identity]}' and '{title}' set the same value: keep one")
        seen[identity] = title
    return None


def _row_properties(cells: dict[str, str], keys: dict[str, str], settings: Inherited) -> dict[str, PropertyValue]:
    """The file's properties, then the row's other columns under their lower-cased headers (as Gavel
    exposes them); an empty cell keeps an inherited value."""
    properties: dict[str, PropertyValue] = dict(settings.properties)
    for header, value in cells.items():
        key = header.strip().lower()
        if not keys[header] and (value != "" or key not in properties):
            properties[key] = value
    return properties


def _table_row(cells: dict[str, str], keys: dict[str, str], line: int, settings: Inherited, path: str) -> RowSpec:
    where = Where(path, line)
    known = {keys[h]: v for h, v in cells.items() if keys[h] and v not in ("", "-")}
    name = known.get("name", "")
    if not name:
        raise where.error("Name", "a fixture table row needs a Name")
    properties = _row_properties(cells, keys, settings)
    row_settings = settings
    if "skip" in known:
        skip, skip_command = read_skip(known["skip"])
        row_settings = replace(row_settings, skip=skip, skip_command=skip_command)
    if "os" in known:
        row_settings = replace(row_settings, os=(known["os"],))
    if "arch" in known:
        row_settings = replace(row_settings, arch=(known["arch"],))
    own_args = tuple(split_args(known["args"], where)) if "args" in known else None
    return RowSpec(
        file=path,
        line=line,
        name=name,
        argv=command_argv(known.get("exec"), settings.exec, own_args, settings.args),
        expect=Expectation(
            exit_code=read_exit_code(known["exit_code"], where, "Exit Code") if "exit_code" in known else 0,
            stdout=known.get("stdout"),
            stderr=known.get("stderr"),
            cel=known.get("cel"),
            cel_line=line,
        ),
        properties=properties,
        env=settings.env,
        cwd=known.get("cwd", settings.cwd),
        timeout_s=read_timeout(known["timeout"], where, "Timeout") if "timeout" in known else settings.timeout_s,
        repeat=read_repeat(known["repeat"], where, "Repeat") if "repeat" in known else settings.repeat,
        metrics=settings.metrics,
        skip=row_settings.platform_skip() or row_settings.skip,
        skip_command=row_settings.skip_command,
        indeterminate=known.get("indeterminate", settings.indeterminate),
        serial=read_serial(known["serial"], where, "Serial") if "serial" in known else settings.serial,
        pass_rate=read_pass_rate(known["pass_rate"], where, "Pass Rate")
        if "pass_rate" in known
        else settings.pass_rate,
        sampling=read_sampling(known["sampling"], where, "Sampling") if "sampling" in known else settings.sampling,
    )


def command_argv(
    cell: str | None, default: str | None, own_args: tuple[str, ...] | None, default_args: tuple[str, ...]
) -> tuple[str, ...]:
    """The row's command: its Command cell, else the frontmatter exec, else ``bash`` (Gavel's default exec).

    A command that is a command line (spaces, shell operators) runs through
    bash, as in Gavel; its arguments reach that shell as positional parameters
    (``"$@"``), each rendered per sample as one argv item, so a property holding
    quotes or shell syntax stays one literal argument and is never re-parsed.
    """
    args = own_args if own_args is not None else default_args
    return shell_wrapped(cell or default or "bash", args)


def shell_wrapped(program: str, args: tuple[str, ...]) -> tuple[str, ...]:
    """``program`` with ``args``; through ``bash -c`` when ``program`` is a command line."""
    if any(ch in _TEMPLATE_ACTION.sub("x", program) for ch in SHELL_CHARS):
        return ("bash", "-c", f'{program} "$@"', "bash", *args) if args else ("bash", "-c", program)
    return (program, *args)


def split_args(text: str, where: Where) -> list[str]:
    """Split an Args cell like a shell would, keeping each ``{{ .name }}`` action whole."""
    actions = _TEMPLATE_ACTION.findall(text)
    masked = _TEMPLATE_ACTION.sub(lambda m: f"\x00{actions.index(m.group(0))}\x00", text)
    try:
        words = shlex.split(masked)
    except ValueError as exc:
        raise where.error("Args", f"cannot split arguments ({exc})") from None
    return [re.sub("\x00([0-9]+)\x00", lambda m: actions[int(m.group(1))], word) for word in words]


def _first_row(tokens: list[Token]) -> tuple[int, list[str]]:
    for line0, cells in _rows(tokens, "thead_open", "thead_close"):
        return line0, cells
    return 0, []


def _rows(tokens: list[Token], start: str, stop: str) -> list[tuple[int, list[str]]]:
    rows: list[tuple[int, list[str]]] = []
    inside = False
    for token in tokens:
        if token.type == start:
            inside = True
        elif token.type == stop:
            inside = False
        elif inside and token.type == "tr_open":
            assert token.map is not None
            rows.append((token.map[0], []))
        elif inside and token.type == "inline":
            rows[-1][1].append(cell_text(token.content))
    return rows


def cell_text(content: str) -> str:
    """A cell's text: trimmed, with a whole-cell code span unwrapped."""
    text = content.strip()
    if len(text) >= 2 and text.startswith("`") and text.endswith("`"):
        ticks = len(text) - len(text.lstrip("`"))
        inner = text[ticks:-ticks] if len(text) > 2 * ticks else text
        if "`" * ticks not in inner:
            return inner.strip()
    return text


def split_raw_row(line: str) -> list[str]:
    """Split a raw table line into cells exactly as markdown-it does (a pipe after a backslash is text)."""
    text = _QUOTE_MARKERS.sub("", line).strip()
    cells = _CELL_PIPE.split(text)
    if cells and cells[0] == "":
        cells = cells[1:]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    return cells


def broken_table_rows(token: Token, lines: list[str], offset: int, path: str) -> list[RowSpec]:
    """A fixture table whose delimiter row has the wrong cell count is not a table to markdown-it:
    each of its rows is ERR saying so (the rest of the file runs)."""
    if token.map is None:
        return []
    start, end = token.map
    end = min(end, len(lines) - offset)
    for line0 in range(start, end - 1):
        header, delimiter = lines[offset + line0], lines[offset + line0 + 1].strip()
        if "|" not in header or not _DELIMITER_ROW.match(delimiter):
            continue
        titles = split_raw_row(header)
        keys = [column_key(t) for t in titles]
        if "name" not in keys:
            continue
        error = FixtureError(
            path,
            offset + line0 + 1,
            f"header has {len(titles)} cells but the delimiter row below it has "
            f"{len(split_raw_row(delimiter))}: the table is not read until they match",
            "table",
        )
        rows = []
        for row0 in range(line0 + 2, end):
            raw = lines[offset + row0]
            if "|" not in raw:
                break
            cells = [cell_text(c) for c in split_raw_row(raw)]
            name = cells[keys.index("name")] if keys.index("name") < len(cells) else ""
            rows.append(broken_row(error, name, offset + row0 + 1, {}))
        return rows or [broken_row(error, "", offset + line0 + 1, {})]
    return []
