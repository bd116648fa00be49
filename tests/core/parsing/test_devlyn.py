"""Reading devlyn benchmark folders (seed 04): fixture folders as a suite's cases, with devlyn's rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.devlyn import find_bench, read_fixture
from fixtures_core.parsing.matrix import fixture_paths, load_matrix
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.validate import validate_paths
from fixtures_core.spec import RowSpec

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "devlyn"


def fixture(root: Path, name: str, category: str = "trivial", **expected: object) -> Path:
    """A fixture folder with all six files, whose prompts repeat its intent (no drift)."""
    folder = root / "fixtures" / name
    folder.mkdir(parents=True)
    intent = f"Add the {name} feature to the command line."
    metadata = {"id": name, "category": category, "difficulty": "trivial", "timeout_seconds": 600,
                "required_tools": ["sh"], "intent": intent}  # fmt: skip
    (folder / "metadata.json").write_text(json.dumps(metadata))
    (folder / "spec.md").write_text(
        f'---\nid: "{name}"\n---\n\n# {name}\n\n## Context\n\n{intent}\n\n## Requirements\n'
    )
    (folder / "task.txt").write_text(intent + "\n")
    (folder / "expected.json").write_text(json.dumps(expected or {"verification_commands": [{"cmd": "true"}]}))
    (folder / "NOTES.md").write_text("why\n")
    (folder / "setup.sh").write_text("#!/usr/bin/env bash\n")
    (folder / "setup.sh").chmod(0o755)
    return folder


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    root = tmp_path / "auto-resolve"
    (root / "fixtures" / "test-repo").mkdir(parents=True)
    (root / "RUBRIC.md").write_text("rubric\n")
    fixture(root, "F1-trivial")
    fixture(root, "F8-known-limit", category="edge")
    retired = root / "fixtures" / "retired"
    fixture(root, "retired/F7-old")  # not F*: devlyn's run-suite.sh never discovers it
    assert (retired / "F7-old" / "metadata.json").is_file()
    return root


def rows_of(path: Path) -> list[RowSpec]:
    """The rows a run of ``path`` runs (a retired fixture is read, but runs only when its id is given)."""
    return list(load_matrix([str(path)]).rows)


def test_a_benchmark_is_found_from_its_folder_or_its_fixtures_folder(bench: Path, tmp_path: Path) -> None:
    found = find_bench(bench)
    assert found is not None and (found.root, found.fixtures) == (bench, bench / "fixtures")
    also = find_bench(bench / "fixtures")
    assert also is not None and also.root == bench
    assert find_bench(tmp_path) is None
    assert fixture_paths([str(bench)]) == [bench]  # the folder itself, not its Markdown files


def test_each_fixture_runs_once_per_default_arm_with_its_prompt(bench: Path) -> None:
    rows = rows_of(bench)

    assert [r.name for r in rows] == [
        f"{case}/{arm}" for case in ("F1-trivial", "F8-known-limit") for arm in ("variant", "solo_claude", "bare")
    ]  # retired/ does not run
    retired = [r.name for r in parse_file(bench).rows if r.ab is not None and r.ab.retired]
    assert retired == ["F7-old/variant", "F7-old/solo_claude", "F7-old/bare"]  # read, for replay by id
    variant, solo, bare = rows[:3]
    assert variant.argv == ("claude", "-p", "{{ .prompt }}", "--dangerously-skip-permissions")
    assert variant.ab is not None and solo.ab is not None and bare.ab is not None
    assert (variant.ab.prompt, solo.ab.prompt, bare.ab.prompt) == ("spec", "spec", "task")  # seed 04
    assert variant.ab.checks.documents["spec"].endswith("F1-trivial/spec.md")
    assert variant.ab.arm_timeout_s == 600.0
    assert variant.properties["category"] == "trivial" and variant.properties["arm"] == "variant"
    suite = variant.ab.suite
    assert (suite.compare, suite.source, suite.workspace) == (
        ("variant", "bare"),
        "devlyn",
        str(bench / "fixtures/test-repo"),
    )
    assert (
        suite.judge is not None and suite.judge.protocol == "devlyn" and suite.judge.rubric == str(bench / "RUBRIC.md")
    )
    assert suite.judge.command[:2] == ("codex", "exec")
    assert suite.disqualify == ("verify_failed", "arm_failed", "timed_out", "self_verdict")
    assert suite.self_verdict is not None and suite.self_verdict.exempt == ("bare",)
    assert [g.name for g in suite.gates][:2] == [
        "no variant disqualifier",
        "every e2e fixture (F9) has variant margin >= +5",
    ]
    assert rows[3].ab is not None and rows[3].ab.known_limit == (-3.0, 3.0)  # category edge


def test_expected_json_becomes_the_cases_checks_with_devlyns_semantics(bench: Path) -> None:
    folder = fixture(
        bench,
        "F2-checks",
        verification_commands=[
            {
                "cmd": 'node "$BENCH_FIXTURE_DIR/verifiers/x.js"',
                "exit_code": 1,
                "stdout_contains": ["ok"],
                "stdout_not_contains": ["undefined"],
                "timeout_sec": 90,
                "contract_refs": ["a requirement"],
            },
        ],  # fmt: skip
        forbidden_patterns=[{"pattern": "catch\\s*\\(", "files": ["bin/cli.js"]}],
        required_files=["bin/cli.js"],
        forbidden_files=["package-lock.json"],
        spec_output_files=["bin/**"],
    )

    checks = read_fixture(folder).checks

    (command,) = checks.verify
    assert (command.exit_code, command.stdout_contains, command.stdout_not_contains) == (1, ("ok",), ("undefined",))
    assert (command.timeout_s, command.shell, command.templated) == (90.0, "sh", False)
    (pattern,) = checks.forbidden
    assert (pattern.severity, pattern.scope, pattern.files) == ("warning", "diff", ("bin/cli.js",))  # devlyn's default
    assert (checks.required_files, checks.forbidden_files, checks.max_deps_added) == (
        ("bin/cli.js",),
        ("package-lock.json",),
        0,  # max_deps_added is 0 unless expected.json says otherwise
    )
    assert checks.verify_env == {"BENCH_FIXTURE_DIR": str(folder.resolve())}


@pytest.mark.parametrize(
    ("expected", "message"),
    [
        ({"verification_command": []}, "expected.json: verification_command: unknown key"),
        ({"verification_commands": [{"cmd": "x", "stdout_contain": []}]}, "verification_commands[0].stdout_contain"),
        ({"verification_commands": [{"cmd": "x", "timeout_sec": 0}]}, "timeout_sec: must be a whole number from 1"),
        ({"forbidden_patterns": [{"pattern": "("}]}, "forbidden_patterns[0].pattern: invalid regular expression"),
        ({"forbidden_patterns": [{"pattern": "x", "severity": "fatal"}]}, "forbidden_patterns[0].severity"),
        ({"max_deps_added": -1}, "max_deps_added: must be a whole number >= 0"),
    ],
)
def test_a_wrong_expected_json_names_its_file_and_field(bench: Path, expected: dict[str, object], message: str) -> None:
    folder = fixture(bench, "F3-wrong", **expected)
    with pytest.raises(FixtureError) as caught:
        read_fixture(folder)
    assert str(caught.value).startswith(str(folder / "expected.json"))
    assert message in str(caught.value)


def test_a_broken_fixture_makes_only_its_own_rows_err(bench: Path) -> None:
    broken = fixture(bench, "F3-broken")
    (broken / "metadata.json").write_text('{"id": "F3-broken",\n "timeout_seconds": }')

    rows = rows_of(bench)

    errors = {r.name: r.error for r in rows if r.error}
    assert set(errors) == {"F3-broken/variant", "F3-broken/solo_claude", "F3-broken/bare"}
    assert errors["F3-broken/bare"] == f"{broken / 'metadata.json'}:2: not JSON: Expecting value"
    assert len(rows) == 9  # F1 and F8 still run


def test_a_missing_fixture_file_is_named(bench: Path) -> None:
    folder = fixture(bench, "F4-no-task")
    (folder / "task.txt").unlink()
    (error,) = {r.error for r in rows_of(bench) if r.error}
    assert error == f"{folder / 'task.txt'}: fixture missing required file (see fixtures/SCHEMA.md)"


def test_a_suite_file_names_the_folder_and_its_arms(bench: Path) -> None:
    suite = bench / "suite.md"
    suite.write_text(
        "---\ndevlyn: .\nrepeat: 2\narms:\n  pipeline: {exec: agent, args: [full, '{{ .prompt }}']}\n"
        "  plain: {exec: agent, args: [bare, '{{ .prompt }}'], input: task}\n"
        "judge: {command: python3 judge.py}\ndisqualify: [verify_failed]\n---\n"
    )

    rows = rows_of(suite)

    assert [r.name for r in rows] == [
        f"{c}/{a}" for c in ("F1-trivial", "F8-known-limit") for a in ("pipeline", "plain")
    ]
    first = rows[0]
    assert first.ab is not None and first.repeat == 2 and first.argv == ("agent", "full", "{{ .prompt }}")
    assert [r.ab.prompt for r in rows[:2] if r.ab] == ["spec", "task"]
    suite_spec = first.ab.suite
    assert suite_spec.compare == ("pipeline", "plain")
    assert suite_spec.judge is not None and suite_spec.judge.protocol == "devlyn"  # the folder's judge protocol
    assert suite_spec.judge.rubric == str(bench / "RUBRIC.md")
    assert suite_spec.disqualify == ("verify_failed",)


def test_a_suite_file_without_a_benchmark_is_an_error(tmp_path: Path) -> None:
    suite = tmp_path / "suite.md"
    suite.write_text("---\ndevlyn: nowhere\n---\n")
    with pytest.raises(FixtureError, match=r"suite.md:2: devlyn: no devlyn benchmark at nowhere"):
        parse_file(suite)


def test_an_arms_input_is_spec_or_task(bench: Path) -> None:
    suite = bench / "suite.md"
    suite.write_text("---\ndevlyn: .\narms:\n  a: {input: notes}\n  b: {}\n---\n")
    with pytest.raises(FixtureError, match=r"arms.a.input: must be one of spec, task, got 'notes'"):
        parse_file(suite)


def test_validate_lints_drift_missing_files_and_ids(bench: Path) -> None:
    drifted = fixture(bench, "F5-drift")
    (drifted / "task.txt").write_text("Make it better.\n")
    (drifted / "NOTES.md").unlink()
    (drifted / "setup.sh").chmod(0o644)
    metadata = json.loads((drifted / "metadata.json").read_text())
    (drifted / "metadata.json").write_text(json.dumps({**metadata, "id": "F5-other"}))

    matrix, errors = validate_paths([str(bench)])

    assert errors == []
    warnings = [str(w).removeprefix(str(drifted) + "/") for f in matrix.files for w in f.warnings]
    assert warnings == [
        "NOTES.md:1: missing (SCHEMA.md: all six files)",
        "setup.sh:1: is not executable (chmod +x)",
        "metadata.json:1: id 'F5-other' does not name the folder 'F5-drift'",
        # "Add the F5-drift feature to the command line." has 8 distinct words; "Make it better." holds none
        "task.txt:1: spec/task drift: task.txt holds 0% of the words of metadata.json's intent "
        "'Add the F5-drift feature to the command line.' (at least 60%)",
    ]


def test_the_example_benchmark_parses_without_lint_warnings() -> None:
    matrix = load_matrix([str(EXAMPLE / "suite.md")])
    (found,) = matrix.files
    assert found.warnings == ()
    assert len(found.rows) == 8  # 4 fixtures x 2 arms
