"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

from fixtures_core.execution.containment import Containment
from tests.processes import processes_with


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
