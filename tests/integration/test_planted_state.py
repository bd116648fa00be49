"""A state folder someone else wrote to (a shared runner, a checked-out repository): assay's own CLI on a
real state folder left by a killed run, with a symlink, a FIFO or a forged start record planted in it.

Nothing planted is followed or opened for writing; a forged record is refused in one line naming the
file and the field (exit 2), or its report paths are replaced by the run folder's own files.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

FIXTURE = "| Name | Command |\n|---|---|\n| one | `echo one` |\n| two | `echo two` |\n"


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose state folder holds one run that was killed before it wrote run.json."""
    project = tmp_path_factory.mktemp("planted")
    (project / "fixture.md").write_text(FIXTURE)
    done = run_cli(["fixture.md", "--engine", "local", "--out", ".assay"], cwd=project, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    [folder] = (project / ".assay" / "runs").iterdir()
    (folder / "run.json").unlink()
    return project


@pytest.fixture
def project(killed_run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(killed_run, copy, symlinks=True)
    return copy


def run_folder(project: Path) -> Path:
    [folder] = (project / ".assay" / "runs").iterdir()
    return folder


def resume(project: Path, reference: str = "latest") -> tuple[int, str, str]:
    done = run_cli(["--resume", reference, "--engine", "local", "--out", ".assay"], cwd=project, timeout=60)
    return done.returncode, done.stdout, done.stderr


def history(project: Path) -> str:
    done = run_cli(["history", "--out", ".assay"], cwd=project, env={"COLUMNS": "200"}, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout


def forge(project: Path, **options: object) -> Path:
    started = run_folder(project) / "started.json"
    document = json.loads(started.read_text())
    document["options"].update(options)
    started.write_text(json.dumps(document))
    return started


def test_a_symlinked_lock_is_refused_and_its_target_left_alone(project: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me\n")
    lock = run_folder(project) / "running.lock"
    lock.unlink()
    lock.symlink_to(target)
    code, _out, err = resume(project)
    assert target.read_text() == "keep me\n"
    assert code == 2
    assert err.startswith(f"error: .assay/runs/{run_folder(project).name}/running.lock: a symlink where assay keeps")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_a_hard_linked_lock_is_refused_and_its_other_name_left_alone(
    project: Path, tmp_path: Path, engine: str
) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me")  # the lock's truncate and pid would replace it
    lock = run_folder(project) / "running.lock"
    lock.unlink()
    os.link(outside, lock)
    done = run_cli(["run", "--resume", "latest", "--engine", engine, "--out", ".assay"], cwd=project, timeout=120)
    assert outside.read_text() == "keep me"
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"error: .assay/runs/{run_folder(project).name}/running.lock: a file with 2 hard links (one may be outside "
        "the state folder) where assay keeps a file: assay never follows links or opens special files in its "
        "state folder; remove it\n"
    )


@pytest.mark.parametrize("ending", ["keep me\n", "keep me, no newline"])  # a torn-tail repair would cut the 2nd
def test_a_hard_linked_evidence_file_is_refused_and_its_other_name_left_alone(
    project: Path, tmp_path: Path, ending: str
) -> None:
    outside = tmp_path / "precious.txt"
    outside.write_text(ending)
    [evidence, *_] = sorted((run_folder(project) / "evidence").iterdir())
    evidence.unlink()  # the row runs again on resume: its sample lines would be appended to the outside file
    os.link(outside, evidence)
    code, out, err = resume(project)
    assert outside.read_text() == ending
    assert code == 2, out + err
    relative = evidence.relative_to(project)
    assert err.startswith(f"error: {relative}: a file with 2 hard links (one may be outside the state folder)"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_files_replaced_whole_leave_a_hard_linked_other_name_alone(project: Path, tmp_path: Path) -> None:
    """latest.json, run.json and baselines are written to a new file moved into place: a second hard link to
    the old one (which latest.json itself is, to the newest run.json) keeps the old bytes."""
    outside = {name: tmp_path / f"{name}.txt" for name in ("latest", "baseline")}
    for path in outside.values():
        path.write_text("keep me")
    (project / ".assay" / "latest.json").unlink()
    os.link(outside["latest"], project / ".assay" / "latest.json")
    code, out, err = resume(project)
    assert code == 0, out + err
    assert outside["latest"].read_text() == "keep me"
    assert json.loads((project / ".assay" / "latest.json").read_text())["schema"] == "assay.run/v1"
    baseline = project / ".assay" / "baselines" / "shipped.json"
    baseline.parent.mkdir()
    os.link(outside["baseline"], baseline)
    blessed = run_cli(["bless", "latest", "--out", ".assay"], cwd=project, timeout=60)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    assert outside["baseline"].read_text() == "keep me"
    assert json.loads(baseline.read_text())["schema"] == "assay.run/v1"


def test_a_fifo_lock_hangs_neither_history_nor_resume(project: Path) -> None:
    lock = run_folder(project) / "running.lock"
    lock.unlink()
    os.mkfifo(lock)
    listed = history(project)  # run_cli's timeout fails the test if it hangs
    assert run_folder(project).name in listed and "incomplete" in listed
    code, _out, err = resume(project)
    assert code == 2
    assert err == (
        f"error: .assay/runs/{run_folder(project).name}/running.lock: a FIFO where assay keeps a file: "
        "assay never follows links or opens special files in its state folder; remove it\n"
    )


def test_a_symlinked_run_folder_is_not_followed(project: Path, tmp_path: Path) -> None:
    folder = run_folder(project)
    elsewhere = tmp_path / "elsewhere"
    folder.rename(elsewhere)
    folder.symlink_to(elsewhere)
    before = sorted(p.name for p in elsewhere.iterdir())
    assert folder.name not in history(project)
    code, _out, err = resume(project, folder.name)
    assert code == 2
    assert err.startswith(f"error: .assay/runs/{folder.name}: a symlink where assay keeps a folder"), err
    assert sorted(p.name for p in elsewhere.iterdir()) == before, "the resumed run wrote through the link"


@pytest.mark.parametrize(
    ("name", "path"),
    [("html", "fixture.md"), ("junit", ".assay/latest.json"), ("summary", "../outside.md")],
)
def test_report_paths_in_a_start_record_are_rederived_in_the_run_folder(project: Path, name: str, path: str) -> None:
    forge(project, **{name: path})
    fixture_before = (project / "fixture.md").read_text()
    code, out, err = resume(project)
    assert code == 0, out + err
    assert (project / "fixture.md").read_text() == fixture_before
    assert json.loads((project / ".assay" / "latest.json").read_text())["schema"] == "assay.run/v1"
    assert not (project.parent / "outside.md").exists()
    written = {"html": "report.html", "junit": "junit.xml", "summary": "summary.md"}[name]
    assert (run_folder(project) / written).stat().st_size > 0


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("capture_limit", -5, "the capture limit must be between 1 and 67,108,864 bytes, got -5"),
        ("capture_limit", 10**18, "the capture limit must be between 1 and 67,108,864 bytes, got 1e+18"),
        ("parallel", 10**18, "--parallel must be at most"),
        ("concurrency", 0, "--concurrency must be >= 1, got 0"),
        ("tolerance", -1.5, "tolerance"),
    ],
)
def test_numbers_in_a_start_record_are_bounded(project: Path, field: str, value: int, says: str) -> None:
    started = forge(project, **{field: value})
    code, out, err = resume(project)
    assert code == 2, out + err
    relative = started.relative_to(project)
    assert err.startswith(f"error: {relative}: options.{field}: "), err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture
def finished(tmp_path: Path) -> Path:
    project = tmp_path / "finished"
    project.mkdir()
    (project / "fixture.md").write_text(FIXTURE)
    done = run_cli(["fixture.md", "--engine", "local", "--out", ".assay"], cwd=project, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def test_bless_replaces_a_planted_fifo_and_refuses_a_symlinked_baselines_folder(finished: Path, tmp_path: Path) -> None:
    baselines = finished / ".assay" / "baselines"
    baselines.mkdir()
    os.mkfifo(baselines / "shipped.json")
    blessed = run_cli(["bless", "latest", "--out", ".assay"], cwd=finished, timeout=30)  # a hang fails here
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    assert json.loads((baselines / "shipped.json").read_text())["schema"] == "assay.run/v1"
    shutil.rmtree(baselines)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    baselines.symlink_to(elsewhere)
    refused = run_cli(["bless", "latest", "--out", ".assay"], cwd=finished, timeout=30)
    assert refused.returncode == 2
    assert refused.stderr.startswith("error: .assay/baselines: a symlink where assay keeps a folder"), refused.stderr
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", ["evidence", "attempts"])
def test_a_symlinked_folder_inside_a_run_folder_is_not_followed(project: Path, tmp_path: Path, name: str) -> None:
    folder = run_folder(project) / name
    elsewhere = tmp_path / "elsewhere"
    if folder.exists():
        folder.rename(elsewhere)
    else:
        elsewhere.mkdir()
    folder.symlink_to(elsewhere)
    before = {p.name: p.read_bytes() for p in elsewhere.iterdir()}
    code, out, err = resume(project)
    assert code == 2, out + err
    relative = folder.relative_to(project)
    assert err.startswith(f"error: {relative}: a symlink where assay keeps a folder"), err
    assert {p.name: p.read_bytes() for p in elsewhere.iterdir()} == before
