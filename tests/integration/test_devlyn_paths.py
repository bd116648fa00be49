"""A devlyn benchmark named every way its users name it, from another working folder (issue 44).

A relative folder, ``.``, a trailing slash, a path through ``..``, a
symlinked folder inside the working folder, an absolute path, a suite file
with ``devlyn: FOLDER`` (relative to the file): each is validated, dry-run and
run to the same answers, re-judged and resumed, on both engines. The same for
an A/B suite of Markdown with a ``workspace:`` folder. Every path the tests give
is relative to a working folder that is not the benchmark's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, WIDE, run_cli
from tests.polling import until

STUBS = REPO / "tests" / "devlyn" / "stubs"  # stand-ins for devlyn's `claude -p` and `codex exec`


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/work/bench (examples/devlyn), tmp/work/linked -> bench, tmp/work/ab (examples/ab), tmp/elsewhere
    (with a suite file naming ../work/bench) and a scenario for the stubs."""
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples" / "devlyn", work / "bench")
    shutil.copytree(REPO / "examples" / "ab", work / "ab")
    (work / "linked").symlink_to("bench", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "suite.md").write_text("---\ndevlyn: ../work/bench\n---\n")
    (tmp_path / "scenario.json").write_text(json.dumps({"fixtures": {}}))
    return tmp_path


def stub_env(root: Path, first: Path | None = None) -> dict[str, str]:
    path = os.pathsep.join(str(p) for p in (first, STUBS) if p is not None)
    return {**WIDE, "PATH": f"{path}{os.pathsep}{os.environ['PATH']}", "STUB_SCENARIO": str(root / "scenario.json")}


def assay(root: Path, cwd: str, *args: str, env: dict[str, str] | None = None) -> tuple[Any, dict[str, Any]]:
    """``assay ARGS`` in ``root/cwd``, its state under ``root/state``; the process and its run document."""
    target = root / "run.json"
    target.unlink(missing_ok=True)
    state = os.path.relpath(root / "state", root / cwd)  # relative too, as a user types it
    done = run_cli([*args, "--out", state, "--json", str(target)], root / cwd, env or stub_env(root))
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(target.read_text()) if target.exists() else {}


# (working folder, how the benchmark is named there)
NAMES = [
    ("work", "bench"),
    ("work", "bench/"),
    ("work/bench", "."),
    ("elsewhere", "../work/bench"),
    ("work/ab", "../bench"),  # through .. from a sibling
    ("work", "linked"),  # a symlinked folder inside the working folder
    ("work", "bench/fixtures"),  # its fixtures/ folder names it too
]


@pytest.mark.parametrize(("cwd", "name"), NAMES)
def test_every_name_of_a_benchmark_validates_and_dry_runs(layout: Path, cwd: str, name: str) -> None:
    checked = run_cli(["validate", name], layout / cwd, WIDE)
    assert (checked.returncode, checked.stdout) == (0, "ok: 1 files, 12 rows, 12 samples\n"), checked.stderr

    done, document = assay(layout, cwd, "run", name, "--engine", "local", "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    (suite,) = document["suites"]
    # setup.sh ran in each fixture's workspace and the verification commands ran there: all pass untouched
    assert suite["dry_run"] and {case["name"] for case in suite["cases"]} == {
        "F1-loud-flag", "F2-count-words", "F8-known-limit-docstring", "F9-e2e-version",
    }  # fmt: skip
    assert {case["verdict"] for case in suite["cases"]} == {"READY"}, done.stdout
    assert all("verify_score" in arm for case in suite["cases"] for arm in case["arms"].values())


def errors(document: dict[str, Any]) -> list[str]:
    return [r["name"] for f in document["fixtures"] for r in f["rows"] if r["status"] == "ERR"]


def conclusions(document: dict[str, Any]) -> dict[str, Any]:
    (suite,) = document["suites"]
    cases = {c["name"]: ({a: v.get("score") for a, v in c["arms"].items()}, c.get("winner")) for c in suite["cases"]}
    return {"cases": cases, "gates": [(g["name"], g["status"]) for g in suite["gates"]], "verdict": suite["verdict"]}


def test_a_relative_folder_and_a_relative_suite_file_run_to_the_same_answers_as_an_absolute_one(
    layout: Path,
) -> None:
    absolute, answer = assay(layout, "elsewhere", "run", str(layout / "work" / "bench"), "--engine", "local")
    assert not errors(answer), absolute.stdout
    for cwd, name in [("elsewhere", "../work/bench"), ("elsewhere", "suite.md"), ("work", "linked/")]:
        done, document = assay(layout, cwd, "run", name, "--engine", "local")
        assert (done.returncode, conclusions(document)) == (absolute.returncode, conclusions(answer)), name

    rejudged, again = assay(layout, "work", "rejudge", document["run_id"])
    assert (rejudged.returncode, conclusions(again)) == (absolute.returncode, conclusions(answer)), rejudged.stderr


def test_a_run_in_a_git_work_tree_is_rejudged_from_another_folder(layout: Path) -> None:
    # In a git work tree fixtures are named from its top, so the re-judge finds the run's evidence from anywhere;
    # the relative path the run was given is read from the folder the run was started in.
    subprocess.run(["git", "init", "-q", str(layout)], check=True)
    done, document = assay(layout, "work", "run", "linked/", "--engine", "local")
    assert not errors(document), done.stdout + done.stderr
    rejudged, again = assay(layout, "elsewhere", "rejudge", document["run_id"])
    assert (rejudged.returncode, conclusions(again)) == (done.returncode, conclusions(document)), rejudged.stderr


def test_a_relative_folder_runs_on_the_prefect_engine(layout: Path, prefect_server: Any) -> None:
    local, answer = assay(layout, "elsewhere", "run", "../work/bench", "--engine", "local")
    done, document = assay(layout, "work", "run", "linked", "--engine", "prefect")
    assert not errors(document), done.stdout + done.stderr
    assert (done.returncode, conclusions(document)) == (local.returncode, conclusions(answer))


def test_an_interrupted_run_of_a_relative_folder_resumes(layout: Path) -> None:
    started, again = layout / "started", layout / "again"
    hold = layout / "hold"
    hold.mkdir()
    # F9's bare arm (the last row) waits until `again` exists: the first run is killed while it waits.
    (hold / "claude").write_text(
        "#!/bin/sh\n"
        f'if [ "$ASSAY_CASE/$ASSAY_ARM" = F9-e2e-version/bare ] && [ ! -e {again} ]; then\n'
        f'  touch {started}; sleep 60\nfi\nexec {STUBS / "claude"} "$@"\n'
    )
    (hold / "claude").chmod(0o755)
    env = {**os.environ, **stub_env(layout, hold), "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(
        [sys.executable, "-m", "flows.run", "../work/bench", "--engine", "local", "--out", "../state"],
        cwd=layout / "elsewhere", env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert until(lambda: started.exists() or first.poll() is not None, within_s=120)
        assert started.exists()
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            first.wait(timeout=30)
    again.touch()
    resumed, document = assay(layout, "elsewhere", "run", "--resume", "latest", "--engine", "local")
    assert "only missing samples" not in resumed.stderr and not errors(document), resumed.stdout + resumed.stderr
    absolute, answer = assay(layout, "work", "run", str(layout / "work" / "bench"), "--engine", "local")
    assert (resumed.returncode, conclusions(document)) == (absolute.returncode, conclusions(answer))


@pytest.mark.parametrize(("cwd", "name"), [("elsewhere", "../work/ab/suite.md"), ("work/ab", "."), ("work", "ab")])
def test_a_markdown_suite_with_a_workspace_runs_from_a_relative_path(layout: Path, cwd: str, name: str) -> None:
    checked = run_cli(["validate", name], layout / cwd, WIDE)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    done, document = assay(layout, cwd, "run", name, "--engine", "local")
    assert not errors(document), done.stdout + done.stderr
    assert done.returncode == 0, done.stdout + done.stderr


def test_in_a_devlyn_suite_file_source_dir_is_the_benchmark_folder(layout: Path) -> None:
    """A suite file kept elsewhere: ``{{ .sourceDir }}`` in its arms is the folder ``devlyn:`` names (its
    agents are there, not beside the suite file), and its judge (``python3 judge.py``) runs there."""
    example = (REPO / "examples" / "devlyn" / "suite.md").read_text()
    assert "devlyn: .\n" in example and '"{{ .sourceDir }}/agents/agent.py"' in example
    (layout / "elsewhere" / "mine.md").write_text(example.replace("devlyn: .\n", "devlyn: ../work/bench\n"))
    assert not (layout / "elsewhere" / "agents").exists()

    here, answer = assay(layout, "work/bench", "run", "suite.md", "--engine", "local")
    done, document = assay(layout, "elsewhere", "run", "mine.md", "--engine", "local")

    assert not errors(document), done.stdout + done.stderr
    assert (
        (done.returncode, conclusions(document)) == (here.returncode, conclusions(answer)) == (0, conclusions(answer))
    )
