"""Fixture tables (``fixtures_core.parsing.tables``): columns, cells, commands, and table errors.

The public helpers are called directly; whole tables are written to a real file and read
with ``parse_file`` (line numbers are 1-based lines of that file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.builtins import go_os
from fixtures_core.parsing.config import Where
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.tables import cell_text, column_key, command_argv, shell_wrapped, split_args, split_raw_row
from tests.core.parsing.fixture_files import by_name, parse, row_error, write

GOOS = go_os()
WHERE = Where("f.md", 7)


# --- column_key, cell_text, split_raw_row -----------------------------------------------


@pytest.mark.parametrize(
    ("title", "key"),
    [
        ("Name", "name"),
        ("  Test   NAME ", "name"),  # case and inner spaces do not matter, as in Gavel
        ("CLI Args", "args"),
        ("Expected Exit Code", "exit_code"),
        ("cel validation", "cel"),
        ("Expected Files", "ignored"),
        ("Terminal", "ignored"),
        ("model", ""),
        ("Names", ""),
    ],
)
def test_column_key(title: str, key: str) -> None:
    assert column_key(title) == key


@pytest.mark.parametrize(
    ("content", "text"),
    [
        ("  plain  ", "plain"),
        ("`code`", "code"),
        ("`` a`b ``", "a`b"),  # a double-backtick span may hold a backtick
        ("`a` and `b`", "`a` and `b`"),  # two spans: not one whole-cell span
        ("``", "``"),
        ("`", "`"),
        ("**bold**", "**bold**"),  # raw Markdown otherwise
    ],
)
def test_cell_text(content: str, text: str) -> None:
    assert cell_text(content) == text


@pytest.mark.parametrize(
    ("line", "cells"),
    [
        ("| a | b |", [" a ", " b "]),
        ("a | b", ["a ", " b"]),
        ("| a \\| b | c |", [" a \\| b ", " c "]),  # an escaped pipe is text
        ("> > | a | b |", [" a ", " b "]),  # blockquote markers are not cells
        ("| a | |", [" a ", " "]),
        ("|", []),
    ],
)
def test_split_raw_row(line: str, cells: list[str]) -> None:
    assert split_raw_row(line) == cells


# --- shell_wrapped, split_args, command_argv -------------------------------------------


@pytest.mark.parametrize(
    ("program", "args", "argv"),
    [
        ("echo", ("a b",), ("echo", "a b")),
        ("echo hi", (), ("bash", "-c", "echo hi")),
        ("echo hi", ("a b", "c"), ("bash", "-c", 'echo hi "$@"', "bash", "a b", "c")),
        ("{{ .sourceDir }}/agent", ("x",), ("{{ .sourceDir }}/agent", "x")),  # spaces inside an action only
        ("{{ .sourceDir }}/agent | tee", (), ("bash", "-c", "{{ .sourceDir }}/agent | tee")),
        ("$HOME/bin/tool", (), ("bash", "-c", "$HOME/bin/tool")),
    ],
)
def test_shell_wrapped(program: str, args: tuple[str, ...], argv: tuple[str, ...]) -> None:
    assert shell_wrapped(program, args) == argv


def test_split_args_splits_like_a_shell_and_keeps_template_actions_whole() -> None:
    text = '--prompt {{ .prompt | printf "%s x" }} \'a b\' "c d" e\\ f'
    assert split_args(text, WHERE) == ["--prompt", '{{ .prompt | printf "%s x" }}', "a b", "c d", "e f"]


def test_split_args_error_names_file_line_and_field() -> None:
    with pytest.raises(FixtureError) as caught:
        split_args("'open", WHERE)
    assert str(caught.value) == "f.md:7: Args: cannot split arguments (No closing quotation)"


def test_command_argv_prefers_the_cell_then_the_default_then_bash_for_args() -> None:
    assert command_argv("ls", "echo", None, ("-a",)) == ("ls", "-a")
    assert command_argv(None, "echo", ("own",), ("-a",)) == ("echo", "own")
    assert command_argv(None, None, ("-c", "true"), ()) == ("bash", "-c", "true")


def test_command_argv_without_any_command_is_bash_as_in_gavel() -> None:
    assert command_argv(None, None, None, ("-a",)) == ("bash", "-a")
    assert command_argv(None, None, None, ()) == ("bash",)


# --- warnings about what a table holds but does not run -------------------------------


def test_table_without_a_name_column_and_ignored_columns_are_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(
        write(
            tmp_path,
            "---\nexec: echo\n---\n| Option | Meaning |\n|---|---|\n| x | y |\n\n"
            "| Name | Expected Files | Terminal |\n|---|---|---|\n| a | f | yes |\n",
        )
    )
    (row,) = fixture.rows
    assert "expected files" not in row.properties and "terminal" not in row.properties
    ignored = "Gavel reads it but never checks it for commands; assay ignores it too"
    no_terminal = "no pseudo-terminal is allocated; the command runs with pipes (stdout and stderr apart)"
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (4, "table has no Name column (columns: Option, Meaning): not a fixture table, no row runs"),
        (8, f"column 'Expected Files' is ignored: {ignored}"),
        (8, f"column 'Terminal' is ignored: {no_terminal}"),
    ]


# --- tables read from a file (moved from test_parser.py) -------------------------------


def test_table_repeat_cell_overrides_frontmatter(tmp_path: Path) -> None:
    rows = by_name(
        parse(
            tmp_path,
            """
            ---
            exec: echo
            repeat: 5
            timeout: 20m
            ---
            | Name | Repeat | Timeout |
            |---|---:|---|
            | own | 2 | 30s |
            | inherited | | |
            """,
        )
    )
    assert (rows["own"].repeat, rows["own"].timeout_s) == (2, 30.0)
    assert (rows["inherited"].repeat, rows["inherited"].timeout_s) == (5, 1200.0)


@pytest.mark.parametrize(
    ("row", "count", "note"),
    [
        ("| a | true | extra |", 3, "the extra cells are ignored"),
        ("| a | true | | |", 4, "the extra cells are ignored"),
    ],
)
def test_a_long_row_runs_with_a_warning_as_in_gavel(tmp_path: Path, row: str, count: int, note: str) -> None:
    path = write(tmp_path, f"---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| ok | true |\n{row}\n")
    fixture = parse_file(path)
    assert [(r.name, r.error, r.expect.cel) for r in fixture.rows] == [("ok", None, "true"), ("a", None, "true")]
    assert [str(w) for w in fixture.warnings] == [
        f"{path.as_posix()}:7: row has {count} cells but the header has 2: {note}, as in Gavel"
    ]


def test_a_short_row_has_empty_cells_as_in_gavel(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "| Name | Command | CEL |\n|---|---|---|\n| a | true |\n"))
    ((row,), warnings) = fixture.rows, fixture.warnings
    assert (row.name, row.argv, row.expect.cel, row.error, warnings) == ("a", ("true",), None, None, ())


def test_text_line_right_after_a_table_is_a_row_and_says_how_to_end_the_table(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| a | true |\nsee above\n")
    fixture = parse_file(path)
    assert [r.name for r in fixture.rows] == ["a", "see above"]
    (warning,) = fixture.warnings
    assert str(warning).startswith(f"{path.as_posix()}:7: row has 1 cells but the header has 2: its missing cells")
    assert "a table ends at a blank line" in str(warning)


def test_delimiter_row_with_wrong_cell_count_makes_its_rows_err_not_dropped(tmp_path: Path) -> None:
    path = write(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|\n| a | true |\n| b | true |\n\nafter\n")
    rows = parse_file(path).rows
    message = (
        f"{path.as_posix()}:4: table: header has 2 cells but the delimiter row below it has 1: "
        "the table is not read until they match"
    )
    assert [(r.name, r.line, r.error) for r in rows] == [("a", 6, message), ("b", 7, message)]


def test_fixture_table_read_as_setext_heading_is_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n---\n")
    assert error.startswith(f"{path}:4: table: header has 2 cells")


def test_broken_documentation_table_is_not_an_error(tmp_path: Path) -> None:
    assert parse(tmp_path, "| Option | Meaning |\n|---|\n| x | y |\n") == ()


def test_empty_name_is_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n|  | true |\n")
    assert error == f"{path}:6: Name: a fixture table row needs a Name"


def test_table_without_name_column_is_documentation(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ---
        exec: echo
        ---
        | Column | Meaning |
        |---|---|
        | Repeat | samples per row |
        | just one cell |

        | Name |
        |---|
        | real |
        """,
    )
    assert [r.name for r in rows] == ["real"]


def test_duplicate_columns_are_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\nexec: echo\n---\n| Name | model | Model |\n|---|---|---|\n| a | x | y |\n")
    assert error == f"{path}:4: Model: columns 'model' and 'Model' set the same value: keep one"


def test_two_aliases_of_one_special_column_are_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "| Name | Command | Exec |\n|---|---|---|\n| a | ls | ls |\n")
    assert error == f"{path}:1: Exec: columns 'Command' and 'Exec' set the same value: keep one"


def test_row_without_any_command_runs_bash_as_in_gavel(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | CEL |\n|---|---|\n| a | true |\n")
    assert (row.argv, row.error) == (("bash",), None)


def test_test_name_column_names_the_row(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\n---\n| Test Name | x |\n|---|---|\n| a | 1 |\n")
    assert (row.name, dict(row.properties)) == ("a", {"x": "1"})


def test_table_without_command_runs_bash_with_the_row_args(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | Args |\n|---|---|\n| a | -c 'echo hi' |\n")
    assert row.argv == ("bash", "-c", "echo hi")


def test_frontmatter_exec_that_is_a_command_line_runs_through_bash(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: bash -e\nargs: [x]\n---\n| Name |\n|---|\n| a |\n")
    assert row.argv == ("bash", "-c", 'bash -e "$@"', "bash", "x")


def test_template_action_alone_does_not_make_exec_a_command_line(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: '{{ .sourceDir }}/agent'\n---\n| Name |\n|---|\n| a |\n")
    assert row.argv == ("{{ .sourceDir }}/agent",)


@pytest.mark.parametrize(
    ("header", "cell", "attribute", "expected"),
    [
        ("Command", "ls", "argv", ("ls",)),
        ("CLI", "ls", "argv", ("ls",)),
        ("exec", "ls", "argv", ("ls",)),
        ("COMMAND", "ls", "argv", ("ls",)),
        ("Args", "-a -b", "argv", ("echo", "-a", "-b")),
        ("CLI Args", "-a", "argv", ("echo", "-a")),
        ("cli  args", "-a", "argv", ("echo", "-a")),
        ("CWD", "/tmp", "cwd", "/tmp"),
        ("Timeout", "45s", "timeout_s", 45.0),
        ("REPEAT", "3", "repeat", 3),
        ("Skip", 'test -n "$CI"', "skip_command", 'test -n "$CI"'),
        ("skip", "true", "skip", "skip: true"),
        ("Skip", "false", "skip", None),
        ("Working Directory", "sub", "cwd", "sub"),
        ("Dir", "sub", "cwd", "sub"),
        ("Arguments", "-a", "argv", ("echo", "-a")),
        ("os", "plan9", "skip", f"os {GOOS} is not in plan9"),
        ("OS", f"!{GOOS}", "skip", f"os {GOOS} is excluded"),
        ("arch", "!nosucharch", "skip", None),
    ],
)
def test_special_columns_are_case_insensitive(
    tmp_path: Path, header: str, cell: str, attribute: str, expected: object
) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\n---\n| NAME | {header} |\n|---|---|\n| a | {cell} |\n")
    assert getattr(row, attribute) == expected
    assert header.strip().lower() not in row.properties


@pytest.mark.parametrize(
    ("header", "attribute"),
    [
        ("ExitCode", "exit_code"),
        ("Expected Exit Code", "exit_code"),
        ("Exit Code", "exit_code"),
        ("exit code", "exit_code"),
    ],
)
def test_exit_code_column(tmp_path: Path, header: str, attribute: str) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\n---\n| Name | {header} |\n|---|---|\n| a | -2 |\n")
    assert getattr(row.expect, attribute) == -2


@pytest.mark.parametrize(
    ("header", "attribute"),
    [
        ("Stdout", "stdout"),
        ("Expected Output", "stdout"),
        ("STDERR", "stderr"),
        ("CEL Validation", "cel"),
        ("CEL", "cel"),
        ("validation", "cel"),
        ("Expr", "cel"),
    ],
)
def test_expectation_columns(tmp_path: Path, header: str, attribute: str) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\n---\n| Name | {header} |\n|---|---|\n| a | some text |\n")
    assert getattr(row.expect, attribute) == "some text"
    assert row.expect.cel_line == 6


def test_defaults_of_expectations(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | Command |\n|---|---|\n| a | true |\n")
    expect = row.expect
    assert (expect.exit_code, expect.stdout, expect.stderr, expect.cel) == (0, None, None, None)
    assert (row.cwd, row.skip, row.metrics, dict(row.env)) == (None, None, (), {})


def test_other_columns_are_properties_keyed_by_lower_cased_header(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: echo\n---\n| Name | Selector | Prompt File | notes |\n|---|---|---|---|\n| a | api:x | p.txt | |\n",
    )
    assert dict(row.properties) == {"selector": "api:x", "prompt file": "p.txt", "notes": ""}


def test_frontmatter_keys_are_properties_and_row_cells_override_them(tmp_path: Path) -> None:
    rows = by_name(
        parse(
            tmp_path,
            """
            ---
            exec: echo
            model: base
            region: eu
            ---
            | Name | model |
            |---|---|
            | own | mine |
            | blank | |
            """,
        )
    )
    assert dict(rows["own"].properties) == {"model": "mine", "region": "eu"}
    assert dict(rows["blank"].properties) == {"model": "base", "region": "eu"}


def test_command_cell_with_spaces_runs_through_bash(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | Command |\n|---|---|\n| a | echo hello world |\n")
    assert row.argv == ("bash", "-c", "echo hello world")


@pytest.mark.parametrize(
    ("cell", "command"),
    [
        ("`ls \\| wc`", "ls | wc"),  # a pipe inside a table cell is escaped, even in a code span
        ("`a&&b`", "a&&b"),
        ("x;y", "x;y"),
        ("cat<in", "cat<in"),
        ("`$HOME/bin/tool`", "$HOME/bin/tool"),
        ("`` echo `date` ``", "echo `date`"),
    ],
)
def test_command_cell_with_shell_operators_runs_through_bash(tmp_path: Path, cell: str, command: str) -> None:
    (row,) = parse(tmp_path, f"| Name | Command |\n|---|---|\n| a | {cell} |\n")
    assert row.argv == ("bash", "-c", command)


def test_shell_command_gets_args_as_positional_parameters(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, '---\nargs: ["two words", x]\n---\n| Name | Command |\n|---|---|\n| a | echo hi |\n')
    # "$@" hands each argument to the shell as one word; $0 is "bash"
    assert row.argv == ("bash", "-c", 'echo hi "$@"', "bash", "two words", "x")


def test_plain_command_cell_is_the_program(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\nargs: [a, b]\n---\n| Name | Command |\n|---|---|\n| a | printf |\n")
    assert row.argv == ("printf", "a", "b")


def test_frontmatter_exec_and_args_build_the_command(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        """
        ---
        exec: python3
        args:
          - "{{ .sourceDir }}/agent.py"
          - "{{ .prompt }}"
        ---
        | Name | prompt |
        |---|---|
        | a | hello |
        """,
    )
    assert row.argv == ("python3", "{{ .sourceDir }}/agent.py", "{{ .prompt }}")


def test_args_cell_replaces_frontmatter_args(tmp_path: Path) -> None:
    rows = by_name(
        parse(
            tmp_path,
            "---\nexec: tool\nargs: [--default]\n---\n| Name | Args |\n|---|---|\n| own | -x 'a b' |\n| inherit | |\n",
        )
    )
    assert rows["own"].argv == ("tool", "-x", "a b")
    assert rows["inherit"].argv == ("tool", "--default")


def test_args_cell_keeps_template_actions_whole(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: tool\n---\n| Name | Args | prompt |\n|---|---|---|\n| a | --prompt {{ .prompt }} -v | hi |\n",
    )
    assert row.argv == ("tool", "--prompt", "{{ .prompt }}", "-v")


def test_unbalanced_quote_in_args_is_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\nexec: tool\n---\n| Name | Args |\n|---|---|\n| a | 'open |\n")
    assert error.startswith(f"{path}:6: Args: cannot split arguments")


def test_backtick_cel_with_escaped_pipes_becomes_or(tmp_path: Path) -> None:
    rows = by_name(
        parse(
            tmp_path,
            """
            ---
            exec: echo
            ---
            | Name | CEL Validation |
            |---|---|
            | ticks | `json.a == 1 \\|\\| json.b == "x"` |
            | bare | json.a == 1 \\|\\| json.b == 2 |
            """,
        )
    )
    assert rows["ticks"].expect.cel == 'json.a == 1 || json.b == "x"'
    assert rows["bare"].expect.cel == "json.a == 1 || json.b == 2"


def test_double_backtick_cell_may_contain_a_backtick(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| a | ``stdout == '`'`` |\n")
    assert row.expect.cel == "stdout == '`'"


def test_cell_text_is_raw_markdown(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\n---\n| Name | p |\n|---|---|\n| a | **x** &amp; y |\n")
    assert row.properties["p"] == "**x** &amp; y"


def test_table_in_blockquote_counts_cells_without_the_marker(tmp_path: Path) -> None:
    rows = parse(tmp_path, "---\nexec: echo\n---\n> | Name | p |\n> |---|---|\n> | a | 1 |\n> b | 2\n")
    assert [(r.name, r.properties["p"], r.line) for r in rows] == [("a", "1", 6), ("b", "2", 7)]


@pytest.mark.parametrize(("cell", "field"), [("0", "Repeat"), ("-1", "Repeat"), ("x", "Repeat"), ("2.5", "Repeat")])
def test_bad_repeat_cell(tmp_path: Path, cell: str, field: str) -> None:
    path, error = row_error(tmp_path, f"---\nexec: echo\n---\n| Name | Repeat |\n|---|---|\n| a | {cell} |\n")
    assert error == f"{path}:6: {field}: must be a whole number >= 1, got {cell!r}"


@pytest.mark.parametrize("cell", ["5 parsecs", "0", "0s"])
def test_bad_timeout_cell(tmp_path: Path, cell: str) -> None:
    path, error = row_error(tmp_path, f"---\nexec: echo\n---\n| Name | Timeout |\n|---|---|\n| a | {cell} |\n")
    assert error.startswith(f"{path}:6: Timeout: ")


def test_bad_exit_code_cell(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\nexec: echo\n---\n| Name | Exit Code |\n|---|---|\n| a | one |\n")
    assert error == f"{path}:6: Exit Code: must be an integer, got 'one'"


def test_cwd_cell_overrides_frontmatter(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\ncwd: /a\n---\n| Name | CWD |\n|---|---|\n| a | /b |\n")
    assert row.cwd == "/b"
