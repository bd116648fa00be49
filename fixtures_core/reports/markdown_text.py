"""Text in Markdown shown as written: plain words, inline code, code blocks and table rows.

Every Markdown a run writes (report.md, the CI step summary, the Prefect
artifact, the A/B suite sections) quotes names, errors and outputs it does
not control; these make sure none of them turns into emphasis, a link, HTML,
a closed code block or an extra table cell.
"""

from __future__ import annotations

from collections.abc import Sequence


def escape(text: str) -> str:
    """One line of text that Markdown shows as written (no stray emphasis, links or HTML)."""
    flat = " ".join(text.split())
    for char in "\\`*_[]<>":
        flat = flat.replace(char, "\\" + char)
    return flat


def code(text: str) -> str:
    """Inline code that survives backticks in ``text`` (CommonMark: a longer fence)."""
    flat = " ".join(text.split())
    fence = "`"
    while fence in flat:
        fence += "`"
    padded = f" {flat} " if flat.startswith("`") or flat.endswith("`") else flat
    return f"{fence}{padded}{fence}"


def fenced(lines: Sequence[str]) -> list[str]:
    """A fenced code block that no line of ``lines`` can close early."""
    fence = "```"
    while any(line.lstrip().startswith(fence) for line in lines):
        fence += "`"
    return [fence, *lines, fence]


def table_row(*cells: str) -> str:
    """A table line of Markdown cells (a pipe inside a cell, even in code, must be escaped)."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"
