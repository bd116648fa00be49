"""One attempt of an A/B suite row (``fixtures_core.execution.attempt``), through ``run_row``.

Real workspaces, real git, real ``bash`` arms of a few milliseconds each.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.parser import parse_file
from fixtures_core.results import RowResult
from fixtures_core.spec import RowSpec


def suite_rows(tmp_path: Path, frontmatter: str, table: str = "| Name |\n|---|\n| task |\n") -> list[RowSpec]:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / "base.txt").write_text("base\n")
    path = tmp_path / "suite.md"
    path.write_text("---\n" + textwrap.dedent(frontmatter).strip() + "\n---\n\n" + table, encoding="utf-8")
    return list(parse_file(path).rows)


def run(row: RowSpec, tmp_path: Path, dry_run: bool = False) -> RowResult:
    settings = RunSettings(run_id="t", evidence_dir=str(tmp_path / "run"), dry_run=dry_run)
    with Containment() as containment:
        return run_row(row, settings, containment)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_an_attempt_leaves_its_evidence_on_disk_and_in_cel(tmp_path: Path) -> None:
    (row,) = suite_rows(
        tmp_path,
        """
        exec: bash
        args: ["-c", "echo done > out.txt; echo said; echo warned >&2"]
        workspace: repo
        setup: echo prepared > setup-made.txt
        verify:
          - test -f out.txt
          - run: cat out.txt
            contains: [done]
        """,
        "| Name | CEL |\n|---|---|\n| task | `verify_score == 1.0 && changed_files == ['out.txt'] "
        "&& diff.contains('+done') && verify[1].passed && !disqualified && findings.size() == 0` |\n",
    )

    result = run(row, tmp_path)

    assert result.status == "PASS", result.error
    attempt = result.samples[0].attempt
    assert attempt is not None
    assert attempt.evidence == "attempts/task/-/0"
    assert (attempt.changed_files, attempt.verify_score, attempt.disqualified) == (("out.txt",), 1.0, False)
    folder = tmp_path / "run" / attempt.evidence
    assert "+done" in (folder / "diff.patch").read_text()
    assert "setup-made.txt" not in (folder / "diff.patch").read_text()  # setup is part of the starting state
    assert lines(folder / "changed-files.txt") == ["out.txt"]
    assert [v["passed"] for v in json.loads((folder / "verify.json").read_text())] == [True, True]
    assert (folder / "stdout.txt").read_text() == "said\n"
    assert (folder / "stderr.txt").read_text() == "warned\n"
    assert (folder / "setup.txt").read_text() == "$ echo prepared > setup-made.txt\n"
    assert set(json.loads((folder / "timing.json").read_text())) == {"setup_ms", "arm_ms", "verify_ms"}
    assert json.loads((folder / "result.json").read_text())["status"] == "PASS"
    assert json.loads((folder / "command.json").read_text())["argv"][0] == "bash"


def test_every_attempt_gets_a_fresh_workspace(tmp_path: Path) -> None:
    counter = tmp_path / "counter.txt"
    rows = suite_rows(
        tmp_path,
        f"""
        exec: bash
        args: ["-c", "test ! -e seen.txt || exit 9; echo $ASSAY_ROW-$ASSAY_SAMPLE > seen.txt; echo x >> {counter}"]
        arms: {{variant: {{}}, bare: {{}}}}
        workspace: repo
        repeat: 3
        """,
    )

    results = [run(row, tmp_path) for row in rows]

    assert [r.status for r in results] == ["PASS", "PASS"], [r.error for r in results]
    assert len(lines(counter)) == 6  # 2 arms x 3 samples, none saw another's seen.txt (exit 9)
    for result in results:
        for sample in result.samples:
            assert sample.attempt is not None
            diff = (tmp_path / "run" / sample.attempt.evidence / "diff.patch").read_text()
            assert f"+{result.name}-{sample.index}" in diff and diff.count("+++ b/") == 1


@pytest.mark.parametrize(
    ("setup", "timeout", "error", "stopped"),
    [
        ("echo missing fixture data >&2; exit 4", "2m", "setup failed (exit code 4): missing fixture data", None),
        ("sleep 20", "1s", "setup failed (the row's time budget ran out)", "timeout"),
    ],
)
def test_a_failing_setup_is_an_error_and_the_arm_never_runs(
    tmp_path: Path, setup: str, timeout: str, error: str, stopped: str | None
) -> None:
    counter = tmp_path / "counter.txt"
    (row,) = suite_rows(
        tmp_path,
        f"""
        exec: bash
        args: ["-c", "echo x >> {counter}"]
        workspace: repo
        timeout: {timeout}
        setup: {setup}
        """,
    )

    result = run(row, tmp_path)

    assert result.status == "ERR"
    assert result.error is not None and error in result.error
    assert result.stopped == result.samples[0].stopped == stopped  # out of time is a stop; a wiring error is not
    assert not counter.exists()


def test_a_dry_run_prepares_sets_up_and_verifies_but_never_runs_the_arm(tmp_path: Path) -> None:
    arm_counter, setup_counter, verify_counter = (tmp_path / f"{n}.txt" for n in ("arm", "setup", "verify"))
    (row,) = suite_rows(
        tmp_path,
        f"""
        exec: bash
        args: ["-c", "echo x >> {arm_counter}"]
        workspace: repo
        setup: echo x >> {setup_counter}
        verify:
          - echo x >> {verify_counter}; test -f out.txt
        repeat: 2
        """,
    )

    result = run(row, tmp_path, dry_run=True)

    assert [(s.status, s.error, s.passed) for s in result.samples] == [("SKIP", "dry run", False)] * 2
    assert not arm_counter.exists()
    assert len(lines(setup_counter)) == len(lines(verify_counter)) == 2
    attempt = result.samples[0].attempt
    assert attempt is not None and attempt.dry_run
    assert [v.passed for v in attempt.verify] == [False]  # nothing implemented yet: verification fails, as expected
    assert result.samples[0].command.status == "not_evaluated"
    assert json.loads((tmp_path / "run" / attempt.evidence / "command.json").read_text())["argv"][-1].endswith(
        f"echo x >> {arm_counter}"
    )


def test_a_forbidden_pattern_disqualifies_the_attempt(tmp_path: Path) -> None:
    (row,) = suite_rows(
        tmp_path,
        """
        exec: bash
        args: ["-c", "printf 'try:\\\\n    go()\\\\nexcept Exception:\\\\n    pass\\\\n' > app.py"]
        workspace: repo
        forbidden:
          - pattern: 'except\\b[^:\\n]*:\\s*\\n\\s*pass\\b'
            description: silent catch
        """,
        "| Name | CEL |\n|---|---|\n| task | `disqualified && findings[0].file == 'app.py'` |\n",
    )

    result = run(row, tmp_path)

    assert result.status == "PASS", result.error
    attempt = result.samples[0].attempt
    assert attempt is not None and attempt.disqualified
    assert [f.describe() for f in attempt.findings] == ["disqualifier: silent catch at app.py:3"]


def test_an_arm_out_of_budget_is_an_error_and_is_not_verified(tmp_path: Path) -> None:
    verify_counter = tmp_path / "verify.txt"
    (row,) = suite_rows(
        tmp_path,
        f"""
        exec: bash
        args: ["-c", "sleep 20"]
        workspace: repo
        timeout: 1s
        verify:
          - echo x >> {verify_counter}
        """,
    )

    result = run(row, tmp_path)

    assert result.status == "ERR" and result.error is not None and "timed out" in result.error
    assert (result.stopped, result.samples[0].stopped) == ("timeout", "timeout")
    assert not verify_counter.exists()


def test_secrets_are_masked_in_the_evidence_but_cel_sees_them(tmp_path: Path) -> None:
    secret = "s3cr3t-value-0123456789"
    (row,) = suite_rows(
        tmp_path,
        f"""
        exec: bash
        args: ["-c", "echo $SERVICE_TOKEN > token.txt; echo $SERVICE_TOKEN"]
        env: {{SERVICE_TOKEN: {secret}}}
        workspace: repo
        verify:
          - cat token.txt
        """,
        f"| Name | CEL |\n|---|---|\n| task | `diff.contains('{secret}') && verify[0].output.contains('{secret}')` |\n",
    )

    result = run(row, tmp_path)

    assert result.status == "PASS", result.error  # CEL saw the real values
    attempt = result.samples[0].attempt
    assert attempt is not None and attempt.verify[0].output == "[REDACTED]\n"
    folder = tmp_path / "run" / attempt.evidence
    for name in ("stdout.txt", "diff.patch", "verify.json", "command.json", "result.json"):
        text = (folder / name).read_text()
        assert secret not in text, name
    assert "+[REDACTED]" in (folder / "diff.patch").read_text()
    assert secret not in result.samples[0].stdout


def test_cases_whose_names_differ_only_in_unsafe_characters_keep_their_own_evidence(tmp_path: Path) -> None:
    rows = suite_rows(
        tmp_path,
        """
        exec: bash
        args: ["-c", "echo $ASSAY_ROW > who.txt"]
        arms: {variant: {}, bare: {}}
        workspace: repo
        """,
        "| Name |\n|---|\n| a b |\n| a_b |\n| a/b |\n",
    )

    results = [run(row, tmp_path) for row in rows]

    folders = {}
    for result in results:
        attempt = result.samples[0].attempt
        assert result.status == "PASS" and attempt is not None, result.error
        folders[attempt.evidence] = (tmp_path / "run" / attempt.evidence / "diff.patch").read_text()
    assert len(folders) == 6  # three cases x two arms, each in its own folder
    for result, (folder, diff) in zip(results, folders.items(), strict=True):
        assert f"+{result.name}\n" in diff, folder


def test_evidence_files_are_replaced_whole_never_rewritten_in_place(tmp_path: Path) -> None:
    (row,) = suite_rows(
        tmp_path,
        """
        exec: bash
        args: ["-c", "echo done > out.txt; echo said"]
        workspace: repo
        setup: echo prepared
        verify:
          - test -f out.txt
        """,
    )
    first = run(row, tmp_path)
    attempt = first.samples[0].attempt
    assert attempt is not None
    folder = tmp_path / "run" / attempt.evidence
    before = {path.name: path.stat().st_ino for path in folder.iterdir()}

    run(row, tmp_path)  # the same attempt again, into the same folder

    after = {path.name: path.stat().st_ino for path in folder.iterdir()}
    assert set(after) == set(before) >= {"command.json", "stdout.txt", "diff.patch", "verify.json", "result.json"}
    # A new file moved into place has a new inode; a file truncated and rewritten keeps its own.
    assert [name for name in after if after[name] == before[name]] == []


def test_a_dry_run_runs_nothing_of_a_row_outside_a_suite(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    fixture = tmp_path / "plain.md"
    fixture.write_text(f"| Name | Command | CEL |\n|---|---|---|\n| plain | `touch {marker}` | `exitCode == 0` |\n")
    (row,) = parse_file(fixture).rows

    result = run(replace(row, repeat=3), tmp_path, dry_run=True)

    assert [(s.status, s.error, s.command.status) for s in result.samples] == [("SKIP", "dry run", "not_evaluated")] * 3
    assert not marker.exists()
    assert not (tmp_path / "run").exists(), "no attempt folder for a row that prepares nothing"
