"""The commits between two runs' commits, read from the local git repository; nothing is fetched.

Both commits must be in the repository of the working directory (``git
cat-file -e``): a commit the clone does not have gives no changes rather
than a fetch. The link is made from the ``origin`` remote's URL when it is a
known forge (GitHub, GitLab, Codeberg): its page comparing the two commits.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from fixtures_core.changes import Changes, Commit

SHOWN = 15  # commits named: about a screenful, the rest counted
_TIMEOUT_S = 5
_FORGES = {
    "github.com": "https://github.com/{path}/compare/{before}...{after}",
    "gitlab.com": "https://gitlab.com/{path}/-/compare/{before}...{after}",
    "codeberg.org": "https://codeberg.org/{path}/compare/{before}...{after}",
}
_REMOTE = re.compile(
    r"^(?:(?:https?|ssh|git)://(?:[^@/]+@)?(?P<host>[^/:]+)(?::\d+)?/|(?:[^@/]+@)?(?P<scp>[^/:]+):)"
    r"(?P<path>[^\s]+?)(?:\.git)?/?$"
)
_SHA = re.compile(r"^[0-9a-f]{7,64}$")


def changes_between(before: str, after: str, cwd: Path | None = None) -> Changes | None:
    """The commits from ``before`` to ``after`` in the repository at ``cwd`` (the working directory); None
    when either is not a commit it has, or git cannot be asked."""
    if not (_SHA.match(before) and _SHA.match(after)):
        return None
    if _git(cwd, "cat-file", "-e", f"{before}^{{commit}}") is None:
        return None
    if _git(cwd, "cat-file", "-e", f"{after}^{{commit}}") is None:
        return None
    counted = _git(cwd, "rev-list", "--count", f"{before}..{after}")
    logged = _git(cwd, "log", f"--max-count={SHOWN}", "--format=%H%x09%s", f"{before}..{after}")
    if counted is None or logged is None:
        return None
    commits = tuple(Commit(*line.split("\t", 1)) for line in logged.splitlines() if "\t" in line)
    return Changes(
        before,
        after,
        commits,
        int(counted.strip() or 0),
        forge_link(_git(cwd, "remote", "get-url", "origin"), before, after),
    )


def forge_link(remote: str | None, before: str, after: str) -> str | None:
    """The compare page of a known forge for a remote URL (``git@github.com:acme/widgets.git``), or None."""
    if not remote:
        return None
    found = _REMOTE.match(remote.strip())
    if found is None:
        return None
    host = (found.group("host") or found.group("scp") or "").lower()
    pattern = _FORGES.get(host)
    path = found.group("path").strip("/")
    if pattern is None or not re.fullmatch(r"[\w.-]+(?:/[\w.-]+)+", path):
        return None
    return pattern.format(path=path, before=before, after=after)


def _git(cwd: Path | None, *args: str) -> str | None:
    """A local git command's output (None when it fails); never a prompt, never the network."""
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    try:
        done = subprocess.run(
            ["git", "--no-pager", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=_TIMEOUT_S
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None
