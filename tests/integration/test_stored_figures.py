"""A stored run whose figures are not finite numbers (NaN, Infinity: Python's JSON reads both, and 1e999 as
Infinity) is refused by every command that reads one, in one line naming the file and the field (exit 2).

assay writes none: every figure it computes is finite or left out, so such a file was edited; read as it
is, a NaN pass@k compares as neither better nor worse and a regression would pass unseen.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

FIXTURE = "| Name | Command |\n|---|---|\n| one | `echo one` |\n| two | `echo two` |\n"
FIELD = "fixtures[0].rows[0].stochastic.pass_at_k"


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one passing run, and ``edited.json``: that run with ``FIELD`` set to NaN."""
    project = tmp_path_factory.mktemp("figures")
    (project / "fixture.md").write_text(FIXTURE)
    done = run_cli(["run", "fixture.md", "--engine", "local", "--out", ".assay"], cwd=project, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((project / ".assay" / "latest.json").read_text())
    assert document["fixtures"][0]["rows"][0]["stochastic"]["pass_at_k"] == 1.0
    document["fixtures"][0]["rows"][0]["stochastic"]["pass_at_k"] = float("nan")
    (project / "edited.json").write_text(json.dumps(document))
    assert '"pass_at_k": NaN' in (project / "edited.json").read_text()
    return project


@pytest.fixture
def project(finished: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(finished, copy)
    return copy


def refusal(role: str) -> str:
    return (
        f"error: {role} edited.json: malformed run document: {FIELD}: NaN is not a finite number "
        "(assay writes none: was the file edited?)\n"
    )


@pytest.mark.parametrize(
    ("argv", "role"),
    [
        (["show", "edited.json"], "run"),
        (["compare", "edited.json", "latest"], "baseline"),
        (["compare", "latest", "edited.json"], "run"),
        (["report", "edited.json", "--junit", "junit.xml"], "run"),
        (["bless", "edited.json", "--name", "nan"], "run"),
        (["rejudge", "edited.json"], "run"),
        (["run", "fixture.md", "--engine", "local", "--baseline", "edited.json"], "baseline"),
    ],
    ids=["show", "compare-baseline", "compare-current", "report", "bless", "rejudge", "run-baseline"],
)
def test_a_stored_run_with_a_nan_figure_is_refused_by_every_command(project: Path, argv: list[str], role: str) -> None:
    done = run_cli([*argv, "--out", ".assay"], cwd=project, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == refusal(role)
    assert not (project / "junit.xml").exists() and not (project / ".assay" / "baselines").exists()
    assert len(list((project / ".assay" / "runs").iterdir())) == 1, "a run started against a refused baseline"


@pytest.mark.parametrize("token", ["Infinity", "-Infinity", "1e999"])
def test_an_infinite_figure_in_a_blessed_baseline_is_refused_by_name(project: Path, token: str) -> None:
    blessed = run_cli(["bless", "latest", "--out", ".assay"], cwd=project, timeout=60)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    baseline = project / ".assay" / "baselines" / "shipped.json"
    document = json.loads(baseline.read_text())
    document["summary"]["stochastic"]["pass_at_k"] = "@figure@"
    baseline.write_text(json.dumps(document).replace('"@figure@"', token))
    done = run_cli(["run", "fixture.md", "--engine", "local", "--baseline", "shipped", "--out", ".assay"],
                   cwd=project, timeout=120)  # fmt: skip
    shown = "Infinity" if token == "1e999" else token
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"error: baseline .assay/baselines/shipped.json: malformed run document: summary.stochastic.pass_at_k: "
        f"{shown} is not a finite number (assay writes none: was the file edited?)\n"
    )


def test_history_lists_a_run_with_a_nan_figure_as_unreadable(project: Path) -> None:
    [folder] = (project / ".assay" / "runs").iterdir()
    shutil.copyfile(project / "edited.json", folder / "run.json.new")
    (folder / "run.json.new").replace(folder / "run.json")
    done = run_cli(["history", "--out", ".assay"], cwd=project, env={"COLUMNS": "250"}, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "unreadable" in done.stdout and "NaN is not a finite number" in done.stdout.replace("\n", " "), done.stdout
