"""A disk that is full when a run starts: one line naming the file that could not be written (exit 2), and no
run folder left behind that ``history`` would list and ``--resume`` could never resume.

Two real ways to fill it: a 64 KiB tmpfs filled to the brim (needs root to mount; skipped otherwise), and
a file-size limit (``RLIMIT_FSIZE``: past it, writes fail with EFBIG, and Python ignores SIGXFSZ)."""

from __future__ import annotations

import contextlib
import os
import re
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import REPO

FIXTURE = "| Name | Command |\n|---|---|\n| one | `echo one` |\n"


@contextlib.contextmanager
def full_tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        with contextlib.suppress(OSError), open(where / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        yield where / "state"
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def run(tmp_path: Path, state: Path, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "flows.run", "fixture.md", "--engine", "local", "--out", str(state)],
        cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True, timeout=120,
        preexec_fn=cap,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["tmpfs", "rlimit"])
def test_a_full_disk_at_start_names_the_file_and_leaves_no_dead_run(tmp_path: Path, how: str) -> None:
    # The file named is the first that could not be made: the run folder (a tmpfs full to the brim) or
    # its start record (a file-size limit lets the lock's pid through).
    (tmp_path / "fixture.md").write_text(FIXTURE)
    with contextlib.ExitStack() as stack:
        if how == "tmpfs":
            state = stack.enter_context(full_tmpfs(tmp_path / "tiny"))
            done = run(tmp_path, state)
        else:
            state = tmp_path / "state"
            done = run(tmp_path, state, limit=64)  # the lock's pid fits, the start record does not
        runs = list((state / "runs").iterdir()) if (state / "runs").is_dir() else []
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(
        rf"error: {re.escape(str(state))}/runs/[^/\s]+(/\S+)?: (No space left on device|File too large): "
        r"the run could not start \(nothing ran; its folder \S+ was removed\)\n",
        done.stderr,
    ), done.stderr
    assert runs == [], "a run folder that can never be resumed was left behind"
