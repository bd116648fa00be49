"""The small HTML pieces every section of the HTML report builds with: escaped table rows."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape


class Html(str):
    """Text that is already HTML: table cells insert it as is (every other cell is escaped)."""


def tr(
    cells: Iterable[str], header: bool = False, numeric: set[int] | frozenset[int] = frozenset(), css: str = ""
) -> str:
    """One table row; ``numeric`` cells are right-aligned, ``Html`` cells are inserted as they are."""
    tag = "th" if header else "td"
    out = []
    for index, cell in enumerate(cells):
        number = ' class="num"' if index in numeric else ""
        text = cell if isinstance(cell, Html) else escape(cell)
        out.append(f"<{tag}{number}>{text}</{tag}>")
    row_class = f' class="{css}"' if css else ""
    return f"<tr{row_class}>" + "".join(out) + "</tr>"


def badge(status: str, text: str | None = None) -> Html:
    """A coloured status badge (PASS, FAIL, ERR, SKIP)."""
    return Html(f'<span class="badge {escape(status)}">{escape(text or status)}</span>')
