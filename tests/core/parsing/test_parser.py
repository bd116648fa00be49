"""Parsing Markdown fixture files into rows (``fixtures_core.parsing.parser``).

Every fixture is written to a real file under ``tmp_path`` and read with ``parse_file``.
Line numbers in the assertions are 1-based lines of that file.
"""

from __future__ import annotations

import hashlib
import sys
import textwrap
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.builtins import go_os
from fixtures_core.parsing.parser import parse_file
from fixtures_core.spec import DEFAULT_TIMEOUT_S, RowSpec

GOOS = go_os()


def write(tmp_path: Path, text: str, name: str = "fixture.md") -> Path:
    """Write dedented fixture text (first line is line 1) and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def parse(tmp_path: Path, text: str) -> tuple[RowSpec, ...]:
    return parse_file(write(tmp_path, text)).rows


def parse_error(tmp_path: Path, text: str) -> tuple[str, FixtureError]:
    """The display path of the written file and the error parsing it raised."""
    path = write(tmp_path, text)
    with pytest.raises(FixtureError) as caught:
        parse_file(path)
    return path.as_posix(), caught.value


def by_name(rows: tuple[RowSpec, ...]) -> dict[str, RowSpec]:
    return {row.name: row for row in rows}


# --- files ----------------------------------------------------------------------


def test_fixture_file_keeps_path_and_digest(tmp_path: Path) -> None:
    path = write(tmp_path, "| Name | Command |\n|---|---|\n| a | true |\n")
    fixture = parse_file(path)
    assert fixture.path == path.as_posix()
    assert fixture.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert [r.file for r in fixture.rows] == [path.as_posix()]


def test_missing_file_is_a_fixture_error_of_the_whole_file(tmp_path: Path) -> None:
    absent = tmp_path / "absent.md"
    with pytest.raises(FixtureError) as caught:
        parse_file(absent)
    # No line: the file itself is the problem, so it prints no made-up line 0.
    assert str(caught.value) == f"{absent.as_posix()}: cannot read fixture file: No such file or directory"
    assert caught.value.line is None


def test_a_folder_or_device_is_a_fixture_error_without_a_line(tmp_path: Path) -> None:
    with pytest.raises(FixtureError) as caught:
        parse_file(tmp_path)
    assert str(caught.value).startswith(f"{tmp_path.as_posix()}: ")
    assert ":0:" not in str(caught.value) and caught.value.line is None


def test_non_utf8_file_is_a_fixture_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.md"
    path.write_bytes(b"| Name |\n|---|\n| caf\xe9 |\n")
    # "| Name |\n" is 9 bytes, "|---|\n" 6, "| caf" 5: the bad byte is at offset 20, on line 3
    with pytest.raises(FixtureError, match=r":3: not UTF-8 text \(byte 20\)"):
        parse_file(path)


def test_byte_order_mark_does_not_hide_the_frontmatter(tmp_path: Path) -> None:
    path = tmp_path / "bom.md"
    path.write_bytes("\ufeff---\nexec: echo\nrepeat: 3\n---\n| Name |\n|---|\n| a |\n".encode())
    (row,) = parse_file(path).rows
    assert (row.argv, row.repeat, row.line) == (("echo",), 3, 7)


def test_crlf_line_endings_keep_line_numbers(tmp_path: Path) -> None:
    path = tmp_path / "crlf.md"
    path.write_bytes(b"---\r\nexec: echo\r\nrepeat: 2\r\n---\r\n\r\n| Name |\r\n|---|\r\n| a |\r\n| b |\r\n")
    rows = parse_file(path).rows
    assert [(r.name, r.line, r.repeat) for r in rows] == [("a", 8, 2), ("b", 9, 2)]


def test_unicode_line_separator_inside_a_cell_does_not_shift_lines(tmp_path: Path) -> None:
    rows = parse(tmp_path, "---\nexec: echo\n---\n| Name | note |\n|---|---|\n| a | x\u2028y |\n| b | z |\n")
    assert [(r.name, r.line) for r in rows] == [("a", 6), ("b", 7)]


def test_file_without_fixture_tables_has_no_rows(tmp_path: Path) -> None:
    assert parse(tmp_path, "# Notes\n\nJust prose.\n") == ()


# --- repeat and timeout precedence ------------------------------------------------


def test_repeat_defaults_to_one_and_timeout_to_two_minutes(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | Command |\n|---|---|\n| a | true |\n")
    assert row.repeat == 1
    assert row.timeout_s == DEFAULT_TIMEOUT_S == 120.0


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


def test_block_yaml_repeat_overrides_frontmatter(tmp_path: Path) -> None:
    rows = by_name(
        parse(
            tmp_path,
            """
            ---
            repeat: 4
            timeout: 90s
            ---
            ### command: own

            ```yaml
            repeat: 7
            timeout: 1h30m
            ```

            ```bash
            echo own
            ```

            ### command: inherited

            ```bash
            echo inherited
            ```
            """,
        )
    )
    assert (rows["own"].repeat, rows["own"].timeout_s) == (7, 5400.0)
    assert (rows["inherited"].repeat, rows["inherited"].timeout_s) == (4, 90.0)


def test_block_without_frontmatter_repeats_once(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\necho\n```\n")
    assert row.repeat == 1


# --- line numbers ------------------------------------------------------------------


def test_table_row_lines_without_frontmatter(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        # Title

        | Name | Command |
        |---|---|
        | first | true |
        | second | true |
        """,
    )
    assert [(r.name, r.line) for r in rows] == [("first", 5), ("second", 6)]


def test_frontmatter_offsets_table_and_block_lines(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ---
        exec: echo
        args: [hi]
        ---

        Intro text.

        | Name | prompt |
        |---|---|
        | first | p1 |
        | second | p2 |

        ### command: third

        ```bash
        echo 3
        ```

        More prose.

        | Name | Command |
        |---|---|
        | fourth | true |
        """,
    )
    # "fourth" sits under the "third" command heading: Gavel would ignore it, assay runs it (README: Differences)
    assert [(r.name, r.line) for r in rows] == [("first", 10), ("second", 11), ("third", 13), ("fourth", 23)]
    assert all(r.file.endswith("fixture.md") for r in rows)


def test_table_after_paragraph_without_blank_line_keeps_lines(tmp_path: Path) -> None:
    rows = parse(tmp_path, "---\nexec: echo\n---\nSome text\n| Name | x |\n|---|---|\n| a | 1 |\n")
    assert [(r.name, r.line) for r in rows] == [("a", 7)]


def test_table_inside_a_list_item_keeps_lines(tmp_path: Path) -> None:
    rows = parse(tmp_path, "---\nexec: echo\n---\n- item\n\n  | Name |\n  |---|\n  | a |\n")
    assert [(r.name, r.line) for r in rows] == [("a", 8)]


# --- malformed tables ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "count"),
    [("| a |", 1), ("| a | true | extra |", 3), ("| a | true | | |", 4)],
)
def test_row_with_wrong_cell_count_is_an_error_naming_file_and_line(tmp_path: Path, row: str, count: int) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| ok | true |\n{row}\n")
    assert str(error) == f"{path}:7: table: row has {count} cells but the header has 2"
    assert (error.path, error.line, error.field) == (path, 7, "table")


def test_text_line_right_after_a_table_is_a_row_and_says_how_to_end_the_table(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n| a | true |\nsee above\n")
    assert str(error).startswith(f"{path}:7: table: row has 1 cells but the header has 2")
    assert "a table ends at a blank line" in str(error)


def test_delimiter_row_with_wrong_cell_count_is_an_error_not_dropped_rows(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|\n| a | true |\n")
    assert str(error) == (
        f"{path}:4: table: header has 2 cells but the delimiter row below it has 1: "
        "the table is not read until they match"
    )
    assert error.field == "table"


def test_fixture_table_read_as_setext_heading_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n---\n")
    assert str(error).startswith(f"{path}:4: table: header has 2 cells")


def test_broken_documentation_table_is_not_an_error(tmp_path: Path) -> None:
    assert parse(tmp_path, "| Option | Meaning |\n|---|\n| x | y |\n") == ()


def test_empty_name_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n---\n| Name | CEL |\n|---|---|\n|  | true |\n")
    assert str(error) == f"{path}:6: Name: a fixture table row needs a Name"
    assert error.field == "Name"


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
    path, error = parse_error(
        tmp_path, "---\nexec: echo\n---\n| Name | model | Model |\n|---|---|---|\n| a | x | y |\n"
    )
    assert str(error) == f"{path}:4: Model: columns 'model' and 'Model' set the same value: keep one"


def test_two_aliases_of_one_special_column_are_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "| Name | Command | Exec |\n|---|---|---|\n| a | ls | ls |\n")
    assert str(error) == f"{path}:1: Exec: columns 'Command' and 'Exec' set the same value: keep one"


def test_row_without_any_command_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "| Name | CEL |\n|---|---|\n| a | true |\n")
    assert str(error) == (
        f"{path}:3: Command: no command: set exec in the frontmatter, fill a Command column or an Args column"
    )


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


# --- special columns ------------------------------------------------------------------


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
    path, error = parse_error(tmp_path, "---\nexec: tool\n---\n| Name | Args |\n|---|---|\n| a | 'open |\n")
    assert str(error).startswith(f"{path}:6: Args: cannot split arguments")


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
    path, error = parse_error(tmp_path, f"---\nexec: echo\n---\n| Name | Repeat |\n|---|---|\n| a | {cell} |\n")
    assert str(error) == f"{path}:6: {field}: must be a whole number >= 1, got {cell!r}"


@pytest.mark.parametrize("cell", ["5 parsecs", "0", "0s"])
def test_bad_timeout_cell(tmp_path: Path, cell: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n---\n| Name | Timeout |\n|---|---|\n| a | {cell} |\n")
    assert str(error).startswith(f"{path}:6: Timeout: ")
    assert error.field == "Timeout"


def test_bad_exit_code_cell(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n---\n| Name | Exit Code |\n|---|---|\n| a | one |\n")
    assert str(error) == f"{path}:6: Exit Code: must be an integer, got 'one'"


# --- frontmatter ------------------------------------------------------------------------


def test_frontmatter_env_cwd_and_skip_apply_to_rows(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        """
        ---
        exec: echo
        env:
          TOKEN: "{{ .name }}"
          N: 3
        cwd: $HOME/work
        skip: test -f /no/such/file
        ---
        | Name |
        |---|
        | a |
        """,
    )
    assert dict(row.env) == {"TOKEN": "{{ .name }}", "N": "3"}
    assert row.cwd == "$HOME/work"
    assert (row.skip, row.skip_command) == (None, "test -f /no/such/file")


def test_cwd_cell_overrides_frontmatter(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\ncwd: /a\n---\n| Name | CWD |\n|---|---|\n| a | /b |\n")
    assert row.cwd == "/b"


def test_os_that_does_not_match_skips_every_row(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\nos: [plan9]\n---\n| Name |\n|---|\n| a |\n")
    assert row.skip is not None
    assert "is not in plan9" in row.skip


def test_os_that_matches_runs(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\nos: [{GOOS}]\n---\n| Name |\n|---|\n| a |\n")
    assert row.skip is None


@pytest.mark.parametrize(("value", "skipped"), [(f"'!{GOOS}'", True), ("'!plan9'", False), ("plan9", True)])
def test_os_accepts_gavel_negation(tmp_path: Path, value: str, skipped: bool) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\nos: {value}\n---\n| Name |\n|---|\n| a |\n")
    assert (row.skip is not None) is skipped


@pytest.mark.parametrize(
    ("value", "line_text"),
    [("0", "repeat: 0"), ("-1", "repeat: -1"), ("x", "repeat: x"), ("2.5", "repeat: 2.5"), ("true", "repeat: true")],
)
def test_bad_frontmatter_repeat_names_line_and_field(tmp_path: Path, value: str, line_text: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n{line_text}\n---\n")
    assert str(error).startswith(f"{path}:3: repeat: must be a whole number >= 1, got ")
    assert (error.line, error.field) == (3, "repeat")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5 parsecs", "expected a duration such as 90s, 20m or 1h30m, got '5 parsecs'"),
        ("0", "a duration must be positive and finite, got 0"),
        ("[1]", "expected a duration such as 90s, 20m or 1h30m, got [1]"),
    ],
)
def test_bad_frontmatter_timeout_names_line_and_field(tmp_path: Path, value: str, message: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\nrepeat: 2\ntimeout: {value}\n---\n")
    assert str(error) == f"{path}:4: timeout: {message}"


def test_invalid_yaml_names_the_line_of_the_problem(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nargs: [a, b\nrepeat: 2\n---\n")
    assert str(error).startswith(f"{path}:4: invalid YAML in frontmatter: ")


def test_invalid_yaml_indentation(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nenv:\n  A: 1\n B: 2\n---\n")
    assert error.line == 5
    assert "invalid YAML in frontmatter" in str(error)


def test_frontmatter_must_be_a_mapping(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\n- exec\n- echo\n---\n")
    assert str(error) == f"{path}:2: frontmatter must be a YAML map of key: value"


def test_scalar_frontmatter_is_not_a_mapping(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\njust text\n---\n")
    assert str(error) == f"{path}:2: frontmatter must be a YAML map of key: value"


def test_empty_frontmatter_is_allowed(tmp_path: Path) -> None:
    assert [r.line for r in parse(tmp_path, "---\n---\n| Name | Command |\n|---|---|\n| a | true |\n")] == [5]


def test_unclosed_frontmatter(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\n\n| Name |\n|---|\n| a |\n")
    assert str(error) == f"{path}:1: frontmatter starts with --- but never ends (add a closing --- line)"


def test_frontmatter_may_close_with_dots(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\n...\n| Name |\n|---|\n| a |\n")
    assert (row.argv, row.line) == (("echo",), 6)


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [("repat", "repeat"), ("timout", "timeout"), ("metric", "metrics"), ("codeblocks", "codeBlocks")],
)
def test_near_miss_frontmatter_key_suggests_the_known_key(tmp_path: Path, key: str, suggestion: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n{key}: 3\n---\n")
    assert f"{path}:3: {key}: unknown key '{key}'" in str(error)
    assert suggestion in str(error)


def test_near_miss_typo_message(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nrepat: 3\n---\n")
    assert str(error) == f"{path}:3: repat: unknown key 'repat' (did you mean 'repeat'?)"


@pytest.mark.parametrize("key", ["Repeat", "REPEAT", "Exec"])
def test_key_differing_only_in_case_is_an_error(tmp_path: Path, key: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n{key}: 3\n---\n")
    assert f"{path}:3: {key}: unknown key '{key}': the key is spelled '{key.lower()}'" == str(error)


def test_duplicate_frontmatter_key_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nrepeat: 2\nrepeat: 3\n---\n")
    assert str(error) == f"{path}:4: repeat: duplicate key 'repeat' in frontmatter (first at line 3)"


@pytest.mark.parametrize(("key", "value"), [("exec", "[a, b]"), ("env", "[A]"), ("args", "{a: 1}"), ("cwd", "~")])
def test_wrongly_typed_frontmatter_values(tmp_path: Path, key: str, value: str) -> None:
    path, error = parse_error(tmp_path, f"---\nrepeat: 1\n{key}: {value}\n---\n")
    assert str(error).startswith(f"{path}:3: {key}")


def test_env_value_that_is_a_map_names_the_variable(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nenv:\n  A: {b: 1}\n---\n")
    assert str(error).startswith(f"{path}:2: env.A: must be a string")


# --- metric specs ----------------------------------------------------------------------------


METRICS_FRONTMATTER = """
---
exec: echo
metrics:
  - name: duration_ms
    extract: json.metrics.durationMs.value
    unit: ms
    aggregate: median
    direction: lower
    baseline: API high
    threshold:
      regressionPercent: 25
      max: 120000
  - name: cost_usd
    extract: json.cost
    unit: usd
    gate: false
---
| Name |
|---|
| API high |
"""


def test_frontmatter_metrics_are_read_with_their_lines(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, METRICS_FRONTMATTER)
    duration, cost = row.metrics
    assert (duration.name, duration.unit, duration.aggregate, duration.direction) == (
        "duration_ms",
        "ms",
        "median",
        "lower",
    )
    assert duration.baseline == "API high"
    assert duration.threshold.regression_percent == 25.0
    assert duration.threshold.max == 120000.0
    assert duration.threshold.min is None
    assert duration.gate is True
    assert (cost.aggregate, cost.direction, cost.gate, cost.baseline) == ("mean", "none", False, None)
    assert cost.threshold.is_empty()
    assert (duration.line, cost.line) == (4, 13)
    assert duration.file == cost.file == row.file


def test_measurements_is_an_alias_of_metrics(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: echo\nmeasurements:\n  - {name: t, extract: json.t, unit: s}\n---\n| Name |\n|---|\n| a |\n",
    )
    assert [m.name for m in row.metrics] == ["t"]


def test_metrics_and_measurements_together_are_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nmetrics: []\nmeasurements: []\n---\n")
    assert str(error) == f"{path}:4: measurements: set metrics or its alias measurements, not both"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("{name: t, extract: json.t}", "metrics[0].unit: is required"),
        ("{name: t, extract: json.t, unit: ''}", "metrics[0].unit: is required"),
        ("{extract: json.t, unit: s}", "metrics[0].name: is required"),
        ("{name: t, unit: s}", "metrics[0].extract: is required"),
        ("{name: t, extract: json.t, unit: s, aggregate: avg}", "metrics[t].aggregate: unknown aggregate 'avg'"),
        ("{name: t, extract: json.t, unit: s, direction: up}", "metrics[t].direction: unknown direction 'up'"),
        (
            "{name: t, extract: json.t, unit: s, threshold: {min: 5, max: 1}}",
            "metrics[t].threshold: min 5 is greater than max 1",
        ),
        ("{name: t, extract: json.t, unit: s, threshold: {max: .inf}}", "metrics[t].threshold.max: must be a finite"),
        ("{name: t, extract: json.t, unit: s, threshold: {min: .nan}}", "metrics[t].threshold.min: must be a finite"),
        ("{name: t, extract: json.t, unit: s, threshold: {max: '5'}}", "metrics[t].threshold.max: must be a finite"),
        (
            "{name: t, extract: json.t, unit: s, direction: lower, threshold: {regressionPercent: -1}}",
            "metrics[t].threshold.regressionPercent: must be >= 0, got -1",
        ),
        (
            "{name: t, extract: json.t, unit: s, threshold: {regressionPercent: 10}}",
            "metrics[t].threshold.regressionPercent: needs a direction (lower or higher)",
        ),
        (
            "{name: t, extract: json.t, unit: s, direction: none, threshold: {regressionPercent: 10}}",
            "metrics[t].threshold.regressionPercent: needs a direction",
        ),
        (
            "{name: t, extract: json.t, unit: s, threshold: {maximum: 3}}",
            "metrics[t].threshold.maximum: unknown threshold",
        ),
        ("{name: t, extract: json.t, unit: s, threshold: 5}", "metrics[t].threshold: must be a map"),
        ("{name: t, extract: json.t, unit: s, gate: 'no'}", "metrics[t].gate: must be true or false"),
        ("{name: t, extract: json.t, unit: s, units: ms}", "metrics[0].units: unknown metric key"),
        ("just-a-name", "metrics[0]: must be a map with name, extract and unit"),
    ],
)
def test_metric_spec_errors_name_the_item_line_and_field(tmp_path: Path, item: str, message: str) -> None:
    path, error = parse_error(
        tmp_path, f"---\nexec: echo\nmetrics:\n  - {{name: ok, extract: json.ok, unit: s}}\n  - {item}\n---\n"
    )
    expected = message.replace("metrics[0]", "metrics[1]")
    assert str(error).startswith(f"{path}:5: {expected}")


def test_metrics_must_be_a_list(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nmetrics:\n  name: t\n---\n")
    assert str(error) == f"{path}:3: metrics: must be a list of metric specs"


def test_regression_percent_with_direction_and_no_baseline_is_allowed(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: echo\nmetrics:\n  - {name: t, extract: json.t, unit: s, direction: higher,"
        " threshold: {regressionPercent: 0}}\n---\n| Name |\n|---|\n| a |\n",
    )
    assert row.metrics[0].threshold.regression_percent == 0.0
    assert row.metrics[0].direction == "higher"


# --- command blocks ---------------------------------------------------------------------------


BLOCK = """
---
exec: bash
args: [nor-this]
env:
  SHARED: "1"
cwd: /shared
repeat: 2
metrics:
  - name: t
    extract: json.t
    unit: s
  - name: u
    extract: json.u
    unit: ms
---
### command: checks output

```yaml
exitCode: 3
cwd: /own
env:
  OWN: "2"
timeout: 5m
repeat: 4
flavor: spicy
metrics:
  - name: u
    extract: json.u2
    unit: ms
    aggregate: max
```

```bash
echo '{"t": 1}'
exit 3
```

- cel: json.t == 1
- contains: "t": 1"
- regex: ^\\{.*\\}$
- not: contains: error
"""


def test_command_block_reads_yaml_script_and_bullets(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, BLOCK)
    assert row.name == "checks output"
    assert row.line == 16
    assert row.argv == ("bash", "-c", "echo '{\"t\": 1}'\nexit 3\n")
    assert row.expect.exit_code == 3
    assert row.expect.cel == (
        '(json.t == 1) && (stdout.contains("t\\": 1")) && (stdout.matches("^\\\\{.*\\\\}$"))'
        ' && (!(stdout.contains("error")))'
    )
    assert row.expect.cel_line == 16
    assert row.cwd == "/own"
    assert dict(row.env) == {"SHARED": "1", "OWN": "2"}
    assert (row.timeout_s, row.repeat) == (300.0, 4)
    assert dict(row.properties) == {"flavor": "spicy"}


def test_block_metric_replaces_the_inherited_metric_of_the_same_name(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, BLOCK)
    assert [(m.name, m.extract, m.aggregate) for m in row.metrics] == [("t", "json.t", "mean"), ("u", "json.u2", "max")]
    assert [m.line for m in row.metrics] == [9, 27]  # frontmatter item, block yaml item


def test_block_inherits_frontmatter_env_cwd_repeat_and_metrics(tmp_path: Path) -> None:
    text = BLOCK.split("### command")[0] + "### command: plain\n\n```bash\necho hi\n```\n"
    (row,) = parse(tmp_path, text)
    assert row.argv == ("bash", "-c", "echo hi\n")
    assert (row.cwd, dict(row.env), row.repeat) == ("/shared", {"SHARED": "1"}, 2)
    assert [m.name for m in row.metrics] == ["t", "u"]
    assert row.expect.cel is None


def test_single_bullet_is_not_wrapped(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- cel: `exitCode == 0`\n")
    assert row.expect.cel == "exitCode == 0"


def test_contains_text_with_newline_is_a_valid_cel_string(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- contains: first\n  second\n")
    assert row.expect.cel == 'stdout.contains("first\\nsecond")'


def test_sh_fence_runs_with_sh(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\ncodeBlocks: [sh]\n---\n### command: a\n\n```sh\necho\n```\n")
    assert row.argv == ("sh", "-c", "echo\n")


def test_python_fence_runs_with_this_interpreter(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\ncodeBlocks: [python]\n---\n### command: a\n\n```python\nprint(1)\n```\n")
    assert row.argv == (sys.executable, "-c", "print(1)\n")


def test_missing_script_fence_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "# T\n\n### command: lonely\n\n```python\nprint(1)\n```\n")
    assert str(error) == f"{path}:3: command: command block 'lonely' has no script fence (allowed languages: bash)"


def test_unknown_interpreter_is_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\ncodeBlocks: [ruby]\n---\n### command: a\n\n```ruby\nputs 1\n```\n")
    assert str(error).startswith(f"{path}:4: codeBlocks: no interpreter known for 'ruby'")


def test_other_bullet_with_a_colon_is_cel_as_in_gavel(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- cel: true\n- exitCode == 0 ? true : false\n")
    assert row.expect.cel == "(true) && (exitCode == 0 ? true : false)"


def test_prose_bullet_with_a_colon_is_an_error_at_its_line(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- cel: true\n- Note: it echoes\n")
    assert str(error).startswith(
        f"{path}:8: validation: bullet 'Note: it echoes' is not cel:, contains:, regex: or not:, "
        "and Gavel reads it as CEL, which it is not ("
    )


@pytest.mark.parametrize("bullet", ["cel:", "contains:   "])
def test_validation_without_a_value_is_an_error(tmp_path: Path, bullet: str) -> None:
    path, error = parse_error(tmp_path, f"### command: a\n\n```bash\necho\n```\n\n- {bullet}\n")
    assert str(error).startswith(f"{path}:7: validation: '{bullet.strip()}' needs a value")


def test_prose_bullets_are_ignored_and_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(
        write(tmp_path, "### command: a\n\n```bash\necho\n```\n\nValidations:\n* just a note\n* contains: x\n")
    )
    (row,) = fixture.rows
    assert row.expect.cel == 'stdout.contains("x")'
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (8, "bullet 'just a note' is not a validation (no 'kind:'): ignored")
    ]


def test_list_without_validations_in_a_block_is_ignored_and_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- first step\n- second step\n"))
    assert fixture.rows[0].expect.cel is None
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (7, "list holds no validation (cel:, contains:, regex:, not:): ignored in 'a'")
    ]


@pytest.mark.parametrize(
    ("bullet", "cel"),
    [
        ("not: (stdout.contains('x'))", "!((stdout.contains('x')))"),
        ("not: contains: error", '!(stdout.contains("error"))'),
        ("not: regex: ^a", '!(stdout.matches("^a"))'),
        ('contains: "quoted"', 'stdout.contains("quoted")'),
        ("contains: 'single'", 'stdout.contains("single")'),
        ("regex: '[0-9]+'", 'stdout.matches("[0-9]+")'),
        ("cel: `exitCode == 0`", "exitCode == 0"),
    ],
)
def test_validation_bullets_as_gavel_reads_them(tmp_path: Path, bullet: str, cel: str) -> None:
    (row,) = parse(tmp_path, f"### command: a\n\n```bash\necho\n```\n\n* {bullet}\n")
    assert row.expect.cel == cel


def test_last_script_fence_is_the_script_and_earlier_ones_are_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command: a\n\n```bash\necho 1\n```\n\n```bash\necho 2\n```\n"))
    assert fixture.rows[0].argv == ("bash", "-c", "echo 2\n")
    assert [str(w) for w in fixture.warnings] == [
        f"{tmp_path.as_posix()}/fixture.md:3: bash fence is not run: a later bash fence is the script"
    ]


def test_last_yaml_fence_configures_the_block(tmp_path: Path) -> None:
    fixture = parse_file(
        write(tmp_path, "### command: a\n\n```yaml\nrepeat: 2\n```\n\n```yaml\nrepeat: 3\n```\n\n```bash\necho\n```\n")
    )
    assert fixture.rows[0].repeat == 3
    assert [w.line for w in fixture.warnings] == [3]


def test_frontmatter_fence_configures_a_block_like_yaml(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\nexit 2\n```\n\n```frontmatter\nexitCode: 2\ncwd: sub\n```\n")
    assert (row.expect.exit_code, row.cwd) == (2, "sub")


@pytest.mark.parametrize("level", ["#", "##", "###", "####"])
def test_command_heading_of_any_level_starts_a_block(tmp_path: Path, level: str) -> None:
    (row,) = parse(tmp_path, f"{level} command: a\n\n```bash\necho\n```\n")
    assert (row.name, row.line) == ("a", 1)


def test_frontmatter_exec_applies_to_blocks_with_the_language_flag(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: python3\n---\n### command: a\n\n```bash\nprint(1)\n```\n")
    assert row.argv == ("python3", "-c", "print(1)\n")


def test_fence_attributes_are_ignored_with_a_warning(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command: a\n\n```bash exitCode=1\nexit 1\n```\n"))
    assert fixture.rows[0].expect.exit_code == 0
    assert "fence attributes 'exitCode=1' are ignored" in fixture.warnings[0].message


# --- standalone fences --------------------------------------------------------------


def test_fence_outside_a_command_block_is_a_row_named_after_its_heading(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ```bash
        echo first
        ```

        ## Greets

        ```sh
        echo hi
        ```

        - contains: hi

        ```python
        print(1)
        ```

        ```yaml
        exitCode: 3
        ```
        """,
    )
    assert [(r.name, r.line, r.argv[0], r.expect.cel, r.expect.exit_code) for r in rows] == [
        ("bash-block", 1, "bash", None, 0),
        ("Greets", 7, "sh", 'stdout.contains("hi")', 0),
        ("Greets (2)", 13, sys.executable, None, 3),
    ]


def test_a_validation_list_ends_a_standalone_fence(tmp_path: Path) -> None:
    fixture = parse_file(
        write(tmp_path, "## T\n\n```bash\necho\n```\n\n- contains: a\n\n* contains: b\n\n```go\nfmt.Println()\n```\n")
    )
    assert fixture.rows[0].expect.cel == 'stdout.contains("a")'
    assert [w.message for w in fixture.warnings] == [
        "validation list outside a command block: ignored",
        "go fence outside a command block is not run (as in Gavel)",
    ]


def test_block_needs_a_name(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "### command:\n\n```bash\necho\n```\n")
    assert str(error) == f"{path}:1: command: a command block needs a name (### command: NAME)"


def test_block_yaml_errors_name_the_file_line(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: e\n---\n### command: a\n\n```yaml\nrepeat: 1\nrepeat: [\n```\n")
    assert str(error).startswith(f"{path}:9: invalid YAML in command yaml")


@pytest.mark.parametrize(
    ("yaml_line", "message"),
    [
        ("repeat: 0", "repeat: must be a whole number >= 1, got 0"),
        ("timeout: 5 parsecs", "timeout: expected a duration"),
        ("exitCode: abc", "exitCode: must be an integer, got 'abc'"),
        ("repat: 3", "repat: unknown key 'repat' (did you mean 'repeat'?)"),
        ("exit_code: 1", "exit_code: unknown key 'exit_code' (did you mean 'exitCode'?)"),
        ("metrics: 3", "metrics: must be a list of metric specs"),
    ],
)
def test_bad_block_yaml_value_names_its_line(tmp_path: Path, yaml_line: str, message: str) -> None:
    path, error = parse_error(
        tmp_path, f"### command: a\n\n```yaml\nskip: false\n{yaml_line}\n```\n\n```bash\necho\n```\n"
    )
    assert str(error).startswith(f"{path}:5: {message}")


def test_block_yaml_must_be_a_mapping(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "### command: a\n\n```yaml\n- 1\n```\n\n```bash\necho\n```\n")
    assert str(error) == f"{path}:4: command yaml must be a YAML map of key: value"


def test_block_skip_and_expected_streams(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "### command: a\n\n```yaml\nskip: test -d /\nstdout: hi\nstderr: ''\n```\n\n```bash\necho hi\n```\n",
    )
    assert (row.skip_command, row.expect.stdout, row.expect.stderr) == ("test -d /", "hi", "")


def test_table_after_a_block_is_still_read(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ---
        exec: echo
        ---
        ### command: block

        ```bash
        echo
        ```

        | Name | p |
        |---|---|
        | row | 1 |
        """,
    )
    assert [(r.name, r.line) for r in rows] == [("block", 4), ("row", 12)]


def test_documentation_table_inside_a_block_does_not_end_it(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ### command: block

        | Option | Meaning |
        |---|---|
        | x | y |

        ```bash
        echo
        ```

        - cel: true
        """,
    )
    assert [(r.name, r.expect.cel) for r in rows] == [("block", "true")]


def test_blocks_end_at_the_next_heading_of_any_level(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        """
        ### command: one

        ```bash
        echo 1
        ```

        #### Notes

        - cel: exitCode == 0

        ## Next section

        - this list is prose, not a validation
        """,
    )
    assert [(r.name, r.expect.cel) for r in rows] == [("one", None)]  # as in Gavel: "Notes" ends the block


def test_fences_in_other_languages_are_ignored(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, '### command: a\n\n```json\n{"example": 1}\n```\n\n```bash\necho\n```\n')
    assert row.argv == ("bash", "-c", "echo\n")
