"""A fresh workspace per attempt: copy, commit, set up, and capture what the arm changed.

Every attempt (row x arm x sample) gets its own copy of the suite's
``workspace`` folder, a new git repository whose first commit is the copied
state and whose second commit is the state after ``setup``. What the arm
changed is the diff against that second commit (files it committed itself
included), so one attempt can never see another's files.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import Execution, execute
from fixtures_core.results import Stop
from fixtures_core.suite import Finding, ForbiddenPattern, VerifyResult, VerifySpec, matches_case

# assay's own git calls ignore the user's and the system's git configuration (hooks, signing, templates).
_GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0"}
_GIT_IDENTITY = ("-c", "user.name=assay", "-c", "user.email=assay@localhost", "-c", "commit.gpgsign=false")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
VERIFY_OUTPUT_LIMIT = 64 * 1024


class WorkspaceError(Exception):
    """Preparing or reading a workspace failed (a wiring error: the attempt is ERR); ``stopped`` when
    it failed because its command was stopped (the row's time budget ran out, or a cancellation)."""

    def __init__(self, message: str, stopped: Stop | None = None) -> None:
        super().__init__(message)
        self.stopped = stopped


@dataclass(frozen=True)
class Changes:
    """What an arm changed: the diff against the starting commit and the changed paths."""

    diff: str
    files: tuple[str, ...]


@dataclass
class Workspace:
    """One attempt's repository and the deadline its git calls run under."""

    path: Path
    deadline: float
    containment: Containment | None = None
    start: str = ""

    def git(self, *args: str) -> str:
        """Run git in the workspace; WorkspaceError unless it exits 0."""
        done = execute(
            ["git", *_GIT_IDENTITY, *args],
            deadline=self.deadline,
            cwd=str(self.path),
            env={**os.environ, **_GIT_ENV},
            containment=self.containment,
        )
        if done.exit_code != 0:
            reason = done.error or done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.exit_code}"
            if done.timed_out:
                reason = "the row's time budget ran out"
            raise WorkspaceError(f"git {args[0]} failed: {reason}", done.stopped)
        return done.stdout.decode("utf-8", "replace")

    def commit(self, message: str) -> str:
        """Commit everything (even nothing) and return the commit id."""
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "--no-verify", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


def copy_workspace(source: Path, target: Path, deadline: float, containment: Containment | None) -> Workspace:
    """Copy ``source`` (without its ``.git``) to ``target`` and commit it as the starting state."""
    try:
        shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    except (OSError, shutil.Error) as exc:
        raise WorkspaceError(f"cannot copy workspace {source}: {exc}") from None
    _refuse_links_out(source, target)
    workspace = Workspace(target, deadline, containment)
    workspace.git("init", "-q")
    workspace.start = workspace.commit("assay: starting state")
    return workspace


def _refuse_links_out(source: Path, copy: Path) -> None:
    """WorkspaceError for a symlink of the copy that leads outside it: an arm writing through it would
    change a folder every attempt shares, unseen by the diff and by ``forbidden_files``."""
    root = copy.resolve()
    for folder, names, files in os.walk(copy):
        for name in [*names, *files]:
            link = Path(folder) / name
            if not link.is_symlink():
                continue
            lands = (link.parent / os.readlink(link)).resolve()
            if lands != root and not lands.is_relative_to(root):
                shown = link.relative_to(copy)
                raise WorkspaceError(
                    f"workspace {source}: symlink {shown} leads outside the workspace (to {lands}): every attempt "
                    "would write through it into one shared place, unseen by the diff; make it a copy or a link inside"
                )


def capture(workspace: Workspace) -> Changes:
    """The arm's changes against the starting commit (new files included, via the index)."""
    workspace.git("add", "-A")
    diff = workspace.git("diff", "--cached", "--binary", "--no-color", "--no-ext-diff", workspace.start)
    names = workspace.git("diff", "--cached", "--name-only", "-z", workspace.start)
    return Changes(diff, tuple(name for name in names.split("\0") if name))


def added_lines(diff: str) -> dict[str, list[tuple[int, str]]]:
    """Per changed file, the lines the diff adds with their line numbers in the new file.

    Hunks are read by their line counts, so an added line that itself starts
    with ``++`` is never mistaken for a file header.
    """
    found: dict[str, list[tuple[int, str]]] = {}
    current: list[tuple[int, str]] = []
    number = old_left = new_left = 0
    for line in diff.splitlines():
        if old_left > 0 or new_left > 0:
            if line.startswith("+"):
                current.append((number, line[1:]))
                number, new_left = number + 1, new_left - 1
            elif line.startswith("-"):
                old_left -= 1
            elif not line.startswith("\\"):  # "\ No newline at end of file" counts for neither side
                number, old_left, new_left = number + 1, old_left - 1, new_left - 1
        elif line.startswith("+++ "):
            target = line[4:].strip('"')
            current = [] if target == "/dev/null" else found.setdefault(target.removeprefix("b/"), [])
        elif (hunk := _HUNK.match(line)) is not None:
            old_left = int(hunk.group(1) or 1)
            number = int(hunk.group(2))
            new_left = int(hunk.group(3) or 1)
    return found


def scan(
    changes: Changes, patterns: Sequence[ForbiddenPattern], forbidden_files: Sequence[str], case: str
) -> tuple[Finding, ...]:
    """Forbidden patterns in the added lines (consecutive added lines together, so a pattern may
    span lines) and forbidden files among the changed paths."""
    findings: list[Finding] = []
    added = added_lines(changes.diff)
    for pattern in patterns:
        if not matches_case(pattern.rows, case):
            continue
        regex = re.compile(pattern.pattern, re.MULTILINE)
        rule = pattern.description or pattern.pattern
        for path, lines in added.items():
            if pattern.files and not any(fnmatch.fnmatchcase(path, glob) for glob in pattern.files):
                continue
            text = "\n".join(content for _number, content in lines)
            for match in regex.finditer(text):
                line = lines[text.count("\n", 0, match.start())][0]
                findings.append(Finding(pattern.severity, rule, path, line, match.group(0)[:200]))
    for path in changes.files:
        for glob in forbidden_files:
            if fnmatch.fnmatchcase(path, glob):
                findings.append(Finding("disqualifier", f"forbidden file {glob}", path))
    return tuple(findings)


def run_verify(
    specs: Sequence[VerifySpec],
    commands: Sequence[str],
    workspace: Path,
    env: Mapping[str, str],
    deadline: float,
    containment: Containment | None,
) -> tuple[tuple[VerifyResult, ...], Execution | None]:
    """Run each rendered verification command in the workspace; the results, and the execution
    that ran out of time or was cancelled (then the attempt stops there)."""
    results: list[VerifyResult] = []
    for spec, command in zip(specs, commands, strict=True):
        done = execute(
            ["bash", "-c", command],
            deadline=deadline,
            cwd=str(workspace),
            env=env,
            capture_limit=VERIFY_OUTPUT_LIMIT,
            containment=containment,
        )
        if done.timed_out or done.cancelled:
            return tuple(results), done
        output = (done.stdout + done.stderr).decode("utf-8", "replace")
        passed = (
            done.error is None
            and done.exit_code == spec.exit_code
            and all(text in output for text in spec.contains)
            and not any(text in output for text in spec.not_contains)
        )
        results.append(VerifyResult(command, done.exit_code, passed, output, done.error))
    return tuple(results), None


def verify_score(results: Sequence[VerifyResult]) -> float | None:
    """The fraction of verification commands that passed; None when there were none."""
    return sum(r.passed for r in results) / len(results) if results else None
