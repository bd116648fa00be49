"""Text in Markdown shown as written, in every Markdown report (run and A/B suite sections)."""

from __future__ import annotations

from fixtures_core.reports.markdown_text import code, escape, fenced, table_row


def test_pipes_in_table_cells_are_escaped_and_code_survives_backticks() -> None:
    assert table_row("a|b", "c") == "| a\\|b | c |"
    assert code("x `y` z") == "``x `y` z``"
    assert fenced(["```", "x"]) == ["````", "```", "x", "````"]
    assert escape("*not* <b>bold</b>\nnext") == "\\*not\\* \\<b\\>bold\\</b\\> next"


def test_an_escaped_cell_keeps_its_pipe_escaped_once() -> None:
    # escape leaves pipes to table_row: a pipe in a gate name is escaped once, not twice.
    assert table_row(escape("a|b_c")) == "| a\\|b\\_c |"
