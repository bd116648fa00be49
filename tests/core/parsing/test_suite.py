"""Reading A/B suites (``fixtures_core.parsing.suite``): arms, suite keys, known limits, requires.

Fixtures are written to real files; every error names file, line and field.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError, UsageError
from fixtures_core.parsing.matrix import select
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.suite import with_judge
from fixtures_core.parsing.validate import validate_matrix
from fixtures_core.spec import Matrix

SUITE = """
---
arms:
  variant:
    exec: agent
    args: ["--careful", "{{ .task }}"]
    prompt: spec.md
    env: {MODE: pipeline}
  bare:
    args: ["{{ .task }}"]
    prompt: task.txt
exec: base-agent
env: {SHARED: "1"}
compare: [variant, bare]
workspace: repo
setup: ./setup.sh {{ .case }}
verify:
  - test -f done.txt
  - run: ./check.sh
    exitCode: 3
    contains: [ok]
    notContains: [FAIL]
    rows: [F1*]
forbidden:
  - pattern: 'catch\\s*\\{\\s*\\}'
    description: silent catch
  - pattern: TODO
    severity: critical
    files: ["src/*"]
forbidden_files: ["package-lock.json"]
judge:
  command: python3 judge.py
  axes: [spec, quality]
  swap: true
  seed: 7
gates:
  - name: floor
    cel: rows.all(r, r.known_limit || r.margin >= 5.0)
  - name: drift
    cel: "!has(suite.baseline_margin) || suite.margin >= suite.baseline_margin - 3.0"
    severity: soft
---

| Name | task | Known Limit |
|---|---|---|
| F1 | add a flag | |
| F8 | ambiguous | [-3, 3] |
"""


def write(tmp_path: Path, text: str, name: str = "suite.md") -> Path:
    (tmp_path / "repo").mkdir(exist_ok=True)
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def matrix(tmp_path: Path, text: str) -> Matrix:
    return Matrix(files=(parse_file(write(tmp_path, text)),))


def test_every_row_runs_once_per_arm_named_case_slash_arm(tmp_path: Path) -> None:
    rows = parse_file(write(tmp_path, SUITE)).rows
    assert [r.name for r in rows] == ["F1/variant", "F1/bare", "F8/variant", "F8/bare"]
    variant, bare = rows[0], rows[1]
    assert variant.argv == ("agent", "--careful", "{{ .task }}")  # the arm's exec and args
    assert bare.argv == ("base-agent", "{{ .task }}")  # no exec of its own: the frontmatter's
    assert dict(variant.env) == {"SHARED": "1", "MODE": "pipeline"}
    assert variant.properties["arm"] == "variant" and variant.properties["case"] == "F1"
    assert (variant.properties["prompt"], bare.properties["prompt"]) == ("spec.md", "task.txt")
    assert variant.ab is not None and (variant.ab.case, variant.ab.arm) == ("F1", "variant")
    # the judge sees what both arms share, never an arm's own properties
    assert dict(variant.ab.shared) == {"task": "add a flag", "case": "F1"}
    assert "known limit" not in variant.properties


def test_suite_keys_are_read(tmp_path: Path) -> None:
    row = parse_file(write(tmp_path, SUITE)).rows[0]
    assert row.ab is not None
    suite = row.ab.suite
    assert suite.pair == ("variant", "bare")
    assert (suite.workspace, suite.setup) == ("repo", "./setup.sh {{ .case }}")
    assert [v.run for v in suite.verify] == ["test -f done.txt", "./check.sh"]
    check = suite.verify[1]
    assert (check.exit_code, check.contains, check.not_contains, check.rows) == (3, ("ok",), ("FAIL",), ("F1*",))
    assert [(f.severity, f.files) for f in suite.forbidden] == [("disqualifier", ()), ("critical", ("src/*",))]
    assert suite.forbidden_files == ("package-lock.json",)
    assert suite.judge is not None
    assert suite.judge.command == ("bash", "-c", "python3 judge.py")
    assert (suite.judge.axes, suite.judge.swap, suite.judge.seed, suite.judge.blind) == (
        ("spec", "quality"),
        True,
        7,
        True,
    )
    assert [(g.name, g.severity) for g in suite.gates] == [("floor", "hard"), ("drift", "soft")]


def test_known_limit_column_holds_a_margin_range(tmp_path: Path) -> None:
    rows = parse_file(write(tmp_path, SUITE)).rows
    assert rows[0].ab is not None and rows[0].ab.known_limit is None
    assert rows[2].ab is not None and rows[2].ab.known_limit == (-3.0, 3.0)


def test_a_filter_keeps_every_arm_of_a_selected_case(tmp_path: Path) -> None:
    selected = select(matrix(tmp_path, SUITE), ("F8/bare",))
    assert [r.name for r in selected.rows] == ["F8/variant", "F8/bare"]


def test_a_valid_suite_validates(tmp_path: Path) -> None:
    assert validate_matrix(matrix(tmp_path, SUITE)) == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("compare: [variant, bare]", "compare: [variant, nope]"), ":13: compare: 'nope' is not an arm"),
        (("compare: [variant, bare]", "compare: [variant, variant]"), "compare: names two different arms"),
        (('    args: ["{{ .task }}"]', "    arg: [x]"), "unknown key 'arg' (did you mean 'args'?)"),
        (("  - pattern: 'catch", "  - pattern: '(catch"), "forbidden.pattern: invalid regular expression"),
        (("    exitCode: 3", "    exit: 3"), "verify.exit: unknown key (known: run, exitCode"),
        (("  swap: true", "  swap: maybe"), "judge.swap: must be true or false"),
        (("cel: rows.all(r, r.known_limit || r.margin >= 5.0)", "cel: rows.all(r, r.margin >="), "gates[floor].cel:"),
        (("    severity: soft", "    severity: loud"), "gates[drift].severity: must be hard or soft"),
        (
            ("| F8 | ambiguous | [-3, 3] |", "| F8 | ambiguous | [3, -3] |"),
            ":46: known limit: low 3 is greater than high -3",
        ),
        (("| F8 | ambiguous | [-3, 3] |", "| F8 | ambiguous | wide |"), ":46: known limit: must be a margin range"),
        (("| F8 | ambiguous | [-3, 3] |", f"| F8 | ambiguous | {'[' * 5000} |"), ":46: known limit: must be a margin"),
    ],
)
def test_bad_suite_keys_name_file_line_and_field(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    old, new = change
    assert old in SUITE
    path = write(tmp_path, SUITE.replace(old, new))
    try:
        broken = [row for row in parse_file(path).rows if row.error is not None]
    except FixtureError as exc:  # the suite's own keys stop the file
        text = str(exc)
    else:  # a cell of one case (its known limit) breaks only that case's rows, one per arm
        assert len(broken) == 2 and {row.ab.case for row in broken if row.ab} == {"F8"}, broken
        text = str(broken[0].error)
    assert message in text
    assert text.startswith(str(tmp_path / "suite.md"))


@pytest.mark.parametrize(("data", "ok"), [("spec\ncafé\n".encode(), True), (b"spec\ncaf\xe9\n", False)])
def test_a_rubric_that_is_not_utf8_is_refused_when_the_suite_loads(tmp_path: Path, data: bytes, ok: bool) -> None:
    (tmp_path / "RUBRIC.md").write_bytes(data)
    text = SUITE.replace("  axes: [spec, quality]", "  rubric: RUBRIC.md\n  axes: [spec, quality]")
    if ok:
        suites = [row.ab.suite for row in parse_file(write(tmp_path, text)).rows if row.ab]
        assert {s.judge.rubric for s in suites if s.judge is not None} == {str(tmp_path / "RUBRIC.md")}
        return
    # "spec\ncaf" is 8 bytes: the byte 0xe9 is at offset 8, on the rubric's line 2 (judge: is the suite's line 30)
    with pytest.raises(FixtureError) as caught:
        parse_file(write(tmp_path, text))
    assert str(caught.value) == (
        f"{tmp_path / 'suite.md'}:30: judge.rubric: {tmp_path / 'RUBRIC.md'}:2: not UTF-8 text (byte 8)"
    )


def test_a_judge_needs_two_arms(tmp_path: Path) -> None:
    text = "---\narms: {only: {}}\nexec: x\njudge: j\n---\n| Name |\n|---|\n| a |\n"
    with pytest.raises(FixtureError, match=r":4: judge: a judge compares arms: declare at least two"):
        parse_file(write(tmp_path, text))


def test_setup_without_a_workspace_is_an_error(tmp_path: Path) -> None:
    text = "---\nexec: x\nsetup: make\n---\n| Name |\n|---|\n| a |\n"
    with pytest.raises(FixtureError, match=r":3: setup: runs in a fresh copy of the workspace: set workspace"):
        parse_file(write(tmp_path, text))


def test_arm_and_case_are_reserved_columns(tmp_path: Path) -> None:
    arm_column = "---\nexec: x\narms: {a: {}, b: {}}\n---\n| Name | arm |\n|---|---|\n| r | z |\n"
    with pytest.raises(FixtureError, match=r":7: arm: 'arm' is set by assay"):
        parse_file(write(tmp_path, arm_column))
    case_column = "---\nexec: x\narms: {a: {}, b: {}}\n---\n| Name | case |\n|---|---|\n| r | z |\n"
    errors = {row.error for row in parse_file(write(tmp_path, case_column)).rows}
    assert len(errors) == 1 and ":7: case: 'case' is set by assay" in str(errors.pop())


def test_a_missing_required_tool_skips_the_row_with_the_reason(tmp_path: Path) -> None:
    text = (
        "---\nexec: x\narms: {a: {}, b: {}}\nrequires: [sh]\n---\n"
        "| Name | requires |\n|---|---|\n| ok | |\n| gone | no-such-tool-assay-test, sh |\n"
    )
    rows = parse_file(write(tmp_path, text)).rows
    assert [r.skip for r in rows[:2]] == [None, None]
    assert rows[2].skip == rows[3].skip == "requires no-such-tool-assay-test: not found on PATH"


def test_validation_names_a_missing_workspace_and_unknown_template_names(tmp_path: Path) -> None:
    text = SUITE.replace("workspace: repo", "workspace: nowhere").replace("{{ .case }}", "{{ .cas }}")
    errors = [str(e) for e in validate_matrix(matrix(tmp_path, text))]
    assert any("workspace: row 'F1/variant': no such folder:" in e and e.endswith("nowhere") for e in errors)
    assert any("setup: row 'F1/variant': unknown template name '.cas'" in e for e in errors)


def test_the_judge_command_sees_only_what_the_arms_share(tmp_path: Path) -> None:
    text = SUITE.replace("command: python3 judge.py", "command: python3 judge.py {{ .prompt }}")
    errors = [str(e) for e in validate_matrix(matrix(tmp_path, text))]
    assert any("judge.command: row 'F1/variant': unknown template name '.prompt'" in e for e in errors)


def test_workspace_variables_outside_a_workspace_suite_are_an_error(tmp_path: Path) -> None:
    text = "| Name | Command | CEL |\n|---|---|---|\n| a | true | `verify_score == 1.0` |\n"
    errors = [str(e) for e in validate_matrix(matrix(tmp_path, text))]
    assert errors == [f"{tmp_path / 'suite.md'}:3: CEL: 'verify_score' exists only in a suite with a workspace "
                      "(set workspace: DIR), in 'verify_score == 1.0'"]  # fmt: skip


def test_with_judge_replaces_every_suite_judge(tmp_path: Path) -> None:
    replaced = with_judge(matrix(tmp_path, SUITE), "claude -p 'judge this'")
    for row in replaced.rows:
        assert row.ab is not None and row.ab.suite.judge is not None
        assert row.ab.suite.judge.command == ("bash", "-c", "claude -p 'judge this'")
        assert row.ab.suite.judge.swap is True  # the rest of the judge stays
    plain = Matrix(files=(parse_file(write(tmp_path, "| Name | Command |\n|---|---|\n| a | true |\n", "p.md")),))
    with pytest.raises(UsageError, match="--judge: no A/B suite"):
        with_judge(plain, "j")


def test_the_seeds_ship_gates_in_readme_are_valid(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    start = readme.index("gates:\n  - name: no variant disqualifier")
    gates = readme[start : readme.index("```", start)]
    arms = "arms: {variant: {}, solo: {}, bare: {}}"
    text = f"---\nexec: x\n{arms}\ncompare: [variant, bare]\n{gates}---\n| Name |\n|---|\n| F9-e2e |\n"

    rows = parse_file(write(tmp_path, text)).rows

    assert rows[0].ab is not None
    assert [g.severity for g in rows[0].ab.suite.gates] == ["hard", "hard", "hard", "hard", "soft", "soft"]


CHECKS = """
---
arms: {variant: {exec: a}, bare: {exec: b}}
workspace: repo
verify:
  - run: node cli.js
    stdoutContains: [ok]
    stdoutNotContains: [undefined]
required_files: [cli.js, {path: tests/flag.test.js, rows: [F1]}]
max_deps_added: 0
disqualify: [arm_failed, verify_failed]
---

| Name |
|---|
| F1 |
| F2 |
"""


def test_required_files_deps_and_disqualifying_outcomes_are_checks_of_each_case(tmp_path: Path) -> None:
    rows = matrix(tmp_path, CHECKS).rows

    f1, f2 = rows[0].ab, rows[2].ab
    assert f1 is not None and f2 is not None
    assert f1.checks.required_files == ("cli.js", "tests/flag.test.js")
    assert f2.checks.required_files == ("cli.js",)  # the test file is required of F1 only
    assert (f1.checks.max_deps_added, f1.suite.disqualify) == (0, ("verify_failed", "arm_failed"))
    (verify,) = f1.checks.verify
    assert (verify.stdout_contains, verify.stdout_not_contains, verify.contains) == (("ok",), ("undefined",), ())


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("verification_commands: []", "verification_commands: unknown suite key 'verification_commands' (seed 04's"),
        ("forbidden_patterns: []", "forbidden_patterns: unknown suite key 'forbidden_patterns' .* use forbidden"),
        ("max_deps_added: -1", "max_deps_added: must be a whole number >= 0, got -1"),
        ("disqualify: [judged_badly]", "disqualify: unknown rule 'judged_badly' (known: verify_failed, arm_failed"),
        ("accept_missing: yes please", "accept_missing: must be true or false"),
    ],
)
def test_seed_04_names_that_are_not_suite_keys_are_errors_naming_the_key(
    tmp_path: Path, line: str, message: str
) -> None:
    text = f"---\narms: {{a: {{}}, b: {{}}}}\nworkspace: repo\n{line}\n---\n| Name |\n|---|\n| F1 |\n"
    pattern = message.replace("(", r"\(").replace("[", r"\[") if ".*" not in message else message
    with pytest.raises(FixtureError, match=r"suite.md:\d+: " + pattern):
        parse_file(write(tmp_path, text))


def test_an_arms_input_needs_a_devlyn_folder(tmp_path: Path) -> None:
    text = "---\narms: {a: {input: spec}, b: {}}\n---\n| Name |\n|---|\n| F1 |\n"
    with pytest.raises(FixtureError, match="arms.a.input: names a case document, which only a suite with devlyn: has"):
        parse_file(write(tmp_path, text))
