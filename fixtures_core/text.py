"""Bounded text for messages and reports: an excerpt of an output, a value or a line.

Every room quotes text it does not control (a sample's output, a judge's
stderr, a value read from a run document) inside a message or a report, so
the one way to cut it lives in the vocabulary. A cut is always marked with
``…`` on the side where text was left out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["counted", "excerpt", "listed", "visible"]

_CUT = "…"
# C0 controls but tab and newline, DEL, and C1 controls: what a terminal would act on instead of show.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def excerpt(text: str, chars: int, lines: int | None = None, tail: bool = False) -> str:
    """``text`` stripped, its first ``lines`` lines (its last with ``tail``), then its first (last)
    ``chars`` characters, with ``…`` where it was cut."""
    kept = text.strip()
    if lines is not None:
        split = kept.splitlines()
        kept = "\n".join(split[-lines:] if tail else split[:lines]) if lines > 0 else ""
    if len(kept) <= chars:
        return kept
    return _CUT + kept[len(kept) - chars :] if tail else kept[:chars] + _CUT


def visible(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN``: an agent's escape sequences (a screen clear,
    a window title) printed on a terminal are read, never obeyed."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", text)


def counted(count: int, noun: str) -> str:
    """``1 row``, ``3 rows``: a count and its noun (plural by an ``s``)."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def listed(items: Sequence[str], shown: int = 5) -> str:
    """``'a', 'b' and 4 more``: the first ``shown`` items (already quoted as the caller wants), then how many more."""
    text = ", ".join(items[:shown])
    return text + (f" and {len(items) - shown} more" if len(items) > shown else "")
