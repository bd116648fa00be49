"""Fixtures shared by every test folder."""

from __future__ import annotations

import compileall
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from tests.processes import processes_with

# The suite starts hundreds of assay processes. Where the environment says PYTHONDONTWRITEBYTECODE (CI
# images do), none of them leaves bytecode behind, so each compiles assay's own modules again: about 0.6 s
# of CPU per process. Compiled once here, they are read by every process (the variable stops writing only,
# so the samples' own folders still get no __pycache__).
for _package in ("fixtures_core", "flows", "deployments"):
    compileall.compile_dir(Path(__file__).resolve().parents[1] / _package, quiet=1)


@pytest.fixture
def containment() -> Iterator[Containment]:
    """A run's containment, closed after the test (its cgroups removed, the subreaper given back)."""
    with Containment() as scope:
        yield scope


@pytest.fixture
def marker(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A marker every process the test starts inherits (``ASSAY_TEST_MARK``), so a survivor can be found;
    whatever still carries it at the end is killed."""
    mark = uuid.uuid4().hex
    monkeypatch.setenv("ASSAY_TEST_MARK", mark)
    yield mark
    for pid in processes_with(mark):
        os.kill(pid, signal.SIGKILL)
