"""The report files a run or ``assay report`` writes: HTML, JUnit XML, Markdown summary, sample frame.

Paths are checked before a run spends anything (a folder, a missing
dependency or an unwritable place is a usage error); files are written
atomically once the run document exists. With ``GITHUB_STEP_SUMMARY`` set
(GitHub Actions), the Markdown summary is appended there too. The HTML page
and the summary say what changed since the previous run of the suite in the
run's state folder, and the page links to the evidence there, relative to
itself; ``write_bundle`` makes a folder that holds the page and that evidence.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.analysis.trends import Since
from fixtures_core.errors import AssayError, UsageError
from fixtures_core.files import write_text_atomic
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import markdown
from fixtures_core.reports.evidence_links import BUNDLE_PAGE, EvidenceLinks
from fixtures_core.reports.frame import check_frame_path, write_frame
from fixtures_core.reports.html import Context, html
from fixtures_core.reports.junit import junit
from fixtures_core.reports.trends import since_of

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

    def write(
        self, run: RunResult, step_summary: str | None = None, state: Path | None = None, pivots: Pivots = None
    ) -> list[Path]:
        """Write every report asked for, and append the summary to ``step_summary`` (a GitHub
        step summary file) when given; return the files written. ``state`` is the run's state folder
        (default: the one it ran with); ``pivots`` the HTML page's (default: the run's ``--group-by``)."""
        folder = state_folder(run, state)
        wanted = self.html is not None or self.summary is not None or self.junit is not None or step_summary
        since = since_of(run, folder) if wanted else None
        renderers: dict[str, Callable[[RunResult], str]] = {
            "html": lambda done: html(done, page_context(done, Path(self.html or "."), folder, since, pivots)),
            "junit": lambda done: junit(done, since),
            "summary": lambda done: summary_text(done, since),
        }
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
            append_step_summary(run, Path(step_summary), since)
            written.append(Path(step_summary))
        return written


Pivots = tuple[tuple[str, str], ...] | None


def state_folder(run: RunResult, state: Path | None = None) -> Path:
    """The state folder of a run: ``state`` when given, else the ``--out`` it ran with."""
    return state if state is not None else Path(str(run.options.get("out") or ".assay"))


def page_context(
    run: RunResult, page: Path, state: Path, since: Since | None, pivots: Pivots = None, bundle: bool = False
) -> Context:
    """What the run's page shows beyond the run: the previous run, links to the evidence from ``page``."""
    return Context(since=since, links=EvidenceLinks(state, page.parent, bundle), pivots=pivots)


def write_bundle(run: RunResult, folder: Path, state: Path | None = None, pivots: Pivots = None) -> Path:
    """``--html-bundle FOLDER``: the page as ``FOLDER/index.html`` and every file it links to copied beside
    it (``FOLDER/evidence/RUN/...``), so the folder opens whole anywhere; the page's path."""
    where = state_folder(run, state)
    page = folder / BUNDLE_PAGE
    context = page_context(run, page, where, since_of(run, where), pivots, bundle=True)
    text = html(run, context)
    try:
        assert context.links is not None
        context.links.copy_into(folder)
        write_text_atomic(page, text)
    except OSError as exc:
        raise AssayError(f"--html-bundle {folder}: cannot write: {exc.strerror or exc}") from None
    return page


def check_bundle(folder: Path) -> None:
    """Raise UsageError unless a bundle can be written in ``folder`` (a folder, made now if missing)."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--html-bundle {folder} is a file: give a folder")
    check_writable("--html-bundle", folder / BUNDLE_PAGE)


def step_summary_file(env: Mapping[str, str] = os.environ) -> str | None:
    """The GitHub step summary file of this job, when running in GitHub Actions."""
    return env.get(STEP_SUMMARY) or None


def summary_text(run: RunResult, since: Since | None = None) -> str:
    """The Markdown summary of a run (the one Markdown renderer of a run), ending with a newline."""
    return markdown.render(run, since=since).rstrip("\n") + "\n"


def append_step_summary(run: RunResult, path: Path, since: Since | None = None) -> None:
    """Append the run's Markdown summary to a GitHub step summary file (other steps write there too)."""
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(summary_text(run, since) + "\n")


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
