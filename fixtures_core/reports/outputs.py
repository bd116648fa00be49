"""The report files a run or ``assay report`` writes: HTML, JUnit XML, Markdown summary, sample frame.

Paths are checked before a run spends anything (a folder, a missing
dependency or an unwritable place is a usage error); files are written
atomically once the run document exists. With ``GITHUB_STEP_SUMMARY`` set
(GitHub Actions), the Markdown summary is appended there too.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.errors import AssayError, UsageError
from fixtures_core.files import write_text_atomic
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import markdown
from fixtures_core.reports.frame import check_frame_path, write_frame
from fixtures_core.reports.html import html
from fixtures_core.reports.junit import junit

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


@dataclass(frozen=True)
class ReportFiles:
    """Where to write each report; None skips it."""

    html: str | None = None
    junit: str | None = None
    summary: str | None = None
    frame: str | None = None

    def named(self) -> dict[str, str]:
        """Option name -> path of every report asked for."""
        return {name: path for name, path in vars(self).items() if path is not None}

    def check(self) -> None:
        """Raise UsageError for a path assay could not write to."""
        for name, path in self.named().items():
            check_writable(f"--{name}", Path(path))
        if self.frame is not None:
            check_frame_path(self.frame)
        step_summary = step_summary_file()
        if step_summary is not None:
            check_appendable(f"${STEP_SUMMARY}", Path(step_summary))

    def write(self, run: RunResult, step_summary: str | None = None) -> list[Path]:
        """Write every report asked for, and append the summary to ``step_summary`` (a GitHub
        step summary file) when given; return the files written."""
        renderers: dict[str, Callable[[RunResult], str]] = {"html": html, "junit": junit, "summary": summary_text}
        written = []
        for name, path in self.named().items():
            target = Path(path)
            try:
                if name == "frame":
                    write_frame(run, target)
                else:
                    write_text_atomic(target, renderers[name](run))
            except OSError as exc:
                raise AssayError(f"--{name} {path}: cannot write: {exc.strerror or exc}") from None
            written.append(target)
        if step_summary:
            append_step_summary(run, Path(step_summary))
            written.append(Path(step_summary))
        return written


def step_summary_file(env: Mapping[str, str] = os.environ) -> str | None:
    """The GitHub step summary file of this job, when running in GitHub Actions."""
    return env.get(STEP_SUMMARY) or None


def summary_text(run: RunResult) -> str:
    """The Markdown summary of a run (the one Markdown renderer of a run), ending with a newline."""
    return markdown.render(run).rstrip("\n") + "\n"


def append_step_summary(run: RunResult, path: Path) -> None:
    """Append the run's Markdown summary to a GitHub step summary file (other steps write there too)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(summary_text(run) + "\n")


def check_writable(option: str, path: Path) -> None:
    """Raise UsageError unless a file can be created at ``path``: its folder is made now and a
    file is created there and removed (permission bits say too little: root, read-only mounts, /proc)."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a folder: give a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".assay-check-"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create a file there: {exc.strerror or exc}") from None


def check_appendable(option: str, path: Path) -> None:
    """Raise UsageError unless ``path`` can be appended to (created if missing, never truncated)."""
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot append to it: {exc.strerror or exc}") from None
