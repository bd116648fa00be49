"""A fresh workspace per attempt: copy, commit, set up, and capture what the arm changed.

Every attempt (row x arm x sample) gets its own copy of the suite's
``workspace`` folder, a new git repository whose first commit is the copied
state and whose second commit is the state after ``setup``. What the arm
changed is the diff against that second commit (files it committed itself
included), so one attempt can never see another's files.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import Execution, execute
from fixtures_core.results import Stop
from fixtures_core.suite import Finding, ForbiddenPattern, VerifyResult, VerifySpec

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
            try:
                lands = (link.parent / os.readlink(link)).resolve()
            except (RuntimeError, OSError):  # a loop (Python 3.11 raises RuntimeError, later ones OSError)
                raise WorkspaceError(
                    f"workspace {source}: symlink {link.relative_to(copy)} is a loop (it leads back to itself)"
                ) from None
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


def scan(changes: Changes, patterns: Sequence[ForbiddenPattern], forbidden_files: Sequence[str]) -> tuple[Finding, ...]:
    """Forbidden patterns and forbidden files among the changed paths.

    A pattern of scope ``added`` is matched against the lines the arm added (consecutive added
    lines together, so it may span lines), a finding per match; one of scope ``diff`` against the
    diff of the files it names, headers, context and removed lines included, as devlyn's harness
    scans ``diff.patch`` (one finding per pattern).
    """
    findings: list[Finding] = []
    added = added_lines(changes.diff)
    for pattern in patterns:
        if pattern.scope == "diff":
            findings.extend(_diff_scope_finding(pattern, changes.diff))
            continue
        regex = re.compile(pattern.pattern, re.MULTILINE)
        rule = pattern.description or pattern.pattern
        for path, lines in added.items():
            if pattern.files and not any(fnmatch.fnmatchcase(path, glob) for glob in pattern.files):
                continue
            text = "\n".join(content for _number, content in lines)
            for match in regex.finditer(text):
                line = lines[text.count("\n", 0, match.start())][0]
                findings.append(
                    Finding(pattern.severity, rule, path, line, match.group(0)[:200], source=pattern.pattern)
                )
    for path in changes.files:
        for glob in forbidden_files:
            if fnmatch.fnmatchcase(path, glob):
                findings.append(
                    Finding("disqualifier", f"forbidden file {glob}", path, kind="forbidden_file", source=glob)
                )
    return tuple(findings)


def _diff_scope_finding(pattern: ForbiddenPattern, diff: str) -> list[Finding]:
    """The pattern searched once in the diff's sections whose ``diff --git`` header names one of its
    files (every section without ``files``), without regex flags, as devlyn's harness does."""
    sliced = diff if not pattern.files else "".join(_file_sections(diff, pattern.files))
    match = re.search(pattern.pattern, sliced)
    if match is None:
        return []
    header = sliced.rfind("\ndiff --git ", 0, match.start() + 1)
    where = _DIFF_HEADER.match(sliced, header + 1 if header >= 0 else 0)
    rule = pattern.description or pattern.pattern
    return [
        Finding(
            pattern.severity,
            rule,
            where.group(1) if where else None,
            None,
            match.group(0)[:200],
            source=pattern.pattern,
        )
    ]


_DIFF_HEADER = re.compile(r"diff --git a/(\S+) ")


def _file_sections(diff: str, files: Sequence[str]) -> list[str]:
    """The lines of the diff's file sections whose header line contains one of ``files`` (a substring)."""
    kept, keep = [], False
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            keep = any(name in line for name in files)
        if keep:
            kept.append(line)
    return kept


def missing_files(root: Path, required: Sequence[str]) -> list[str]:
    """The required paths that do not exist below ``root`` after the arm."""
    return [path for path in required if not os.path.exists(root / path)]  # a dangling link is missing


DEPENDENCY_KEYS = ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies")


class DependencyCountError(Exception):
    """package.json could not be read as JSON, so its new dependencies cannot be counted."""


def dependencies_added(workspace: Workspace) -> int:
    """How many dependency names package.json has now that it did not have at the starting commit
    (under ``dependencies``, ``devDependencies``, ``peerDependencies``, ``optionalDependencies``)."""
    current = workspace.path / "package.json"
    if not current.is_file():
        return 0
    now = _dependency_names(current.read_text(encoding="utf-8", errors="replace"))
    listed = workspace.git("ls-tree", "--name-only", workspace.start, "--", "package.json").strip()
    before = _dependency_names(workspace.git("show", f"{workspace.start}:package.json")) if listed else set()
    return len(now - before)


def _dependency_names(text: str) -> set[tuple[str, str]]:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise DependencyCountError(f"package.json is not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise DependencyCountError("package.json is not a JSON object")
    names: set[tuple[str, str]] = set()
    for key in DEPENDENCY_KEYS:
        section = document.get(key)
        if isinstance(section, dict):
            names.update((key, str(name)) for name in section)
    return names


def run_verify(
    specs: Sequence[VerifySpec],
    commands: Sequence[str],
    workspace: Path,
    env: Mapping[str, str],
    deadline: float,
    containment: Containment | None,
) -> tuple[tuple[VerifyResult, ...], Execution | None]:
    """Run each rendered verification command in the workspace; the results, and the execution
    that ran out of the row's time or was cancelled (then the attempt stops there). A command
    past its own ``timeout_s`` is a failed command (reason ``timeout``), and the next one runs."""
    results: list[VerifyResult] = []
    for spec, command in zip(specs, commands, strict=True):
        own = time.monotonic() + spec.timeout_s if spec.timeout_s is not None else deadline
        done = execute(
            [spec.shell, "-c", command],
            deadline=min(own, deadline),
            cwd=str(workspace),
            env=env,
            capture_limit=VERIFY_OUTPUT_LIMIT,
            containment=containment,
        )
        if done.cancelled or (done.timed_out and own >= deadline):
            return tuple(results), done
        stdout = done.stdout.decode("utf-8", "replace")
        output = stdout + done.stderr.decode("utf-8", "replace")
        reason = "timeout" if done.timed_out else _failure(spec, done, stdout, output)
        results.append(
            VerifyResult(command, done.exit_code, reason is None, output, done.error, spec.exit_code, reason)
        )
    return tuple(results), None


def _failure(spec: VerifySpec, done: Execution, stdout: str, output: str) -> str | None:
    """Why a finished verification command failed (devlyn's reasons, checked in its order), or None."""
    if done.error is not None:
        return f"error:{done.error}"
    if done.exit_code != spec.exit_code:
        return "exit"
    if not all(text in output for text in spec.contains) or not all(text in stdout for text in spec.stdout_contains):
        return "missing_contains"
    if any(text in output for text in spec.not_contains) or any(text in stdout for text in spec.stdout_not_contains):
        return "unexpected_text"
    return None


def verify_score(results: Sequence[VerifyResult]) -> float | None:
    """The fraction of verification commands that passed; None when there were none."""
    return sum(r.passed for r in results) / len(results) if results else None
