"""The commits between two runs, from a real local git repository; a link for a known forge; nothing fetched."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixtures_core.records.git_changes import SHOWN, changes_between, forge_link


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def commit(folder: Path, subject: str) -> str:
    (folder / "log.txt").write_text((folder / "log.txt").read_text() + subject + "\n")
    git(folder, "add", "log.txt")
    git(folder, "commit", "-q", "-m", f"{subject}\n\nthe body is not shown")
    return git(folder, "rev-parse", "HEAD")


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "log.txt").write_text("")
    git(tmp_path, "remote", "add", "origin", "git@github.com:acme/widgets.git")  # never reached
    return tmp_path


def test_the_commits_between_two_runs_newest_first_with_a_compare_link(repository: Path) -> None:
    before = commit(repository, "Night one")
    subjects = ["Make the parser stricter", "Retry the flaky call", "Speed up the cache"]
    after = ""
    for subject in subjects:
        after = commit(repository, subject)

    found = changes_between(before, after, repository)

    assert found is not None and found.total == 3 and found.more == 0
    assert [c.subject for c in found.commits] == list(reversed(subjects))
    assert found.link == f"https://github.com/acme/widgets/compare/{before}...{after}"
    same = changes_between(after, after, repository)
    assert same is not None and same.total == 0 and same.commits == ()


def test_a_screenful_of_commits_then_a_count_of_the_rest(repository: Path) -> None:
    before = commit(repository, "start")
    after = ""
    for index in range(SHOWN + 5):
        after = commit(repository, f"change {index}")
    found = changes_between(before, after, repository)
    assert found is not None and (len(found.commits), found.total, found.more) == (SHOWN, SHOWN + 5, 5)


def test_a_commit_the_clone_does_not_have_gives_no_changes(
    repository: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    before = commit(repository, "one")
    assert changes_between(before, "0" * 40, repository) is None
    assert changes_between("not-a-sha", before, repository) is None
    assert changes_between(before, before, tmp_path_factory.mktemp("elsewhere")) is None  # no repository there


@pytest.mark.parametrize(
    ("remote", "link"),
    [
        ("git@github.com:acme/widgets.git", "https://github.com/acme/widgets/compare/a1...b2"),
        ("https://github.com/acme/widgets", "https://github.com/acme/widgets/compare/a1...b2"),
        ("ssh://git@gitlab.com/group/sub/proj.git", "https://gitlab.com/group/sub/proj/-/compare/a1...b2"),
        ("https://codeberg.org/acme/widgets.git", "https://codeberg.org/acme/widgets/compare/a1...b2"),
        ("https://git.example.com/acme/widgets.git", None),  # not a forge assay knows
        ("/srv/git/widgets.git", None),
        ("", None),
    ],
)
def test_a_link_only_for_a_known_forge(remote: str, link: str | None) -> None:
    assert forge_link(remote, "a1", "b2") == link
