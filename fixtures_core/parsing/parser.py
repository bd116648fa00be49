"""Parse Markdown fixture files (Gavel-compatible) into row specs.

A file is optional YAML frontmatter, then Markdown read as Gavel reads it:
every table with a ``Name`` column contributes one row per table row, a
``command: NAME`` heading (any level) starts a command block, and a script
fence outside a command block is a row named after the heading above it.
Every row knows its file and line; malformed input raises FixtureError,
never drops a row, and what assay reads but does not run is a warning.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.blocks import (
    CONFIG_LANGUAGES,
    INTERPRETERS,
    STANDALONE_LANGUAGES,
    Block,
    Fence,
    block_properties,
    block_row,
    is_validation_list,
)
from fixtures_core.parsing.config import (
    Where,
    read_daemon,
    read_redaction,
    read_string,
    read_string_list,
    reject_near_misses,
)
from fixtures_core.parsing.devlyn import find_bench, read_bench
from fixtures_core.parsing.encodable import frontmatter_text_error
from fixtures_core.parsing.fixture_file import read_fixture
from fixtures_core.parsing.golden import resolve_golden
from fixtures_core.parsing.nul_bytes import refuse_nul_bytes
from fixtures_core.parsing.row_errors import broken_row
from fixtures_core.parsing.safe_yaml import load_yaml
from fixtures_core.parsing.sampling import with_sampling
from fixtures_core.parsing.settings import Inherited, apply_common
from fixtures_core.parsing.suite import ARM_PROPERTY, DEVLYN_KEY, SUITE_KEYS, finish_rows, read_suite
from fixtures_core.parsing.tables import broken_table_rows, table_rows
from fixtures_core.parsing.throughput import read_budget, read_concurrency, read_limits
from fixtures_core.spec import FixtureFile, FixtureWarning, Redaction, RowSpec

FRONTMATTER_KEYS = (
    "exec", "args", "env", "cwd", "timeout", "repeat", "metrics", "measurements",
    "skip", "os", "arch", "codeBlocks", "indeterminate", "redact", "serial", "concurrency", "limits", "budget",
    "daemon", "pass_rate", "sampling", DEVLYN_KEY,
    *SUITE_KEYS,
)  # fmt: skip
# Gavel frontmatter keys assay reads but does not act on (never properties; validate names them).
GAVEL_ONLY_KEYS = {
    "build": "assay does not run build commands: build before the run",
    "terminal": "assay allocates no pseudo-terminal: commands run with pipes (stdout and stderr apart)",
    "files": "Gavel's own runner ignores it too: use an @glob Stdout cell for one row per file",
}
_NEWLINE = re.compile(r"\r\n?|\n")  # the line breaks markdown-it knows, so line numbers agree with its token maps
_MARKDOWN = MarkdownIt("commonmark").enable("table")


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


def read_file(path: str | Path) -> FixtureFile:
    """``parse_file``, except that an error of the whole file (its bytes, its frontmatter) does not raise:
    every row of the file is ERR with it (a row for the file itself when none can be read), every
    frontmatter error is in ``FixtureFile.errors``, and the run's other files run."""
    try:
        return parse_file(path)
    except FixtureError as exc:
        return broken_file(Path(path), exc)


def broken_file(path: Path, error: FixtureError) -> FixtureFile:
    """The file whose whole is broken by ``error``: its rows as its body names them, each ERR with it."""
    display, identity = path.as_posix(), fixture_identity(path)
    errors, rows, digest = [error], [], ""
    try:
        data = read_fixture(path, display)
        digest = hashlib.sha256(data).hexdigest()
        lines = _NEWLINE.split(data.decode("utf-8-sig"))
        if not any("\0" in line for line in lines):  # a NUL is the file's one error: YAML and Markdown misread it
            errors = _frontmatter_errors(lines, display) or errors
        body_start = _body_start(lines)
        if body_start is not None:
            tokens = _MARKDOWN.parse("\n".join(lines[body_start:]))
            rows = _Reader(lines, body_start, Inherited(), display).read_rows(tokens)
    except (FixtureError, UnicodeDecodeError):
        rows = []
    first = errors[0]
    named = rows or [broken_row(first, path.name, first.line or 1, {})]
    folder = str(path.resolve().parent)
    # Every row of it shows the file's error (its own, read without the frontmatter, would mislead).
    broken = tuple(replace(row, error=str(first), source_dir=folder, fixture_id=identity) for row in named)
    return FixtureFile(display, digest, broken, identity, errors=tuple(str(e) for e in errors))


def parse_file(path: str | Path) -> FixtureFile:
    """Read and parse one fixture file; errors name it as given, results by ``fixture_identity``."""
    display = Path(path).as_posix()
    identity = fixture_identity(Path(path))
    bench = find_bench(Path(path)) if Path(path).is_dir() else None
    if bench is not None:
        return read_bench(bench, display, identity)
    data = read_fixture(Path(path), display)
    try:
        text = data.decode("utf-8-sig")  # a byte order mark must not hide the frontmatter
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise FixtureError(display, line, f"not UTF-8 text (byte {exc.start})") from None
    rows, warnings, body_start = parse_document(text, display, identity=identity)
    digest = hashlib.sha256(data).hexdigest()
    return FixtureFile(
        path=display, sha256=digest, rows=rows, identity=identity, warnings=warnings, frontmatter_end=body_start
    )


def parse_document(
    text: str, path: str, identity: str | None = None
) -> tuple[tuple[RowSpec, ...], tuple[FixtureWarning, ...], int]:
    """Rows in file order, warnings about what assay reads but does not run, and the frontmatter's
    last line (0 without one)."""
    lines = _NEWLINE.split(text.removeprefix("\ufeff"))
    refuse_nul_bytes(lines, _body_start(lines) or 0, path, _MARKDOWN)  # before Markdown or YAML replaces one
    settings, body_start, warnings = _read_frontmatter(lines, path)
    if settings.devlyn is not None:
        suite_rows, linted = _devlyn_rows(settings, path, identity or path)
        return suite_rows, (*warnings, *linted), body_start
    tokens = _MARKDOWN.parse("\n".join(lines[body_start:]))
    readers = [_Reader(lines, body_start, variant, path) for variant in _arm_variants(settings)]
    for reader in readers:
        reader.read(tokens)
    folder = str(Path(path).resolve().parent)
    rows = [
        replace(
            expanded,
            source_dir=folder,
            fixture_id=identity or path,
            redaction=settings.redaction,
            concurrency=settings.concurrency,
            limits=settings.limits,
            budget=settings.budget,
            daemon=settings.daemon,
        )
        for row in sorted((r for reader in readers for r in reader.rows), key=lambda r: r.line)
        for expanded in resolve_golden(with_sampling(row), folder)  # a block ends after its tables: sort by line
    ]
    found = tuple(sorted(warnings + readers[0].warnings, key=lambda w: w.line))
    return finish_rows(rows, settings.suite), found, body_start


def _devlyn_rows(
    settings: Inherited, path: str, identity: str
) -> tuple[tuple[RowSpec, ...], tuple[FixtureWarning, ...]]:
    """A suite file that names a devlyn benchmark folder (``devlyn: FOLDER``): the folder's fixtures are its cases."""
    assert settings.devlyn is not None
    folder, line = settings.devlyn
    bench = find_bench(Path(path).resolve().parent / folder)
    if bench is None:
        raise FixtureError(
            path, line, f"no devlyn benchmark at {folder} (fixtures/test-repo and fixtures/F*/)", DEVLYN_KEY
        )
    fixture = read_bench(bench, path, identity, settings)
    rows = tuple(
        replace(
            row,
            redaction=settings.redaction,
            concurrency=settings.concurrency,
            limits=settings.limits,
            budget=settings.budget,
        )  # fmt: skip
        for row in fixture.rows
    )
    return rows, fixture.warnings


def _arm_variants(settings: Inherited) -> list[Inherited]:
    """The settings of each arm of an A/B suite: an arm acts as the frontmatter of its copy of every row."""
    arms = settings.suite.arms if settings.suite is not None else ()
    if not arms:
        return [settings]
    return [
        replace(
            settings,
            exec=arm.exec if arm.exec is not None else settings.exec,
            args=arm.args if arm.args is not None else settings.args,
            env={**settings.env, **arm.env},
            properties={**settings.properties, **arm.properties, ARM_PROPERTY: arm.name},
        )
        for arm in arms
    ]


class _Reader:
    """Walks the Markdown tokens in document order, as Gavel walks its syntax tree."""

    def __init__(self, lines: list[str], offset: int, settings: Inherited, path: str) -> None:
        self.lines, self.offset, self.settings, self.path = lines, offset, settings, path
        self.rows: list[RowSpec] = []
        self.warnings: list[FixtureWarning] = []
        self.block: Block | None = None  # the open command block or standalone fence
        self.heading = ""  # the last heading that is not a command heading: names standalone fences

    def read_rows(self, tokens: list[Token]) -> list[RowSpec]:
        """The rows the tokens hold, in file order."""
        self.read(tokens)
        return sorted(self.rows, key=lambda r: r.line)

    def read(self, tokens: list[Token]) -> None:
        index = 0
        while index < len(tokens):
            token = tokens[index]
            if token.type == "table_open":
                end = _closing(tokens, index, "table_close")
                rows, warnings = table_rows(tokens[index:end], self.lines, self.offset, self.settings, self.path)
                self.rows.extend(rows)
                self.warnings.extend(warnings)
                index = end
                continue
            if token.type == "heading_open":
                self._heading(token, tokens[index + 1])
            elif token.type == "fence":
                self._fence(token)
            elif token.type in ("bullet_list_open", "ordered_list_open"):
                self._list(tokens, index)
            if token.type in ("paragraph_open", "heading_open"):
                self.rows.extend(broken_table_rows(token, self.lines, self.offset, self.path))
            index += 1
        self._finish()

    def _line(self, token: Token) -> int:
        return self.offset + (token.map[0] if token.map else 0) + 1

    def _heading(self, token: Token, inline: Token) -> None:
        self._finish()
        text = _plain(inline).strip()
        if text.lower().startswith("command:"):
            name = text[len("command:") :].strip()
            self.block = Block(name, self._line(token), standalone=False)
        else:
            self.heading = text

    def _fence(self, token: Token) -> None:
        info = token.info.strip()
        fence = Fence(info.split()[0].lower() if info else "", token.content, self._line(token), info)
        block = self.block
        if block is not None and not block.standalone:
            if fence.language in self.settings.code_blocks:
                block.scripts.append(fence)
            elif fence.language in CONFIG_LANGUAGES:
                block.configs.append(fence)
            else:
                allowed = ", ".join(self.settings.code_blocks)
                what = f"{fence.language} fence" if fence.language else "fence without a language"
                self._warn(fence.line, f"{what} is not run (codeBlocks: {allowed})")
        elif fence.language in STANDALONE_LANGUAGES:
            self._finish()
            self.block = Block(self.heading or f"{fence.language}-block", fence.line, standalone=True, scripts=[fence])
        elif block is not None and fence.language in CONFIG_LANGUAGES:
            block.configs.append(fence)
        elif fence.language in INTERPRETERS or fence.language == "go":
            self._warn(fence.line, f"{fence.language} fence outside a command block is not run (as in Gavel)")
        elif fence.language in CONFIG_LANGUAGES:
            self._warn(fence.line, f"{fence.language} fence outside a command block configures nothing")

    def _list(self, tokens: list[Token], index: int) -> None:
        """A list of validations belongs to the open block (and ends a standalone one)."""
        items = _list_items(tokens, index)
        line = self._line(tokens[index])
        if not is_validation_list(" ".join(text for text, _ in items)):
            if self.block is not None and not self.block.standalone:
                self._warn(
                    line, f"list holds no validation (cel:, contains:, regex:, not:): ignored in '{self.block.name}'"
                )
            return
        if self.block is None:
            self._warn(line, "validation list outside a command block: ignored")
            return
        self.block.validations.extend((text, self.offset + item_line + 1) for text, item_line in items)
        if self.block.standalone:
            self._finish()

    def _finish(self) -> None:
        block, self.block = self.block, None
        if block is None:
            return
        incomplete = _incomplete(block, self.settings.code_blocks)
        if incomplete is not None:  # Gavel makes no row of it, and says nothing: assay warns
            self._warn(block.line, incomplete)
            return
        path = self.path

        def load(text: str, line: int) -> tuple[dict[str, object], dict[str, int], dict[str, list[int]]]:
            return _yaml_mapping(text, path, line, "command yaml")

        try:
            row, warnings = block_row(block, self.settings, load, path)
        except FixtureError as exc:  # the block's own error: its row is ERR, the file's other rows run
            row, warnings = broken_row(exc, block.name, block.line, block_properties(block, self.settings, load)), []
        self.rows.append(row)
        self.warnings.extend(warnings)

    def _warn(self, line: int, message: str) -> None:
        self.warnings.append(FixtureWarning(self.path, line, message))


def _incomplete(block: Block, code_blocks: tuple[str, ...]) -> str | None:
    """Why a command block makes no row, as Gavel reads it (``buildFixtureFromCommand``: no name or no
    script, no fixture): it has no name, or no fence in a language of ``codeBlocks``."""
    if block.standalone:
        return None
    if not block.name:
        return "a command block without a name (### command: NAME) makes no row (as in Gavel)"
    if not block.scripts:
        allowed = ", ".join(code_blocks)
        return f"command block '{block.name}' has no script fence (allowed languages: {allowed}): no row (as in Gavel)"
    return None


def _plain(inline: Token) -> str:
    """The text of an inline token without its markup (code spans keep their text), as Gavel reads headings."""
    if inline.type != "inline":
        return ""
    parts = [child.content for child in inline.children or [] if child.type in ("text", "code_inline")]
    return "".join(parts) if inline.children else inline.content


def _list_items(tokens: list[Token], start: int) -> list[tuple[str, int]]:
    """The text and 0-based body line of each item of the list opening at ``start`` (nested lists apart)."""
    level = tokens[start].level
    items: list[tuple[str, int]] = []
    for token in tokens[start + 1 :]:
        if token.level <= level:
            break
        if token.type == "inline" and token.level == level + 3:  # list_item_open, paragraph_open, inline
            assert token.map is not None
            items.append((token.content, token.map[0]))
    return items


def _closing(tokens: list[Token], start: int, kind: str) -> int:
    for index in range(start, len(tokens)):
        if tokens[index].type == kind:
            return index + 1
    return len(tokens)


# --- frontmatter ---------------------------------------------------------------


def _body_start(lines: list[str]) -> int | None:
    """The index of the first body line: 0 without frontmatter, None when the frontmatter never ends."""
    if not lines or lines[0].strip() != "---":
        return 0
    return next((end + 1 for end in range(1, len(lines)) if lines[end].strip() in ("---", "...")), None)


def _frontmatter_errors(lines: list[str], path: str) -> list[FixtureError]:
    """Every error of the frontmatter, not only the first: each key in error is set aside, and the rest
    read again, until the rest reads."""
    try:
        body_start = _body_start(lines)
        if body_start is None or body_start == 0:
            _read_frontmatter(lines, path)
            return []
        data, key_lines, item_lines = _yaml_mapping("\n".join(lines[1 : body_start - 1]), path, 2, "frontmatter")
    except FixtureError as exc:
        return [exc]
    errors: list[FixtureError] = []
    while True:
        try:
            _settings_from(data, key_lines, item_lines, path)
            return errors
        except FixtureError as exc:
            errors.append(exc)
            key = _key_of(exc, data)
            if key is None:
                return errors
            del data[key]
            key_lines.pop(key, None)


def _key_of(error: FixtureError, data: Mapping[str, object]) -> str | None:
    """The frontmatter key an error is about (``metrics`` of ``metrics[0].unit``), when it names one."""
    field = re.split(r"[.\[]", error.field or "", maxsplit=1)[0]
    return field if field in data else None


def _read_frontmatter(lines: list[str], path: str) -> tuple[Inherited, int, list[FixtureWarning]]:
    """The file's settings, the index of the first body line, and warnings about Gavel-only keys."""
    end = _body_start(lines)
    if end == 0:
        return Inherited(), 0, []
    if end is None:
        raise FixtureError(path, 1, "frontmatter starts with --- but never ends (add a closing --- line)")
    end -= 1
    data, key_lines, item_lines = _yaml_mapping("\n".join(lines[1:end]), path, 2, "frontmatter")
    warnings = [
        FixtureWarning(path, key_lines[key], f"frontmatter key '{key}' is ignored: {reason}")
        for key, reason in GAVEL_ONLY_KEYS.items()
        if key in data
    ]
    return _settings_from(data, key_lines, item_lines, path), end + 1, warnings


def _settings_from(
    data: Mapping[str, object], key_lines: dict[str, int], item_lines: dict[str, list[int]], path: str
) -> Inherited:
    reject_near_misses(key_lines, (*FRONTMATTER_KEYS, *GAVEL_ONLY_KEYS), path)
    unusable = frontmatter_text_error(data, key_lines, path)
    if unusable is not None:  # every row depends on the frontmatter: the file stops
        raise unusable

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, 1))

    settings = Inherited(
        exec=read_string(data["exec"], at("exec"), "exec") if "exec" in data else None,
        args=read_string_list(data["args"], at("args"), "args") if "args" in data else (),
        code_blocks=tuple(c.lower() for c in read_string_list(data["codeBlocks"], at("codeBlocks"), "codeBlocks"))
        if "codeBlocks" in data
        else ("bash",),
        properties={k: v for k, v in data.items() if k not in FRONTMATTER_KEYS and k not in GAVEL_ONLY_KEYS},
        redaction=read_redaction(data["redact"], at("redact"), item_lines.get("redact", []))
        if "redact" in data
        else Redaction(),
        suite=read_suite(data, key_lines, item_lines, path),
        concurrency=read_concurrency(data["concurrency"], at("concurrency")) if "concurrency" in data else None,
        limits=read_limits(data["limits"], at("limits")) if "limits" in data else (),
        budget=read_budget(data["budget"], at("budget")) if "budget" in data else None,
        daemon=read_daemon(data["daemon"], at("daemon")) if "daemon" in data else None,
        devlyn=(read_string(data[DEVLYN_KEY], at(DEVLYN_KEY), DEVLYN_KEY), at(DEVLYN_KEY).line)
        if DEVLYN_KEY in data
        else None,
    )
    return apply_common(settings, data, key_lines, item_lines, path)


def _yaml_mapping(
    text: str, path: str, first_line: int, what: str
) -> tuple[dict[str, object], dict[str, int], dict[str, list[int]]]:
    """Load a YAML mapping with the file line of each key and of each list item."""
    node, data = load_yaml(text, path, first_line, what)
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
