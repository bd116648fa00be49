"""Report files: checked before a run, written atomically, the step summary appended."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.outputs import ReportFiles, step_summary_file, summary_text


def test_every_file_asked_for_is_written(matrix_run: RunResult, tmp_path: Path) -> None:
    files = ReportFiles(
        html=str(tmp_path / "a" / "r.html"),
        junit=str(tmp_path / "r.xml"),
        summary=str(tmp_path / "s.md"),
        frame=str(tmp_path / "f.csv"),
    )
    files.check()
    written = files.write(matrix_run)
    assert written == [Path(p) for p in files.named().values()]
    assert all(p.stat().st_size > 0 for p in written)
    assert (tmp_path / "s.md").read_text() == summary_text(matrix_run)
    assert sorted(p.name for p in tmp_path.rglob(".*")) == []  # no temporary file left behind


def test_the_step_summary_is_appended_not_replaced(matrix_run: RunResult, tmp_path: Path) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("## an earlier step\n")
    ReportFiles().write(matrix_run, step_summary=str(step))
    ReportFiles().write(matrix_run, step_summary=str(step))
    text = step.read_text()
    assert text.startswith("## an earlier step\n")
    assert text.count(summary_text(matrix_run)) == 2


def test_the_step_summary_file_comes_from_github_actions() -> None:
    assert step_summary_file({"GITHUB_STEP_SUMMARY": "/x/summary"}) == "/x/summary"
    assert step_summary_file({"GITHUB_STEP_SUMMARY": ""}) is None and step_summary_file({}) is None


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (lambda t: ReportFiles(html=str(t)), "--html {t} is a folder: give a file path"),
        (lambda t: ReportFiles(junit=str(t / "file" / "x.xml")), "--junit {t}/file/x.xml: cannot create a file"),
        (lambda t: ReportFiles(frame=str(t / "x.xlsx")), "--frame {t}/x.xlsx: the file name must end in .csv"),
    ],
)
def test_unwritable_paths_are_usage_errors(tmp_path: Path, files: object, message: str) -> None:
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(UsageError) as caught:
        files(tmp_path).check()  # type: ignore[operator]
    assert str(caught.value).startswith(message.format(t=tmp_path))
