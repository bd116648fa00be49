"""Integration fixtures: one Prefect test harness for the whole session (it costs ~10 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flows.prefect_env import quiet_prefect

quiet_prefect()

REPO = Path(__file__).resolve().parents[2]
WIDE = {"COLUMNS": "200"}  # one terminal line per table row, whatever the test runner's width


@pytest.fixture(scope="session")
def prefect_backend() -> Iterator[None]:
    """A real Prefect API (temporary SQLite database, subprocess server) for this session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness():
        yield


def run_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m flows.run ARGS`` as a user would, in its own process."""
    full_env = dict(os.environ)
    full_env.pop("PREFECT_API_URL", None)
    full_env["PYTHONPATH"] = str(REPO)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "flows.run", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def run_local(fixture: Path, tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run a fixture with the local engine; the finished process and its run document (``--json``)."""
    target = tmp_path / "run.json"
    done = run_cli(
        [str(fixture), "--engine", "local", "--out", str(tmp_path / "state"), "--json", str(target), *extra],
        cwd=tmp_path,
        env=WIDE,
        timeout=60,
    )
    assert "Traceback" not in done.stderr, done.stderr
    document = json.loads(target.read_text()) if target.exists() else {}
    return done, document
