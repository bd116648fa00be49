"""Fixtures shared by every test folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fixtures_core.execution.containment import Containment


@pytest.fixture
def containment() -> Iterator[Containment]:
    """A run's containment, closed after the test (its cgroups removed, the subreaper given back)."""
    with Containment() as scope:
        yield scope
