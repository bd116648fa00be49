"""Terminal escape facts for CEL's ``ansi`` map (``fixtures_core.execution.ansi``)."""

from __future__ import annotations

import pytest

from fixtures_core.execution.ansi import ansi_facts, duplicate_lines, final_text


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain\n", "plain\n"),
        ("\x1b[31mred\x1b[0m", "red"),
        ("50%\r100%", "100%"),
        ("spin 1\x1b[2K\rdone", "done"),
        ("a\nb\x1b[1Ac", "ac\nb"),
        ("abc\bX", "abX"),
        ("x\x1b[2Jclean", "clean"),
        ("\x1b]0;title\x07text", "text"),
    ],
)
def test_final_text_applies_cursor_moves_and_erases(raw: str, shown: str) -> None:
    assert final_text(raw) == shown


def test_duplicate_lines_are_trimmed_non_blank_lines_seen_twice() -> None:
    assert duplicate_lines(" task\n\nother\ntask \n\n") == [("task", 2)]


def test_facts_of_coloured_output_with_cursor_updates() -> None:
    facts = ansi_facts("\x1b[?25l\x1b[32mok\x1b[0m\n\x1b[?25h", "warn\x0c")
    assert {k: v for k, v in facts.items() if isinstance(v, bool)} == {
        "has_any": True,
        "has_color": True,
        "has_updates": True,
        "has_cursor_hide": True,
        "has_cursor_show": True,
        "has_reset": True,
        "stray_controls": True,
        "has_duplicates": False,
    }
    assert facts["final_text"] == "ok\nwarn"


def test_facts_of_plain_output() -> None:
    facts = ansi_facts("same\nsame\n", "")
    assert (facts["has_any"], facts["has_color"], facts["has_duplicates"]) == (False, False, True)
    assert facts["duplicate_lines"] == [{"text": "same", "count": 2}]
