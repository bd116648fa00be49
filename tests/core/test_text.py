"""One way to cut text for a message or a report: stripped, bounded, the cut marked."""

from __future__ import annotations

from fixtures_core.text import counted, excerpt, listed


def test_short_text_is_only_stripped() -> None:
    assert excerpt("  ok\n", 10) == "ok"


def test_long_text_keeps_its_first_chars_and_marks_the_cut() -> None:
    assert excerpt("abcdef", 3) == "abc…"


def test_a_tail_keeps_the_last_chars_and_marks_the_cut_in_front() -> None:
    assert excerpt("abcdef", 3, tail=True) == "…def"


def test_lines_keeps_the_first_lines_then_bounds_the_chars() -> None:
    assert excerpt("one\ntwo\nthree\n", 100, lines=2) == "one\ntwo"
    assert excerpt("one\ntwo\nthree\n", 5, lines=2) == "one\nt…"


def test_a_tail_of_lines_keeps_the_last_lines() -> None:
    assert excerpt("one\ntwo\nthree\n", 100, lines=2, tail=True) == "two\nthree"
    assert excerpt("one\ntwo\nthree\n", 4, lines=2, tail=True) == "…hree"


def test_visible_shows_control_characters_and_keeps_tabs_newlines_and_text() -> None:
    from fixtures_core.text import visible

    assert visible("a\x1b[2Jb\tc\nd\x07\x7f\x9bé…") == "a\\x1b[2Jb\tc\nd\\x07\\x7f\\x9bé…"


def test_counted_says_one_noun_or_many() -> None:
    assert [counted(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]


def test_listed_shows_the_first_items_then_how_many_more() -> None:
    assert listed(["'a'", "'b'"]) == "'a', 'b'"
    assert listed([f"'{c}'" for c in "abcdefg"]) == "'a', 'b', 'c', 'd', 'e' and 2 more"
    assert listed(["x", "y", "z"], shown=1) == "x and 2 more"
