"""Gavel's verdicts on Gavel's rules: every corpus row gets the status in its ``gavel`` property.

The corpus (``tests/gavel/``, one small fixture per rule) runs through the
real command line and real processes; the expected statuses were derived
from Gavel's parser, runner and exec library (see its README).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import REPO, run_cli, run_local

CORPUS = REPO / "tests" / "gavel"
RULES = sorted(p for p in CORPUS.glob("*.md") if p.name != "README.md")


def test_every_rule_of_the_issue_has_a_corpus_file() -> None:
    assert len(RULES) == 18, [p.name for p in RULES]


@pytest.mark.parametrize("fixture", RULES, ids=lambda p: p.stem)
def test_each_row_gets_gavels_status(fixture: Path, tmp_path: Path) -> None:
    done, document = run_local(fixture, tmp_path)
    rows = [row for f in document["fixtures"] for row in f["rows"]]
    assert rows, done.stdout + done.stderr
    got = {row["name"]: row["status"] for row in rows}
    expected = {row["name"]: row["properties"].get("gavel") for row in rows}
    assert got == expected
    verdict = 2 if "ERR" in expected.values() else 1 if "FAIL" in expected.values() else 0
    assert done.returncode == verdict, done.stdout + done.stderr


def test_validate_names_what_assay_reads_but_does_not_run(tmp_path: Path) -> None:
    done = run_cli(["validate", str(CORPUS)], cwd=tmp_path)
    assert done.returncode == 2, done.stderr  # the row-scoped golden errors of 16-row-scoped-golden.md
    assert done.stdout == ""
    warnings = [line.split(str(CORPUS) + "/", 1)[1] for line in done.stderr.splitlines()]
    assert warnings == [
        "05-script-fences.md:5: bash fence is not run: a later bash fence is the script",
        "05-script-fences.md:21: fence attributes 'exitCode=1' are ignored (as in Gavel): "
        "set exitCode or timeout in the block's yaml",
        "05-script-fences.md:35: python fence is not run (codeBlocks: bash)",
        "07-validation-bullets.md:55: bullet 'this bullet is prose' is not a validation (no 'kind:'): ignored",
        "07-validation-bullets.md:67: list holds no validation (cel:, contains:, regex:, not:): "
        "ignored in 'a prose list is not a validation list'",
        "18-incomplete-blocks.md:13: command block 'incomplete test' has no script fence (allowed languages: bash): "
        "no row (as in Gavel)",
        "18-incomplete-blocks.md:17: a command block without a name (### command: NAME) makes no row (as in Gavel)",
        f"16-row-scoped-golden.md:6: Stdout: golden file '@golden/missing.txt' not found ({CORPUS}/golden/missing.txt)",
        f"16-row-scoped-golden.md:8: Stdout: glob '@golden/none/*.txt' matched no files (under {CORPUS})",
    ]
    done = run_cli(["validate", *(str(p) for p in CORPUS.glob("*.md") if not p.name.startswith("16-"))], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok: 18 files, 57 rows, 55 samples, 7 warnings"


def test_validate_warns_about_gavel_constructs_assay_ignores(tmp_path: Path) -> None:
    fixture = tmp_path / "gavel.md"
    fixture.write_text(
        "---\nbuild: make\nterminal: pty\n---\n\n"
        "| Variable | Meaning |\n|---|---|\n| x | y |\n\n"
        "| Name | Command | Expected Error | Query |\n|---|---|---|---|\n| a | true | boom | q |\n\n"
        "```yaml\nexitCode: 1\n```\n\n- cel: true\n\n```go\nfmt.Println()\n```\n",
        encoding="utf-8",
    )
    done = run_cli(["validate", str(fixture)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line.removeprefix(f"warning: {fixture}:") for line in done.stderr.splitlines()] == [
        "2: frontmatter key 'build' is ignored: assay does not run build commands: build before the run",
        "3: frontmatter key 'terminal' is ignored: assay allocates no pseudo-terminal: commands run with pipes "
        "(stdout and stderr apart)",
        "6: table has no Name column (columns: Variable, Meaning): not a fixture table, no row runs",
        "10: column 'Expected Error' is ignored: Gavel reads it but never checks it for commands; assay ignores it too",
        "10: column 'Query' is ignored: Gavel's AST queries are not supported; the row runs as a command",
        "14: yaml fence outside a command block configures nothing",
        "18: validation list outside a command block: ignored",
        "20: go fence outside a command block is not run (as in Gavel)",
    ]


def test_a_broken_row_is_err_with_its_error_and_the_others_run(tmp_path: Path) -> None:
    fixture = tmp_path / "golden.md"
    fixture.write_text(
        "| Name | Command | Stdout |\n|---|---|---|\n| a | echo hi | @missing.txt |\n| b | echo hi | |\n",
        encoding="utf-8",
    )
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    a, b = document["fixtures"][0]["rows"]
    message = f"{fixture}:3: Stdout: golden file '@missing.txt' not found ({tmp_path / 'missing.txt'})"
    assert (a["status"], a["error"], a["samples"]) == ("ERR", message, [])
    assert b["status"] == "PASS"
    assert "Stdout: golden file '@missing.txt' not found" in done.stdout  # the report says it too


def test_validate_lists_every_error_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("---\nrepat: 2\n---\n| Name |\n|---|\n| x |\n", encoding="utf-8")
    (tmp_path / "b.md").write_text(
        "| Name | Exit Code |\n|---|---|\n| y | z |\n| ok | 0 |\n\n### command: no script\n\ntext\n",
        encoding="utf-8",
    )
    (tmp_path / "c.md").write_text("---\nrepat: 2\ntimeout: soon\n---\n| Name |\n|---|\n| v |\n", encoding="utf-8")
    done = run_cli(["validate", str(tmp_path)], cwd=tmp_path)
    assert done.returncode == 2
    lines = [line.removeprefix("warning: ").removeprefix("error: ") for line in done.stderr.splitlines()]
    assert [line.removeprefix(f"{tmp_path}/") for line in lines] == [
        # as in Gavel, a block without a script makes no row; assay says so, naming file and line
        "b.md:6: command block 'no script' has no script fence (allowed languages: bash): no row (as in Gavel)",
        "a.md:2: repat: unknown key 'repat' (did you mean 'repeat'?)",
        "b.md:3: Exit Code: must be an integer, got 'z'",
        "c.md:2: repat: unknown key 'repat' (did you mean 'repeat'?)",  # every error of a file, not the first
        "c.md:3: timeout: expected a duration such as 90s, 20m or 1h30m, got 'soon'",
    ]


def test_two_fences_under_one_heading_are_two_rows_of_its_name_the_second_a_duplicate(tmp_path: Path) -> None:
    """Gavel's ``parser_helper_test.go``: two script fences under ``# Test Section`` are two rows, both named
    ``Test Section``. Seed 01 asks for unique names (rows are matched across runs by name): the second is ERR
    as a duplicate, as a second table row of a taken name is, and the first runs."""
    fixture = tmp_path / "helper.md"
    fixture.write_text('# Test Section\n\n```bash\necho "test"\n```\n\n```bash\necho "again"\n```\n')
    done, document = run_local(fixture, tmp_path)
    rows = [(row["name"], row["status"], row.get("error")) for f in document["fixtures"] for row in f["rows"]]
    assert rows == [
        ("Test Section", "PASS", None),
        ("Test Section (line 7)", "ERR", f"{fixture}:7: Name: duplicate row name 'Test Section' (first at line 3)"),
    ]
    assert done.returncode == 2


def test_a_folder_of_gavel_fixtures_runs_only_them(tmp_path: Path) -> None:
    """Gavel's walk (``gavel test --fixtures``) takes ``**/*.fixture.md``: a README or an agent's ``SKILL.md``
    beside them is never run; hidden folders are not searched."""
    (tmp_path / "cli.fixture.md").write_text("| Name | Command |\n|---|---|\n| a | `true` |\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.fixture.md").write_text("| Name | Command |\n|---|---|\n| b | `true` |\n")
    (tmp_path / "README.md").write_text("# How to\n\n```bash\ntouch ran-readme\n```\n")
    skill = tmp_path / ".agents" / "skills" / "x"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# Skill\n\n```bash\ntouch ran-skill\n```\n")
    done = run_cli(["run", ".", "--engine", "local", "--json", "out.json"], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [r["name"] for f in json.loads((tmp_path / "out.json").read_text())["fixtures"] for r in f["rows"]] == [
        "a",
        "b",
    ]
    assert not (tmp_path / "ran-readme").exists() and not (tmp_path / "ran-skill").exists()
