"""The CI gate from the command line: baselines, bless, compare, history, fail closed."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

FIXTURE = """| Name | Command |
|---|---|
| alpha | `true` |
| beta | `test -e {flag} && exit 1 \\|\\| exit 0` |
"""


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    """A folder with a two-row fixture whose row 'beta' fails once a flag file exists."""
    (tmp_path / "suite.md").write_text(FIXTURE.format(flag=tmp_path / "break-beta"))
    return tmp_path


def assay(project: Path, *args: str) -> tuple[int, str, str]:
    done = run_cli([*args], cwd=project)
    return done.returncode, done.stdout, done.stderr


def run(project: Path, *args: str) -> tuple[int, str, str]:
    return assay(project, "run", "suite.md", "--engine", "local", *args)


def test_unchanged_fixture_against_its_own_run_passes(project: Path) -> None:
    assert run(project)[0] == 0
    code, stdout, _ = run(project, "--baseline", ".assay/latest.json")
    assert code == 0, stdout
    assert "No regression against baseline" in stdout


def test_pass_to_fail_gates_whatever_the_tolerance(project: Path) -> None:
    assert run(project)[0] == 0
    assert assay(project, "bless", "latest")[0] == 0
    (project / "break-beta").touch()
    code, stdout, _ = run(project, "--baseline", "shipped", "--regression-tolerance", "0.99")
    assert code == 1
    assert any(line.startswith("!") and "beta" in line and "PASS -> FAIL" in line for line in stdout.splitlines())
    assert "Regression against baseline" in stdout
    document = json.loads((project / ".assay" / "latest.json").read_text())
    change = next(c for c in document["comparison"]["changes"] if c["row"] == "beta")
    assert (change["from"], change["to"], change["gating"]) == ("PASS", "FAIL", True)


def test_improvement_never_gates(project: Path) -> None:
    (project / "break-beta").touch()
    assert run(project)[0] == 1
    (project / "break-beta").unlink()
    code, stdout, _ = run(project, "--baseline", ".assay/latest.json")
    assert code == 0, stdout


def test_bless_then_baseline_by_name_from_a_fresh_shell(project: Path) -> None:
    assert run(project, "--label", "v1")[0] == 0
    code, stdout, _ = assay(project, "bless", "latest", "--name", "shipped")
    assert code == 0 and (project / ".assay" / "baselines" / "shipped.json").is_file()
    code, stdout, _ = run(project, "--baseline", "shipped", "--label", "v2")  # a new process: nothing in memory
    assert code == 0, stdout
    code, stdout, _ = assay(project, "history")
    assert code == 0
    assert stdout.index("v2") < stdout.index("v1"), "history lists newest first"


def test_compare_offline_uses_the_same_rules(project: Path) -> None:
    run(project)
    first = json.loads((project / ".assay" / "latest.json").read_text())["run_id"]
    (project / "break-beta").touch()
    run(project)
    second = json.loads((project / ".assay" / "latest.json").read_text())["run_id"]
    code, stdout, _ = assay(project, "compare", first, second)
    assert code == 1
    assert "beta" in stdout and "PASS -> FAIL" in stdout
    assert assay(project, "compare", first, first)[0] == 0


@pytest.mark.parametrize("tolerance", ["1.5", "-0.1"])
def test_tolerance_out_of_range_is_a_usage_error(project: Path, tolerance: str) -> None:
    code, _, stderr = run(project, "--baseline", "x.json", f"--regression-tolerance={tolerance}")
    assert code == 2
    assert "--regression-tolerance" in stderr and tolerance in stderr
    assert not (project / ".assay" / "runs").exists(), "nothing runs after a usage error"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (None, "no such run file"),
        ("not json", "not JSON"),
        ('{"name": "not-an-assay-run"}', "not an assay.run/v1 run document"),
    ],
)
def test_bad_baseline_fails_closed_before_running(project: Path, content: str | None, reason: str) -> None:
    baseline = project / "baseline.json"
    if content is not None:
        baseline.write_text(content)
    code, _, stderr = run(project, "--baseline", str(baseline))
    assert code == 2
    assert reason in stderr and len(stderr.strip().splitlines()) == 1
    assert f"baseline {baseline}: {reason}" in stderr, "named as the baseline it was given as"
    assert "Traceback" not in stderr
    assert not (project / ".assay" / "runs").exists(), "the gate fails closed before spending anything"


def test_baseline_without_rows_fails_closed(project: Path) -> None:
    run(project)
    document = json.loads((project / ".assay" / "latest.json").read_text())
    document["fixtures"] = []
    (project / "empty.json").write_text(json.dumps(document))
    code, _, stderr = run(project, "--baseline", "empty.json")
    assert code == 2 and "no rows" in stderr


def test_no_row_in_common_fails_closed_before_running(project: Path) -> None:
    run(project)
    document = json.loads((project / ".assay" / "latest.json").read_text())
    for fixture in document["fixtures"]:
        fixture["file"] = "elsewhere.md"
        for row in fixture["rows"]:
            row["file"] = "elsewhere.md"
    (project / "other.json").write_text(json.dumps(document))
    runs_before = len(list((project / ".assay" / "runs").iterdir()))
    code, stdout, stderr = run(project, "--baseline", "other.json")
    assert code == 2
    assert "no row in common" in stderr and "elsewhere.md" in stderr
    assert "No regression" not in stdout
    assert len(list((project / ".assay" / "runs").iterdir())) == runs_before, "nothing ran"


def test_a_baseline_matches_from_another_directory_and_path_spelling(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    assert run(project)[0] == 0  # "suite.md", relative, from the project folder
    elsewhere = project / "sub"
    elsewhere.mkdir()
    done = run_cli(
        [
            "run",
            str(project / "suite.md"),
            "--engine",
            "local",
            "--out",
            str(project / ".assay"),
            "--baseline",
            "latest",
        ],
        cwd=elsewhere,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No regression against baseline" in done.stdout


def test_errored_run_prints_no_comparison_verdict(project: Path) -> None:
    run(project)
    (project / "suite.md").write_text(
        "| Name | Command | Timeout |\n|---|---|---|\n| alpha | `true` | |\n| beta | `sleep 5` | 1s |\n"
    )
    code, stdout, _ = run(project, "--baseline", ".assay/latest.json")
    assert code == 2
    assert "No regression" not in stdout and "Regression against baseline" not in stdout
    assert "the run itself errored" in stdout


def test_with_a_baseline_a_row_failing_in_both_runs_is_reported_not_a_regression(project: Path) -> None:
    (project / "break-beta").touch()
    assert run(project)[0] == 1  # without a baseline the failing row decides
    assert assay(project, "bless", "latest")[0] == 2, "a FAIL run is not blessed by accident"
    assert assay(project, "bless", "latest", "--force")[0] == 0

    code, stdout, _ = run(project, "--baseline", "shipped")

    assert code == 0, stdout  # did it regress? no: beta failed before too
    assert "· still failing, as in the baseline (not a regression): beta" in stdout
    assert "No regression against baseline" in stdout


def test_a_metric_gate_that_matches_nothing_now_fails_closed(project: Path) -> None:
    gated = (
        "---\nmetrics:\n  - {name: ms, extract: duration_ms, unit: ms, direction: lower, "
        "threshold: {regressionPercent: 1000}}\n---\n" + FIXTURE.format(flag=project / "break-beta")
    )
    (project / "suite.md").write_text(gated)
    assert run(project)[0] == 0
    (project / "suite.md").write_text(gated.replace("name: ms,", "name: wall_ms,"))

    code, stdout, _ = run(project, "--baseline", ".assay/latest.json")

    assert code == 2, stdout  # fails closed: an error, never "no regression"
    text = " ".join(stdout.split())  # the terminal may wrap the line
    assert "Comparison failed: baseline .assay/latest.json: metric gate 'ms' of the baseline matches no metric" in text
    assert "No regression" not in stdout
