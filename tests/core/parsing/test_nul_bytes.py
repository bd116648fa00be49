"""A NUL byte anywhere in a fixture file is one error naming the file, the line and what holds it.

Markdown reads a NUL as U+FFFD (CommonMark's rule): without this check ``echo a<NUL>b`` in a command
cell ran as ``echo a\ufffdb`` and validation said ok.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.nul_bytes import MESSAGE
from fixtures_core.parsing.parser import parse_file

TABLE = "| Name | Command | prompt |\n|---|---|---|\n"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (TABLE + "| a | `echo a\0b` | x |\n", 3, "Command column"),
        (TABLE + "| a | `true` | x\0 |\n", 3, "prompt column"),
        ("| Name | Args |\n|---|---|\n| a | -v |\n| b | -\0v |\n", 4, "Args column"),
        ("| Name | Com\0mand |\n|---|---|\n| a | `true` |\n", 1, "table header"),
        ('---\nexec: echo\nargs:\n  - a\n  - "b\0"\n---\n' + TABLE + "| a | | |\n", 5, "frontmatter args"),
        ('---\nrepeat: 2\nexec: "ech\0o"\n---\n' + TABLE + "| a | | |\n", 3, "frontmatter exec"),
        ("### command: x\n\n```bash\necho a\0b\n```\n", 4, "bash fence"),
        ("### command: x\n\n```yaml\ntimeout: 1\0s\n```\n\n```bash\ntrue\n```\n", 4, "yaml fence"),
        ("### command: x\n\n```bash\0\ntrue\n```\n", 3, "fence info"),
        ('### command: x\n\n```bash\ntrue\n```\n\n- cel: stdout == "\0"\n', 7, "list item"),
        ("# Title\n\nsome pro\0se\n\n" + TABLE + "| a | `true` | x |\n", 3, "text"),
        ("    indented\0\n\n" + TABLE + "| a | `true` | x |\n", 1, "indented code"),
    ],
    ids=[
        "command-cell",
        "property-cell",
        "args-cell",
        "header",
        "frontmatter-list",
        "frontmatter-exec",
        "script",
        "block-yaml",
        "fence-info",
        "validation",
        "prose",
        "indented",
    ],  # fmt: skip
)
def test_a_nul_byte_is_refused_naming_its_line_and_field(tmp_path: Path, text: str, line: int, field: str) -> None:
    path = tmp_path / "f.md"
    path.write_bytes(text.encode())
    with pytest.raises(FixtureError) as caught:
        parse_file(path)
    assert str(caught.value) == f"{path.as_posix()}:{line}: {field}: {MESSAGE}"


def test_only_the_first_nul_byte_is_named(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_bytes((TABLE + "| a | `x\0` | y |\n| b | `z\0` | w |\n").encode())
    with pytest.raises(FixtureError, match=r"f.md:3: Command column: holds a NUL byte"):
        parse_file(path)


def test_the_replacement_character_itself_is_ordinary_text(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_text(TABLE + "| a | `echo \ufffd` | x |\n", encoding="utf-8")
    (row,) = parse_file(path).rows
    assert row.argv[-1] == "echo \ufffd"
