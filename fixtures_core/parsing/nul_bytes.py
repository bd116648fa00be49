"""A NUL byte in a fixture file is refused where it is, before anything reads the file.

Markdown parsers replace every NUL with U+FFFD before they parse (CommonMark asks it), and
YAML refuses one without its line: a command cell ``echo a<NUL>b`` would run as
``echo a\ufffdb`` and ``validate`` would say ok. What runs must be what the file says, so
the first NUL is one error naming the file, its line and what holds it: a frontmatter key,
a table column, a fence, a list item, or text.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.tables import split_raw_row

_TOP_LEVEL_KEY = re.compile(r"([^\s#'\"-][^:]*?|'[^']*'|\"[^\"]*\")\s*:(\s|$)")
MESSAGE = "holds a NUL byte (\\0): Markdown would read it as U+FFFD, so what runs would not be what the file says"


def refuse_nul_bytes(lines: list[str], body_start: int, path: str, markdown: MarkdownIt) -> None:
    """FixtureError at the first line holding a NUL; ``body_start``: the index of the first line after
    the frontmatter (0 without one)."""
    index = next((i for i, line in enumerate(lines) if "\0" in line), None)
    if index is None:
        return
    if index < body_start:
        field = _frontmatter_key(lines, index)
    else:
        field = _body_field(lines, body_start, index, markdown.parse("\n".join(lines[body_start:])))
    raise FixtureError(path, index + 1, MESSAGE, field)


def _frontmatter_key(lines: list[str], index: int) -> str:
    """The top-level key whose value holds line ``index`` (the closest one at or above it)."""
    for line in reversed(lines[1 : index + 1]):
        found = _TOP_LEVEL_KEY.match(line)
        if found is not None:
            key = found.group(1).strip("'\"").replace("\0", "\\0")  # a NUL in the key itself shown escaped
            return f"frontmatter {key}"
    return "frontmatter"


def _body_field(lines: list[str], body_start: int, index: int, tokens: list[Token]) -> str:
    """What holds line ``index`` of the body: a table's column, a fence, a list item, or text."""
    line0 = index - body_start
    table_start: int | None = None
    holder = "text"  # a list item (a command block's validations) unless something inside it holds the line
    for token in tokens:
        if token.map is None or not token.map[0] <= line0 < token.map[1]:
            continue
        if token.type == "table_open":
            table_start = token.map[0]
        elif token.type == "tr_open" and table_start is not None:
            if token.map[0] == table_start:
                return "table header"
            return _column(lines[body_start + table_start], lines[index])
        elif token.type == "fence":
            info = token.info.split()[0] if token.info.split() else ""
            if line0 == token.map[0]:
                return "fence info"
            return f"{info} fence".strip() if info else "fence"
        elif token.type == "code_block":
            return "indented code"
        elif token.type == "list_item_open":
            holder = "list item"
    return holder


def _column(header: str, line: str) -> str:
    """The title of the column whose cell of ``line`` holds the NUL."""
    position = next((i for i, cell in enumerate(split_raw_row(line)) if "\0" in cell), 0)
    titles = [title.strip() for title in split_raw_row(header)]
    title = titles[position] if position < len(titles) and titles[position] else f"cell {position + 1}"
    return f"{title} column"
