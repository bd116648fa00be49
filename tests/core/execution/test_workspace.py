"""Fresh workspaces (``fixtures_core.execution.workspace``): copy, commit, capture, scan, verify.

Real folders and real git; each call is a few milliseconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from fixtures_core.execution.workspace import (
    Changes,
    DependencyCountError,
    WorkspaceError,
    added_lines,
    capture,
    copy_workspace,
    dependencies_added,
    missing_files,
    run_verify,
    scan,
    verify_score,
)
from fixtures_core.suite import ForbiddenPattern, SuiteSpec, VerifySpec, case_checks


def deadline() -> float:
    return time.monotonic() + 30


@pytest.fixture
def source(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    (folder / "src").mkdir(parents=True)
    (folder / "src" / "app.py").write_text("def main():\n    return 1\n")
    (folder / "README").write_text("hello\n")
    subprocess.run(["git", "init", "-q"], cwd=folder, check=True)  # the source's own history is not copied
    return folder


def test_a_copy_is_a_new_repository_committed_as_the_starting_state(source: Path, tmp_path: Path) -> None:
    workspace = copy_workspace(source, tmp_path / "attempt" / "repo", deadline(), None)

    assert (workspace.path / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    log = workspace.git("log", "--format=%s")
    assert log.splitlines() == ["assay: starting state"]
    assert workspace.git("status", "--porcelain") == ""
    assert workspace.start == workspace.git("rev-parse", "HEAD").strip()


def test_capture_holds_new_edited_deleted_and_committed_files(source: Path, tmp_path: Path) -> None:
    workspace = copy_workspace(source, tmp_path / "w", deadline(), None)
    (workspace.path / "src" / "app.py").write_text("def main():\n    return 2\n")
    (workspace.path / "README").unlink()
    (workspace.path / "new.txt").write_text("created\n")
    (workspace.path / "committed.txt").write_text("by the agent\n")
    workspace.commit("the agent commits its own work")  # an arm that commits is still measured from the start

    changes = capture(workspace)

    assert set(changes.files) == {"src/app.py", "README", "new.txt", "committed.txt"}
    assert "+    return 2" in changes.diff and "-    return 1" in changes.diff
    assert "+created" in changes.diff and "+by the agent" in changes.diff


def test_an_untouched_workspace_has_no_changes(source: Path, tmp_path: Path) -> None:
    workspace = copy_workspace(source, tmp_path / "w", deadline(), None)
    assert capture(workspace) == Changes("", ())


def test_a_missing_source_is_a_workspace_error(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="cannot copy workspace"):
        copy_workspace(tmp_path / "nowhere", tmp_path / "w", deadline(), None)


def test_git_failures_are_workspace_errors(source: Path, tmp_path: Path) -> None:
    workspace = copy_workspace(source, tmp_path / "w", deadline(), None)
    with pytest.raises(WorkspaceError, match="git rev-parse failed"):
        workspace.git("rev-parse", "no-such-commit")


DIFF = """\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,5 @@
 def main():
-    return 1
+    try:
+        return 1
+    except Exception:
+        pass
 # end
diff --git a/notes.md b/notes.md
new file mode 100644
--- /dev/null
+++ b/notes.md
@@ -0,0 +1,2 @@
+++ not a header: an added line starting with ++
+TODO later
"""


def test_added_lines_are_read_by_hunk_counts_with_new_line_numbers() -> None:
    added = added_lines(DIFF)
    assert added["src/app.py"] == [
        (2, "    try:"),
        (3, "        return 1"),
        (4, "    except Exception:"),
        (5, "        pass"),
    ]
    assert added["notes.md"] == [(1, "++ not a header: an added line starting with ++"), (2, "TODO later")]


def test_scan_finds_patterns_across_added_lines_and_forbidden_files() -> None:
    silent = ForbiddenPattern(r"except\b[^:\n]*:\s*\n\s*pass\b", line=1, description="silent catch")
    todo = ForbiddenPattern("TODO", line=2, severity="critical", files=("src/*",))
    only_f2 = ForbiddenPattern("return", line=3, rows=("F2",))
    changes = Changes(DIFF, ("src/app.py", "notes.md", "package-lock.json"))

    suite = SuiteSpec("suite.md", 1, forbidden=(silent, todo, only_f2), forbidden_files=("package-lock.json",))
    checks = case_checks(suite, "F1")  # the suite's checks that apply to case F1

    findings = scan(changes, checks.forbidden, checks.forbidden_files)

    assert [(f.severity, f.rule, f.file, f.line) for f in findings] == [
        ("disqualifier", "silent catch", "src/app.py", 4),
        ("disqualifier", "forbidden file package-lock.json", "package-lock.json", None),
    ]  # TODO is only forbidden under src/, and "return" only in case F2
    assert findings[0].describe() == "disqualifier: silent catch at src/app.py:4"


def test_verify_records_each_command_and_the_score(tmp_path: Path) -> None:
    specs = [
        VerifySpec("true", line=1),
        VerifySpec("echo ok; exit 3", line=2, exit_code=3, contains=("ok",)),
        VerifySpec("echo FAIL", line=3, not_contains=("FAIL",)),
        VerifySpec("no-such-command-assay", line=4),
    ]
    results, stopped = run_verify(specs, [s.run for s in specs], tmp_path, dict(os.environ), deadline(), None)

    assert stopped is None
    assert [(r.command, r.exit_code, r.passed) for r in results] == [
        ("true", 0, True),
        ("echo ok; exit 3", 3, True),
        ("echo FAIL", 0, False),
        ("no-such-command-assay", 127, False),
    ]
    assert results[1].output == "ok\n"
    assert verify_score(results) == pytest.approx(0.5)  # 2 of 4
    assert verify_score(()) is None


def test_verify_stops_when_the_budget_runs_out(tmp_path: Path) -> None:
    specs = [VerifySpec("sleep 5", line=1), VerifySpec("true", line=2)]
    results, stopped = run_verify(specs, ["sleep 5", "true"], tmp_path, dict(os.environ), time.monotonic() + 0.3, None)
    assert results == () and stopped is not None and stopped.timed_out


@pytest.mark.parametrize("target", ["../shared", "/ABS"], ids=["relative-out", "absolute"])
def test_a_symlink_leading_out_of_the_workspace_is_refused(source: Path, tmp_path: Path, target: str) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (source / "out").symlink_to(target.replace("/ABS", str(shared)) if target == "/ABS" else "../shared")
    with pytest.raises(WorkspaceError) as caught:
        copy_workspace(source, tmp_path / "attempt" / "w", deadline(), None)
    assert "symlink out leads outside the workspace" in str(caught.value)


def test_a_symlink_inside_the_workspace_is_kept_as_a_link(source: Path, tmp_path: Path) -> None:
    (source / "app-link.py").symlink_to("src/app.py")
    workspace = copy_workspace(source, tmp_path / "w", deadline(), None)
    assert (workspace.path / "app-link.py").is_symlink()
    assert (workspace.path / "app-link.py").read_text() == "def main():\n    return 1\n"


def test_a_diff_scope_pattern_sees_context_and_removed_lines_of_the_files_it_names() -> None:
    # devlyn's harness searches the file-sliced diff.patch: "def main():" is a context line, "return 1" removed
    spans = ForbiddenPattern(r"def main\(\):\n-    return 1", line=1, description="spans", scope="diff")
    elsewhere = ForbiddenPattern("return", line=2, files=("notes.md",), scope="diff")
    removed = ForbiddenPattern("return 1", line=3, scope="added")  # assay's rule: only what the arm added
    changes = Changes(DIFF, ("src/app.py", "notes.md"))

    findings = scan(changes, [spans, elsewhere], [])

    assert [(f.severity, f.rule, f.file, f.source) for f in findings] == [
        ("disqualifier", "spans", "src/app.py", r"def main\(\):\n-    return 1"),
    ]  # "return" appears only outside notes.md's section
    assert [f.text for f in scan(changes, [removed], [])] == ["return 1"]  # the added "        return 1"


def test_new_dependencies_are_counted_against_the_starting_commit(source: Path, tmp_path: Path) -> None:
    (source / "package.json").write_text(json.dumps({"dependencies": {"express": "4"}, "devDependencies": {}}))
    workspace = copy_workspace(source, tmp_path / "w", deadline(), None)
    package = {"dependencies": {"express": "4", "left-pad": "1"}, "devDependencies": {"jest": "29"}}
    (workspace.path / "package.json").write_text(json.dumps(package, indent=2))

    assert dependencies_added(workspace) == 2  # left-pad and jest; express was there at the start

    (workspace.path / "package.json").write_text("{ not json")
    with pytest.raises(DependencyCountError, match="package.json is not JSON"):
        dependencies_added(workspace)


def test_missing_files_are_the_required_paths_that_do_not_exist(source: Path) -> None:
    assert missing_files(source, ["src/app.py", "tests/test_app.py", "README"]) == ["tests/test_app.py"]


def test_verify_matches_stdout_alone_where_the_key_says_stdout(tmp_path: Path) -> None:
    specs = [
        VerifySpec("echo ok >&2", line=1, stdout_contains=("ok",)),  # on stderr only: not in stdout
        VerifySpec("echo ok >&2", line=2, contains=("ok",)),  # contains: stdout and stderr
        VerifySpec("echo bad", line=3, stdout_not_contains=("bad",)),
        VerifySpec("exit 4", line=4),
    ]
    results, stopped = run_verify(specs, [s.run for s in specs], tmp_path, dict(os.environ), deadline(), None)

    assert stopped is None
    assert [(r.passed, r.reason) for r in results] == [
        (False, "missing_contains"),
        (True, None),
        (False, "unexpected_text"),
        (False, "exit"),
    ]


def test_a_command_past_its_own_timeout_fails_and_the_next_one_runs(tmp_path: Path) -> None:
    specs = [VerifySpec("sleep 30", line=1, timeout_s=0.5), VerifySpec("true", line=2, shell="sh")]

    results, stopped = run_verify(specs, [s.run for s in specs], tmp_path, dict(os.environ), deadline(), None)

    assert stopped is None
    assert [(r.passed, r.reason) for r in results] == [(False, "timeout"), (True, None)]
