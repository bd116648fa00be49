"""Whole documents read into rows (``fixtures_core.parsing.parser``): files, line numbers, frontmatter
syntax, and how tables, command blocks and standalone fences follow one another.

Tables, command blocks and inherited settings have their own files (test_tables, test_blocks,
test_settings). Every fixture is written to a real file under ``tmp_path`` and read with ``parse_file``.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.validate import validate_matrix
from fixtures_core.spec import Matrix
from tests.core.parsing.fixture_files import parse, parse_error, write

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


# --- frontmatter ------------------------------------------------------------------------


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


# --- command blocks ---------------------------------------------------------------------------


def test_list_without_validations_in_a_block_is_ignored_and_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- first step\n- second step\n"))
    assert fixture.rows[0].expect.cel is None
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (7, "list holds no validation (cel:, contains:, regex:, not:): ignored in 'a'")
    ]


@pytest.mark.parametrize("level", ["#", "##", "###", "####"])
def test_command_heading_of_any_level_starts_a_block(tmp_path: Path, level: str) -> None:
    (row,) = parse(tmp_path, f"{level} command: a\n\n```bash\necho\n```\n")
    assert (row.name, row.line) == ("a", 1)


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
        ("Greets", 13, sys.executable, None, 3),  # as Gavel names it; validate makes it a duplicate (seed 01)
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


# --- daemon -------------------------------------------------------------------------------


def test_a_daemon_is_read_as_a_command_or_a_map(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\ndaemon: serve {{.port}}\n---\n| Name | Command |\n|---|---|\n| a | x {{.port}} |\n")
    assert row.daemon is not None and (row.daemon.command, row.daemon.ready_s) == ("serve {{.port}}", 30.0)
    assert row.daemon.where.endswith("fixture.md:2")
    (row,) = parse(
        tmp_path, "---\ndaemon: {command: serve, ready: 2m}\n---\n| Name | Command |\n|---|---|\n| a | x |\n"
    )
    assert row.daemon is not None and (row.daemon.command, row.daemon.ready_s) == ("serve", 120.0)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{command: serve, wait: 2s}", "daemon.wait: unknown key (known: command, ready)"),
        ("{ready: 2s}", "daemon: needs command: the service to start"),
        ("{command: serve, ready: soon}", "daemon.ready: "),
        ("[serve]", "daemon: must be a command, or a map with command and ready"),
        ("' '", "daemon: the command is empty"),
    ],
)
def test_a_bad_daemon_stops_the_file_at_its_line(tmp_path: Path, value: str, message: str) -> None:
    path, error = parse_error(
        tmp_path, f"---\nrepeat: 1\ndaemon: {value}\n---\n| Name | Command |\n|---|---|\n| a | x |\n"
    )
    assert str(error).startswith(f"{path}:3: {message}")


def test_port_without_a_daemon_says_where_it_comes_from(tmp_path: Path) -> None:
    path = write(tmp_path, "| Name | Command |\n|---|---|\n| a | echo {{.port}} |\n")
    (error,) = validate_matrix(Matrix(files=(parse_file(path),)))
    assert "port" in str(error) and "a frontmatter daemon: sets it (this file has none)" in str(error)


# --- sampling and pass_rate ---------------------------------------------------------------


def test_adaptive_sampling_takes_the_rows_repeat_as_max_and_columns_override(tmp_path: Path) -> None:
    rows = parse(
        tmp_path,
        "---\nrepeat: 12\nsampling: adaptive\npass_rate: 0.8\n---\n"
        "| Name | Command | Sampling | Pass Rate |\n|---|---|---|---|\n"
        "| a | true | | |\n| b | true | fixed | 90% |\n| c | true | | 1 |\n",
    )
    a, b, c = rows
    assert a.sampling is not None and (a.sampling.max, a.sampling.min, a.repeat, a.pass_rate) == (12, 3, 12, 0.8)
    assert b.sampling is not None and not b.sampling.adaptive and (b.repeat, b.pass_rate) == (12, 0.9)
    assert c.pass_rate == 1.0


def test_a_budgeted_row_may_take_twice_its_max_more_unless_it_says(tmp_path: Path) -> None:
    text = "---\nrepeat: 10\nsampling: {budget: fixed}\n---\n| Name | Command | Sampling |\n|---|---|---|\n"
    text += "| a | x | |\n| c | x | adaptive |\n\n### command: b\n\n"
    a, c, b = parse(tmp_path, text + "```yaml\nsampling: {budget: fixed, max_extra: 0}\n```\n\n```bash\ntrue\n```\n")
    assert a.budgeted and (a.repeat, a.most_samples, a.longest_s) == (10, 30, 3 * a.timeout_s)  # max 10 + 2 x 10
    assert b.budgeted and b.most_samples == 10  # max_extra: 0 takes no extra, and leaves what it does not take
    assert not c.budgeted and c.most_samples == 10  # a row's own sampling replaces the file's


def test_adaptive_sampling_without_a_repeat_takes_at_most_20(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path, "---\nsampling: {min: 5, confidence: 0.99}\n---\n| Name | Command |\n|---|---|\n| a | x |\n"
    )
    assert row.sampling is not None and (row.sampling.min, row.sampling.max, row.repeat) == (5, 20, 20)
    assert row.sampling.confidence == 0.99


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("sampling: sometimes", "sampling: must be adaptive, fixed, or a map of mode, min, max, confidence, margin"),
        ("sampling: {min: 5, max: 2}", "sampling.max: max 2 is below min 5"),
        ("sampling: {confidence: 1}", "sampling.confidence: must be a number between 0.5 and 1 (exclusive)"),
        ("sampling: {margin: 0.6}", "sampling.margin: must be a number between 0 and 0.5 (exclusive)"),
        (
            "sampling: {spare: 1}",
            "sampling.spare: unknown key (known: mode, min, max, confidence, margin, budget, max_extra)",
        ),
        ("sampling: {budget: 500}", "sampling.budget: must be fixed (spend at most what fixed k would; a number is"),
        ("sampling: {budget: fixed, max_extra: -1}", "sampling.max_extra: must be a whole number >= 0"),
        ("pass_rate: 1.5", "pass_rate: must be a share of samples in (0, 1] such as 0.8 or 80%, got 1.5"),
        ("pass_rate: most", "pass_rate: must be a share of samples in (0, 1] such as 0.8 or 80%, got 'most'"),
    ],
)
def test_bad_sampling_or_pass_rate_names_the_key(tmp_path: Path, value: str, message: str) -> None:
    path, error = parse_error(tmp_path, f"---\n{value}\n---\n| Name | Command |\n|---|---|\n| a | x |\n")
    assert str(error).startswith(f"{path}:2: {message}")
