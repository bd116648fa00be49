"""Links from a report page to the evidence on disk: attempts' diffs, verify results and
transcripts, the judge's input and output, rows' raw output.

A link is relative to the page, so the page and the state folder can move
together (a CI artifact, a copied folder), and it is made only for a file
that exists. With a bundle (``--html-bundle DIR``) the page is
``DIR/index.html`` and every file it links to is copied under
``DIR/evidence/RUN/...``, so the folder opens whole anywhere.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import quote

BUNDLE_PAGE = "index.html"
BUNDLE_EVIDENCE = "evidence"


@dataclass
class EvidenceLinks:
    """The links of one page to the runs of one state folder (``state``), from ``page_dir``.

    ``copies`` collects, in a bundle, each linked file and where it goes (``bundle`` writes them).
    """

    state: Path
    page_dir: Path
    bundle: bool = False
    copies: dict[Path, PurePosixPath] = field(default_factory=dict)

    def href(self, run_id: str, relative: str) -> str | None:
        """The page-relative address of ``relative`` (a path under the run's folder), or None when there
        is no such file (or it leaves the run's folder)."""
        parts = PurePosixPath(relative).parts
        if not parts or ".." in parts or PurePosixPath(relative).is_absolute() or ".." in PurePosixPath(run_id).parts:
            return None
        source = self.state / "runs" / run_id / relative
        try:
            if not source.is_file():
                return None
        except OSError:
            return None
        if self.bundle:
            target = PurePosixPath(BUNDLE_EVIDENCE, run_id, relative)
            self.copies[source] = target
            return quote(str(target))
        return quote(Path(os.path.relpath(source, self.page_dir)).as_posix())

    def copy_into(self, folder: Path) -> int:
        """Copy every linked file under ``folder`` (a bundle); the number copied."""
        for source, target in self.copies.items():
            destination = folder / target
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, destination)
        return len(self.copies)
