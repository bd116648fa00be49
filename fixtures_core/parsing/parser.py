"""Parse Markdown fixture files (Gavel-compatible) into row specs.

A file is optional YAML frontmatter, then Markdown: every table with a
``Name`` column contributes one row per table row, and every
``### command: NAME`` heading starts a command block. Every row knows its
file and line; malformed input raises FixtureError, never drops a row.
"""

from __future__ import annotations

import hashlib
import platform
import re
import shlex
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.config import (
    Where,
    read_env,
    read_exit_code,
    read_metrics,
    read_redaction,
    read_repeat,
    read_skip,
    read_string,
    read_string_list,
    read_timeout,
    reject_near_misses,
)
from fixtures_core.spec import (
    DEFAULT_TIMEOUT_S,
    Expectation,
    FixtureFile,
    MetricSpec,
    PropertyValue,
    Redaction,
    RowSpec,
)

FRONTMATTER_KEYS = (
    "exec", "args", "env", "cwd", "timeout", "repeat", "metrics", "measurements",
    "skip", "os", "arch", "codeBlocks", "indeterminate", "redact",
)  # fmt: skip
BLOCK_KEYS = (
    "exitCode", "cwd", "env", "timeout", "repeat", "metrics", "measurements",
    "skip", "indeterminate", "stdout", "stderr",
)  # fmt: skip
COLUMNS = {
    "name": "name",
    "command": "exec", "cli": "exec", "exec": "exec",
    "args": "args", "cli args": "args",
    "cwd": "cwd",
    "exit code": "exit_code",
    "stdout": "stdout", "expected output": "stdout",
    "stderr": "stderr",
    "cel validation": "cel", "cel": "cel", "validation": "cel", "expr": "cel",
    "repeat": "repeat",
    "timeout": "timeout",
    "skip": "skip",
    "indeterminate": "indeterminate",
}  # fmt: skip
INTERPRETERS: Mapping[str, tuple[str, ...]] = {
    "bash": ("bash", "-c"),
    "sh": ("sh", "-c"),
    "shell": ("bash", "-c"),
    "python": (sys.executable, "-c"),
    "python3": (sys.executable, "-c"),
}
_SHELL_CHARS = frozenset(" \t|&;<>()$`*?[]{}~'\"\n")
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_GO_OS = {"linux2": "linux", "win32": "windows", "cygwin": "windows"}
_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks markdown-it knows, so line numbers agree with its token maps
_CELL_PIPE = re.compile(r"(?<!\\)\|")  # a pipe not preceded by a backslash separates cells, as markdown-it splits
_QUOTE_MARKERS = re.compile(r"^\s*(?:>\s?)*")
_DELIMITER_ROW = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$")
_TEMPLATE_ACTION = re.compile(r"\{\{.*?\}\}", re.DOTALL)
_MARKDOWN = MarkdownIt("commonmark").enable("table")


@dataclass(frozen=True)
class _Defaults:
    """What the frontmatter gives every row of the file."""

    exec: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    repeat: int = 1
    metrics: tuple[MetricSpec, ...] = ()
    skip: str | None = None
    indeterminate: str | None = None
    code_blocks: tuple[str, ...] = ("bash",)
    properties: Mapping[str, PropertyValue] = field(default_factory=dict)
    redaction: Redaction = field(default_factory=Redaction)


def fixture_identity(path: Path) -> str:
    """How runs name a fixture file, the same from any working directory.

    Relative to the enclosing git work tree when there is one (a nightly job
    with absolute paths and a developer in a subfolder name it alike), else
    relative to the working directory when below it, else absolute.
    """
    absolute = path.resolve()
    for folder in absolute.parents:
        if (folder / ".git").exists():
            return absolute.relative_to(folder).as_posix()
    try:
        return absolute.relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return absolute.as_posix()


def parse_file(path: str | Path) -> FixtureFile:
    """Read and parse one fixture file; errors name it as given, results by ``fixture_identity``."""
    display = Path(path).as_posix()
    identity = fixture_identity(Path(path))
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FixtureError(display, 0, f"cannot read fixture file: {exc.strerror}") from None
    try:
        text = data.decode("utf-8-sig")  # a byte order mark must not hide the frontmatter
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FixtureError(display, line, f"not UTF-8 text (byte {exc.start})") from None
    rows = parse_text(text, display, identity=identity)
    return FixtureFile(path=display, sha256=hashlib.sha256(data).hexdigest(), rows=rows, identity=identity)


def parse_text(text: str, path: str, identity: str | None = None) -> tuple[RowSpec, ...]:
    """Parse fixture Markdown into rows, in file order; ``identity`` names the file in results."""
    lines = _NEWLINE.split(text.removeprefix("\ufeff"))
    defaults, body_start = _read_frontmatter(lines, path)
    body = "\n".join(lines[body_start:])
    tokens = _MARKDOWN.parse(body)
    rows: list[RowSpec] = []
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token.type == "table_open":
            end = _closing(tokens, index, "table_close")
            rows.extend(_table_rows(tokens[index:end], lines, body_start, defaults, path))
            index = end
        elif token.type == "heading_open" and _block_name(tokens[index + 1]) is not None:
            end = _block_end(tokens, index + 3)
            rows.append(_block_row(tokens[index:end], body_start, defaults, path))
            index += 3  # tables inside the block are still fixture tables: keep scanning its tokens
        else:
            if token.type in ("paragraph_open", "heading_open"):
                _reject_broken_table(token, lines, body_start, path)
            index += 1
    folder = str(Path(path).resolve().parent)
    return tuple(
        replace(row, source_dir=folder, fixture_id=identity or path, redaction=defaults.redaction) for row in rows
    )


# --- frontmatter ---------------------------------------------------------------


def _read_frontmatter(lines: list[str], path: str) -> tuple[_Defaults, int]:
    """The file's defaults and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        return _Defaults(), 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        raise FixtureError(path, 1, "frontmatter starts with --- but never ends (add a closing --- line)")
    data, key_lines, item_lines = _yaml_mapping("\n".join(lines[1:end]), path, 2, "frontmatter")
    return _defaults_from(data, key_lines, item_lines, path), end + 1


def _defaults_from(
    data: dict[str, object], key_lines: dict[str, int], item_lines: dict[str, list[int]], path: str
) -> _Defaults:
    reject_near_misses(key_lines, FRONTMATTER_KEYS, path)
    if "metrics" in data and "measurements" in data:
        line = max(key_lines.get("metrics", 1), key_lines.get("measurements", 1))
        raise FixtureError(path, line, "set metrics or its alias measurements, not both", "measurements")

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, 1))

    defaults = _Defaults(
        exec=read_string(data["exec"], at("exec"), "exec") if "exec" in data else None,
        args=read_string_list(data["args"], at("args"), "args") if "args" in data else (),
        code_blocks=read_string_list(data["codeBlocks"], at("codeBlocks"), "codeBlocks")
        if "codeBlocks" in data
        else ("bash",),
        properties={k: v for k, v in data.items() if k not in FRONTMATTER_KEYS},
        skip=read_skip(data.get("skip")) or _platform_skip(data, at),
        redaction=read_redaction(data["redact"], at("redact"), item_lines.get("redact", []))
        if "redact" in data
        else Redaction(),
    )
    return _apply_common(defaults, data, key_lines, item_lines, path)


def _apply_common(
    base: _Defaults, data: Mapping[str, object], key_lines: dict[str, int], item_lines: dict[str, list[int]], path: str
) -> _Defaults:
    """Keys shared by frontmatter and block yaml: env, cwd, timeout, repeat, metrics, indeterminate."""

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, 1))

    changes: dict[str, object] = {}
    if "env" in data:
        changes["env"] = {**base.env, **read_env(data["env"], at("env"))}
    if "cwd" in data:
        changes["cwd"] = read_string(data["cwd"], at("cwd"), "cwd")
    if "timeout" in data:
        changes["timeout_s"] = read_timeout(data["timeout"], at("timeout"))
    if "repeat" in data:
        changes["repeat"] = read_repeat(data["repeat"], at("repeat"))
    if "indeterminate" in data:
        changes["indeterminate"] = read_string(data["indeterminate"], at("indeterminate"), "indeterminate")
    for key in ("metrics", "measurements"):
        if key in data:
            own = read_metrics(data[key], at(key), item_lines.get(key, []), key)
            changes["metrics"] = _merge_metrics(base.metrics, own)
    return replace(base, **changes)  # type: ignore[arg-type]


def _merge_metrics(inherited: tuple[MetricSpec, ...], own: tuple[MetricSpec, ...]) -> tuple[MetricSpec, ...]:
    """A block's metric replaces an inherited one of the same name; others are added."""
    own_names = {m.name for m in own}
    return tuple(m for m in inherited if m.name not in own_names) + own


def _platform_skip(data: Mapping[str, object], at: Callable[[str], Where]) -> str | None:
    wanted_os = data.get("os")
    if wanted_os is not None:
        allowed = [s.lower() for s in read_string_list(wanted_os, at("os"), "os")]
        current = _GO_OS.get(sys.platform, sys.platform)  # Go names, as Gavel fixtures write them
        if current not in allowed:
            return f"os {current} is not in {', '.join(allowed)}"
    wanted_arch = data.get("arch")
    if wanted_arch is not None:
        allowed = [s.lower() for s in read_string_list(wanted_arch, at("arch"), "arch")]
        machine = platform.machine().lower()
        current_arch = _GO_ARCH.get(machine, machine)
        if current_arch not in allowed:
            return f"arch {current_arch} is not in {', '.join(allowed)}"
    return None


def _yaml_mapping(
    text: str, path: str, first_line: int, what: str
) -> tuple[dict[str, object], dict[str, int], dict[str, list[int]]]:
    """Load a YAML mapping with the file line of each key and of each list item."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = first_line + (mark.line if mark is not None else 0)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FixtureError(path, line, f"invalid YAML in {what}: {problem}") from None
    if data is None:
        return {}, {}, {}
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise FixtureError(path, first_line, f"{what} must be a YAML map of key: value")
    key_lines: dict[str, int] = {}
    item_lines: dict[str, list[int]] = {}
    for key_node, value_node in node.value:
        key, line = str(key_node.value), first_line + key_node.start_mark.line
        if key in key_lines:
            raise FixtureError(path, line, f"duplicate key '{key}' in {what} (first at line {key_lines[key]})", key)
        key_lines[key] = line
        if isinstance(value_node, yaml.SequenceNode):
            item_lines[key] = [first_line + item.start_mark.line for item in value_node.value]
    return {str(k): v for k, v in data.items()}, key_lines, item_lines


# --- tables --------------------------------------------------------------------


def _table_rows(tokens: list[Token], lines: list[str], offset: int, defaults: _Defaults, path: str) -> list[RowSpec]:
    header_line, header = _first_row(tokens)
    keys = [COLUMNS.get(" ".join(h.lower().split()), "") for h in header]
    if "name" not in keys:
        return []  # a documentation table, not a fixture table
    _reject_duplicate_columns(header, keys, Where(path, offset + header_line + 1))
    header_cells = len(_split_raw_row(lines[offset + header_line]))
    rows = []
    for line0, cells in _body_rows(tokens):
        line = offset + line0 + 1
        raw = lines[offset + line0]
        raw_count = len(_split_raw_row(raw))
        if raw_count != header_cells:
            hint = "" if "|" in raw else " (a table ends at a blank line: add one if this line is not a row)"
            raise FixtureError(path, line, f"table row has {raw_count} cells but the header has {header_cells}{hint}")
        rows.append(
            _table_row(
                dict(zip(header, cells, strict=True)), dict(zip(header, keys, strict=True)), line, defaults, path
            )
        )
    return rows


def _reject_duplicate_columns(header: list[str], keys: list[str], where: Where) -> None:
    """Two columns that set the same thing would silently hide one of them."""
    seen: dict[str, str] = {}
    for title, key in zip(header, keys, strict=True):
        identity = key or f"property {title.strip().lower()}"
        if identity in seen:
            raise where.error(title, f"columns '{seen[identity]}' and '{title}' set the same value: keep one")
        seen[identity] = title


def _table_row(cells: dict[str, str], keys: dict[str, str], line: int, defaults: _Defaults, path: str) -> RowSpec:
    where = Where(path, line)
    known = {keys[h]: v for h, v in cells.items() if keys[h] and v != ""}
    name = known.get("name", "")
    if not name:
        raise where.error("Name", "a fixture table row needs a Name")
    properties = dict(defaults.properties)
    for header, value in cells.items():
        key = header.strip().lower()  # Gavel exposes custom columns under their lower-cased header
        if not keys[header] and (value != "" or key not in properties):
            properties[key] = value
    args = tuple(_split_args(known["args"], where)) if "args" in known else defaults.args
    return RowSpec(
        file=path,
        line=line,
        name=name,
        argv=_table_argv(known.get("exec"), defaults.exec, args, where),
        expect=Expectation(
            exit_code=read_exit_code(known["exit_code"], where, "Exit Code") if "exit_code" in known else 0,
            stdout=known.get("stdout"),
            stderr=known.get("stderr"),
            cel=known.get("cel"),
            cel_line=line,
        ),
        properties=properties,
        env=defaults.env,
        cwd=known.get("cwd", defaults.cwd),
        timeout_s=read_timeout(known["timeout"], where, "Timeout") if "timeout" in known else defaults.timeout_s,
        repeat=read_repeat(known["repeat"], where, "Repeat") if "repeat" in known else defaults.repeat,
        metrics=defaults.metrics,
        skip=read_skip(known.get("skip")) or defaults.skip,
        indeterminate=known.get("indeterminate", defaults.indeterminate),
    )


def _table_argv(cell: str | None, default: str | None, args: tuple[str, ...], where: Where) -> tuple[str, ...]:
    """A Command cell that is a command line (spaces, shell operators) runs through bash, as in Gavel.

    Its arguments reach that shell as positional parameters (``"$@"``), each
    rendered per sample as one argv item: a property holding quotes or shell
    syntax stays one literal argument and is never parsed by the shell.
    """
    if cell is None:
        if default is None:
            raise where.error("Command", "no command: set exec in the frontmatter or fill a Command column")
        return (default, *args)
    if any(ch in cell for ch in _SHELL_CHARS):
        return ("bash", "-c", f'{cell} "$@"', "bash", *args) if args else ("bash", "-c", cell)
    return (cell, *args)


def _split_args(text: str, where: Where) -> list[str]:
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


def _body_rows(tokens: list[Token]) -> list[tuple[int, list[str]]]:
    return _rows(tokens, "tbody_open", "tbody_close")


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
            rows[-1][1].append(_cell_text(token.content))
    return rows


def _cell_text(content: str) -> str:
    """A cell's text: trimmed, with a whole-cell code span unwrapped."""
    text = content.strip()
    if len(text) >= 2 and text.startswith("`") and text.endswith("`"):
        ticks = len(text) - len(text.lstrip("`"))
        inner = text[ticks:-ticks] if len(text) > 2 * ticks else text
        if "`" * ticks not in inner:
            return inner.strip()
    return text


def _split_raw_row(line: str) -> list[str]:
    """Split a raw table line into cells exactly as markdown-it does (a pipe after a backslash is text)."""
    text = _QUOTE_MARKERS.sub("", line).strip()
    cells = _CELL_PIPE.split(text)
    if cells and cells[0] == "":
        cells = cells[1:]
    if cells and cells[-1] == "":
        cells = cells[:-1]
    return cells


def _reject_broken_table(token: Token, lines: list[str], offset: int, path: str) -> None:
    """A fixture table whose delimiter row has the wrong cell count is not a table to markdown-it: say so."""
    if token.map is None:
        return
    start, end = token.map
    for line0 in range(start, min(end, len(lines) - offset) - 1):
        header, delimiter = lines[offset + line0], lines[offset + line0 + 1].strip()
        if "|" not in header or not _DELIMITER_ROW.match(delimiter):
            continue
        titles = [" ".join(c.lower().split()) for c in _split_raw_row(header)]
        if "name" in titles:
            raise FixtureError(
                path,
                offset + line0 + 1,
                f"table header has {len(titles)} cells but the delimiter row below it has "
                f"{len(_split_raw_row(delimiter))}: the table is not read until they match",
            )


def _closing(tokens: list[Token], start: int, kind: str) -> int:
    for index in range(start, len(tokens)):
        if tokens[index].type == kind:
            return index + 1
    return len(tokens)


# --- command blocks --------------------------------------------------------------


def _block_name(inline: Token) -> str | None:
    text = inline.content.strip()
    if inline.type != "inline" or not text.lower().startswith("command:"):
        return None
    return text[len("command:") :].strip()


def _block_end(tokens: list[Token], start: int) -> int:
    for index in range(start, len(tokens)):
        if tokens[index].type == "heading_open" and int(tokens[index].tag[1]) <= 3:
            return index
    return len(tokens)


def _block_row(tokens: list[Token], offset: int, defaults: _Defaults, path: str) -> RowSpec:
    assert tokens[0].map is not None
    line = offset + tokens[0].map[0] + 1
    where = Where(path, line)
    if tokens[0].tag != "h3":
        raise where.error("command", "a command block heading must be level 3 (### command: NAME)")
    name = _block_name(tokens[1]) or ""
    if not name:
        raise where.error("command", "a command block needs a name (### command: NAME)")
    config: Mapping[str, object] = {}
    config_line: int | None = None
    key_lines: dict[str, int] = {}
    settings = defaults
    script: tuple[str, str, int] | None = None
    validations: list[str] = []
    for position, token in enumerate(tokens):
        if position < 3:
            continue  # the heading itself
        token_line = offset + (token.map[0] if token.map else 0) + 1
        language = token.info.strip().split()[0].lower() if token.type == "fence" and token.info.strip() else ""
        if token.type == "fence" and language in ("yaml", "yml") and language not in defaults.code_blocks:
            if config_line is not None:
                raise FixtureError(
                    path, token_line, f"command block '{name}' has a second yaml fence (first at line {config_line})"
                )
            config_line = token_line
            config, key_lines, item_lines = _yaml_mapping(token.content, path, token_line + 1, "command yaml")
            reject_near_misses(key_lines, BLOCK_KEYS, path)
            if "metrics" in config and "measurements" in config:
                raise FixtureError(
                    path, key_lines["measurements"], "set metrics or its alias, not both", "measurements"
                )
            settings = _apply_common(defaults, config, key_lines, item_lines, path)
            settings = replace(settings, properties={**defaults.properties, **_block_properties(config)})
            block_skip = read_skip(config.get("skip"))
            if block_skip:
                settings = replace(settings, skip=block_skip)
        elif token.type == "fence" and language in defaults.code_blocks:
            if script is not None:
                raise FixtureError(path, token_line, f"command block '{name}' has more than one script fence")
            script = (language, token.content, token_line)
        elif token.type == "inline" and position >= 2 and tokens[position - 2].type == "list_item_open":
            validations.append(_validation(token.content, Where(path, token_line)))
    if script is None:
        allowed = ", ".join(defaults.code_blocks)
        raise where.error("command", f"command block '{name}' has no script fence (allowed languages: {allowed})")
    language, body, _script_line = script
    interpreter = INTERPRETERS.get(language)
    if interpreter is None:
        raise where.error("codeBlocks", f"no interpreter known for '{language}' (known: {', '.join(INTERPRETERS)})")
    cel = " && ".join(f"({v})" for v in validations) if len(validations) > 1 else next(iter(validations), None)

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, line))

    return RowSpec(
        file=path,
        line=line,
        name=name,
        argv=(*interpreter, body),
        expect=Expectation(
            exit_code=read_exit_code(config["exitCode"], at("exitCode")) if "exitCode" in config else 0,
            stdout=read_string(config["stdout"], at("stdout"), "stdout") if "stdout" in config else None,
            stderr=read_string(config["stderr"], at("stderr"), "stderr") if "stderr" in config else None,
            cel=cel,
            cel_line=line,
        ),
        properties=settings.properties,
        env=settings.env,
        cwd=settings.cwd,
        timeout_s=settings.timeout_s,
        repeat=settings.repeat,
        metrics=settings.metrics,
        skip=settings.skip,
        indeterminate=settings.indeterminate,
    )


def _block_properties(config: Mapping[str, object]) -> dict[str, PropertyValue]:
    return {k: v for k, v in config.items() if k not in BLOCK_KEYS}


def _validation(text: str, where: Where) -> str:
    """Turn one validation bullet into a CEL expression."""
    kind, _, value = text.strip().partition(":")
    kind, value = kind.strip().lower(), _cell_text(value)
    if not _ or not value:
        raise where.error(
            "validation", f"expected 'cel: EXPR', 'contains: TEXT', 'regex: PATTERN' or 'not: ...', got {text!r}"
        )
    if kind == "cel":
        return value
    if kind == "contains":
        return f"stdout.contains({_cel_string(value)})"
    if kind == "regex":
        return f"stdout.matches({_cel_string(value)})"
    if kind == "not":
        return f"!({_validation(value, where)})"
    raise where.error("validation", f"unknown validation '{kind}' (known: cel, contains, regex, not)")


def _cel_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'
