"""Bounded text for messages and reports: an excerpt of an output, a value or a line.

Every room quotes text it does not control (a sample's output, a judge's
stderr, a value read from a run document) inside a message or a report, so
the one way to cut it lives in the vocabulary. A cut is always marked with
``…`` on the side where text was left out.
"""

from __future__ import annotations

__all__ = ["excerpt"]

_CUT = "…"


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
