"""Command blocks (``fixtures_core.parsing.blocks``): a block's script, yaml, validations and warnings.

``block_row`` and ``is_validation_list`` are called directly; whole blocks are written to a real
file and read with ``parse_file`` (line numbers are 1-based lines of that file).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.blocks import Block, Fence, block_row, is_validation_list
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.settings import Inherited
from tests.core.parsing.fixture_files import by_name, parse, row_error, write


def no_yaml(text: str, line: int) -> tuple[dict[str, object], dict[str, int], dict[str, list[int]]]:
    raise AssertionError("a block without a yaml fence loads no yaml")


def bash(body: str, line: int, info: str = "bash") -> Fence:
    return Fence("bash", body, line, info)


# --- block_row and is_validation_list, called directly -----------------------------------


@pytest.mark.parametrize(
    ("text", "is_list"),
    [
        ("contains: x", True),
        ("not: regex: y", True),
        ("Validations: first step", True),  # Gavel: a list that says "validation" is read for them
        ("first step second step", False),
        ("CEL: x", False),  # kinds are lower-case, as Gavel spells them
    ],
)
def test_is_validation_list(text: str, is_list: bool) -> None:
    assert is_validation_list(text) is is_list


def test_block_row_joins_validations_and_warns_about_what_does_not_run() -> None:
    block = Block(
        "greets",
        3,
        standalone=False,
        scripts=[bash("echo old\n", 5), bash("echo hi\n", 9, "bash exitCode=1")],
        validations=[("cel: exitCode == 0", 13), ("contains: 'hi'", 14), ("just prose", 15)],
    )
    row, warnings = block_row(block, Inherited(repeat=2), no_yaml, "f.md")
    assert (row.file, row.line, row.name, row.repeat) == ("f.md", 3, "greets", 2)
    assert row.argv == ("bash", "-c", "echo hi\n")
    assert row.expect.cel == '(exitCode == 0) && (stdout.contains("hi"))'
    assert (row.expect.exit_code, row.expect.cel_line) == (0, 3)
    assert [(w.line, w.message) for w in warnings] == [
        (5, "bash fence is not run: a later bash fence is the script"),
        (9, "fence attributes 'exitCode=1' are ignored (as in Gavel): set exitCode or timeout in the block's yaml"),
        (15, "bullet 'just prose' is not a validation (no 'kind:'): ignored"),
    ]


def test_block_row_reads_the_last_yaml_fence_with_the_loader_at_the_line_after_the_fence() -> None:
    calls: list[tuple[str, int]] = []

    def load(text: str, line: int) -> tuple[dict[str, object], dict[str, int], dict[str, list[int]]]:
        calls.append((text, line))
        data: dict[str, object] = {"exitCode": 3, "stdout": "hi", "flavor": "spicy", "terminal": True, "repeat": 4}
        return data, {"exitCode": line, "stdout": line + 1, "flavor": line + 2, "terminal": line + 3, "repeat": 9}, {}

    block = Block(
        "a",
        1,
        standalone=False,
        scripts=[bash("echo hi\n", 12)],
        configs=[Fence("yaml", "old: 1\n", 3, "yaml"), Fence("yaml", "new\n", 6, "yaml")],
    )
    row, warnings = block_row(block, Inherited(properties={"model": "m"}), load, "f.md")
    assert calls == [("new\n", 7)]
    assert (row.expect.exit_code, row.expect.stdout, row.repeat) == (3, "hi", 4)
    assert dict(row.properties) == {"model": "m", "flavor": "spicy"}  # block keys are not properties
    assert [(w.line, w.message) for w in warnings] == [
        (3, "yaml fence is ignored: a later yaml fence configures the block"),
        (10, "terminal is ignored: no pseudo-terminal"),
    ]


def test_block_row_runs_the_script_with_the_frontmatter_exec_and_the_language_flag() -> None:
    block = Block("a", 1, standalone=False, scripts=[Fence("python", "print(1)\n", 3, "python")])
    row, _ = block_row(block, Inherited(exec="uv run python"), no_yaml, "f.md")
    assert row.argv == ("bash", "-c", 'uv run python "$@"', "bash", "-c", "print(1)\n")
    row, _ = block_row(block, Inherited(), no_yaml, "f.md")
    assert row.argv == (sys.executable, "-c", "print(1)\n")


def test_block_row_rejects_prose_that_gavel_would_read_as_cel() -> None:
    block = Block("a", 1, standalone=False, scripts=[bash("echo\n", 2)], validations=[("Note: it echoes", 6)])
    with pytest.raises(FixtureError) as caught:
        block_row(block, Inherited(), no_yaml, "f.md")
    assert (caught.value.line, caught.value.field) == (6, "validation")


# --- blocks read from a file (moved from test_parser.py) ----------------------------------


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


# Gavel's parser_ast_test.go ("when parsing error cases") at flanksource/gavel@43a9189b: a command block without
# a script, or without a name, gives no fixture and no error (buildFixtureFromCommand returns nil). assay makes
# no row either, and warns (never silently); a run whose files hold no row at all stops, as Gavel's does
# ("no fixtures found").
def test_a_command_block_without_a_script_makes_no_row_and_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, "| Name | Command |\n|---|---|\n| ok | `true` |\n\n### command: incomplete test\n\n"
                 "Validations:\n* cel: exitCode == 0\n\n```python\nprint(1)\n```\n")  # fmt: skip
    fixture = parse_file(path)
    assert [row.name for row in fixture.rows] == ["ok"]  # the valid row beside it runs
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (5, "command block 'incomplete test' has no script fence (allowed languages: bash): no row (as in Gavel)"),
        (10, "python fence is not run (codeBlocks: bash)"),
    ]


def test_unknown_interpreter_is_an_error(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "---\ncodeBlocks: [ruby]\n---\n### command: a\n\n```ruby\nputs 1\n```\n")
    assert error.startswith(f"{path}:4: codeBlocks: no interpreter known for 'ruby'")


def test_other_bullet_with_a_colon_is_cel_as_in_gavel(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- cel: true\n- exitCode == 0 ? true : false\n")
    assert row.expect.cel == "(true) && (exitCode == 0 ? true : false)"


def test_prose_bullet_with_a_colon_is_an_error_at_its_line(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "### command: a\n\n```bash\necho\n```\n\n- cel: true\n- Note: it echoes\n")
    assert error.startswith(
        f"{path}:8: validation: bullet 'Note: it echoes' is not cel:, contains:, regex: or not:, "
        "and Gavel reads it as CEL, which it is not ("
    )


@pytest.mark.parametrize("bullet", ["cel:", "contains:   "])
def test_validation_without_a_value_is_an_error(tmp_path: Path, bullet: str) -> None:
    path, error = row_error(tmp_path, f"### command: a\n\n```bash\necho\n```\n\n- {bullet}\n")
    assert error.startswith(f"{path}:7: validation: '{bullet.strip()}' needs a value")


def test_prose_bullets_are_ignored_and_warned_about(tmp_path: Path) -> None:
    fixture = parse_file(
        write(tmp_path, "### command: a\n\n```bash\necho\n```\n\nValidations:\n* just a note\n* contains: x\n")
    )
    (row,) = fixture.rows
    assert row.expect.cel == 'stdout.contains("x")'
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (8, "bullet 'just a note' is not a validation (no 'kind:'): ignored")
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


def test_frontmatter_exec_applies_to_blocks_with_the_language_flag(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: python3\n---\n### command: a\n\n```bash\nprint(1)\n```\n")
    assert row.argv == ("python3", "-c", "print(1)\n")


def test_fence_attributes_are_ignored_with_a_warning(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command: a\n\n```bash exitCode=1\nexit 1\n```\n"))
    assert fixture.rows[0].expect.exit_code == 0
    assert "fence attributes 'exitCode=1' are ignored" in fixture.warnings[0].message


def test_a_command_block_without_a_name_makes_no_row_and_a_warning(tmp_path: Path) -> None:
    fixture = parse_file(write(tmp_path, "### command:\n\n```bash\n--help\n```\n"))
    assert fixture.rows == ()
    assert [(w.line, w.message) for w in fixture.warnings] == [
        (1, "a command block without a name (### command: NAME) makes no row (as in Gavel)")
    ]


def test_block_yaml_errors_name_the_file_line(tmp_path: Path) -> None:
    text = "---\nexec: e\n---\n### command: a\n\n```yaml\nrepeat: 1\nrepeat: [\n```\n\n```bash\necho\n```\n"
    path, error = row_error(tmp_path, text)
    assert error.startswith(f"{path}:9: invalid YAML in command yaml")


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
    path, error = row_error(
        tmp_path, f"### command: a\n\n```yaml\nskip: false\n{yaml_line}\n```\n\n```bash\necho\n```\n"
    )
    assert error.startswith(f"{path}:5: {message}")


def test_block_yaml_must_be_a_mapping(tmp_path: Path) -> None:
    path, error = row_error(tmp_path, "### command: a\n\n```yaml\n- 1\n```\n\n```bash\necho\n```\n")
    assert error == f"{path}:4: command yaml must be a YAML map of key: value"


def test_block_skip_and_expected_streams(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "### command: a\n\n```yaml\nskip: test -d /\nstdout: hi\nstderr: ''\n```\n\n```bash\necho hi\n```\n",
    )
    assert (row.skip_command, row.expect.stdout, row.expect.stderr) == ("test -d /", "hi", "")
