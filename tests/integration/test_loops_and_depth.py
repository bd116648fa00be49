"""Input that loops or nests without end meets one line naming the file (exit 2), never a traceback:
a symlink loop in a fixture folder, a loop in an A/B suite's workspace, an evidence line nested 100,000 deep.
Each runs assay's own CLI on real files."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.integration.conftest import REPO, run_cli

FIXTURE = "| Name | Command |\n|---|---|\n| one | `echo one` |\n"


def test_a_symlink_loop_in_a_fixture_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "fixtures"
    folder.mkdir()
    (folder / "real.md").write_text(FIXTURE)
    (folder / "a.md").symlink_to("b.md")
    (folder / "b.md").symlink_to("a.md")
    done = run_cli(["fixtures", "--engine", "local", "--out", "state"], cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == "error: fixtures/a.md: a symlink loop (the link leads back to itself): remove it\n"


def test_a_symlink_loop_in_an_ab_workspace_names_the_suite_and_the_link(tmp_path: Path) -> None:
    suite = tmp_path / "ab"
    shutil.copytree(REPO / "examples" / "ab", suite)
    (suite / "repo" / "a").symlink_to("b")
    (suite / "repo" / "b").symlink_to("a")
    done = run_cli(["suite.md", "--engine", "local", "--dry-run", "--out", "state"], cwd=suite, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "Traceback" not in output and "internal error" not in output, output
    assert "suite.md:65: workspace: row 'loud-flag/careful': symlink a is a loop (it leads back to itself)" in output


def test_an_evidence_line_nested_100000_deep_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "fixture.md").write_text(FIXTURE)
    first = run_cli(["fixture.md", "--engine", "local", "--out", "state"], cwd=tmp_path, timeout=60)
    assert first.returncode == 0, first.stdout + first.stderr
    [folder] = (tmp_path / "state" / "runs").iterdir()
    (folder / "run.json").unlink()  # killed before it closed: --resume reads the evidence back
    [evidence] = (folder / "evidence").iterdir()
    lines = evidence.read_text().count("\n")
    with evidence.open("a") as handle:
        handle.write('{"sample":' + "[" * 100_000 + "]" * 100_000 + "}\n")
    done = run_cli(["--resume", "latest", "--engine", "local", "--out", "state"], cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"error: state/runs/{folder.name}/evidence/{evidence.name}:{lines + 1}: "
        "evidence line refused: JSON nested deeper than 64 levels\n"
    )
