"""The commits between two runs, as the local git repository tells them (``records.git_changes`` reads them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Commit:
    """One commit: its id and the first line of its message."""

    sha: str
    subject: str


@dataclass(frozen=True)
class Changes:
    """The commits reachable from ``after`` and not from ``before`` (``git log before..after``).

    commits: the newest first, at most a screenful; ``total``: how many there are in all.
    link:    the forge's page comparing the two commits, when the repository's remote is a known forge.
    """

    before: str
    after: str
    commits: tuple[Commit, ...]
    total: int
    link: str | None = None

    @property
    def more(self) -> int:
        return self.total - len(self.commits)
