"""Per-sample cgroups (``fixtures_core.execution.cgroups``): where assay may create them, and a
``Cgroup``'s add, pids, populated, signal, kill and remove on real processes.

These need a writable cgroup v2 hierarchy (root, or a delegated cgroup): elsewhere they are skipped
with the reason. CI runs as root, where the hierarchy is writable.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.execution.cgroups import SWITCH, Cgroup, cgroup_base

BASE = cgroup_base()
needs_cgroups = pytest.mark.skipif(
    BASE is None, reason="no writable cgroup v2 hierarchy here (not root, not delegated) or ASSAY_CGROUPS=off"
)


@pytest.fixture
def group() -> Iterator[Cgroup]:
    """A fresh cgroup below assay's base, killed and removed after the test."""
    assert BASE is not None
    base, shown = BASE
    made = Cgroup.create(base, shown, f"assay-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        yield made
    finally:
        made.kill()
        made.remove()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()


@needs_cgroups
def test_the_base_is_this_process_cgroup_and_is_writable() -> None:
    assert BASE is not None
    base, shown = BASE
    own = procfs.cgroup_of(os.getpid())
    assert own is not None and shown == (own.rstrip("/") or "/")
    assert (base / "cgroup.procs").is_file() and os.access(base / "cgroup.procs", os.W_OK)
    assert not list(base.glob(f"assay-probe-{os.getpid()}"))  # the probe cleaned up after itself
    assert cgroup_base() == BASE  # probed once per process


@pytest.mark.parametrize("value", ["off", "0", "No", " false "])
def test_the_switch_turns_cgroups_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(SWITCH, value)
    assert cgroup_base() is None


@needs_cgroups
def test_create_makes_the_directory_and_names_it_as_proc_shows_it(group: Cgroup) -> None:
    assert BASE is not None
    assert group.path.is_dir() and group.path.parent == BASE[0]
    assert group.shown == f"{BASE[1].rstrip('/')}/{group.path.name}"
    child = group.child("s0")
    assert (child.path, child.shown) == (group.path / "s0", f"{group.shown}/s0")
    with pytest.raises(FileExistsError):
        group.child("s0")


@needs_cgroups
def test_an_added_process_is_listed_populates_the_group_and_proc_names_it(
    group: Cgroup, sleeper: subprocess.Popen[bytes]
) -> None:
    assert group.pids() == [] and not group.populated()
    assert group.add(sleeper.pid)
    assert group.pids() == [sleeper.pid]
    assert group.populated()
    assert procfs.cgroup_of(sleeper.pid) == group.shown


@needs_cgroups
def test_add_of_a_process_that_is_gone_is_false(group: Cgroup) -> None:
    assert group.add(2**22 + 1) is False  # above the default pid_max: no such process
    assert group.pids() == []


@needs_cgroups
def test_signal_reaches_every_process_in_the_group(group: Cgroup, sleeper: subprocess.Popen[bytes]) -> None:
    other = subprocess.Popen(["sleep", "60"])
    try:
        assert group.add(sleeper.pid) and group.add(other.pid)
        assert sorted(group.signal(signal.SIGTERM)) == sorted([sleeper.pid, other.pid])
        assert (sleeper.wait(timeout=20), other.wait(timeout=20)) == (-signal.SIGTERM, -signal.SIGTERM)
    finally:
        other.kill()
        other.wait()


@needs_cgroups
def test_kill_takes_children_in_nested_groups_and_remove_then_succeeds(
    group: Cgroup, sleeper: subprocess.Popen[bytes]
) -> None:
    sample = group.child("s1")
    assert sample.add(sleeper.pid)
    assert group.populated()  # populated counts the groups below it
    group.kill()
    assert sleeper.wait(timeout=20) == -signal.SIGKILL
    assert group.remove()  # removes s1 first
    assert not group.path.exists() and not sample.path.exists()
    assert group.remove()  # already gone: still True


@needs_cgroups
def test_remove_gives_up_while_a_process_lives_in_it(group: Cgroup, sleeper: subprocess.Popen[bytes]) -> None:
    assert group.add(sleeper.pid)
    assert group.remove(wait_s=0.05) is False
    assert group.path.is_dir() and group.pids() == [sleeper.pid]


def test_a_cgroup_outside_any_hierarchy_cannot_be_created(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        Cgroup.create(tmp_path / "absent", "/absent", "g")
