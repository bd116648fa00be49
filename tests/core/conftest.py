"""Shared fixtures of the unit tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from fixtures_core.records.rundoc import RunResult
from tests.suites import EXAMPLE_SUITE, run_in_process


@dataclass(frozen=True)
class ExampleRun:
    """One run of the example A/B suite and its state folder (read it, do not change it)."""

    run: RunResult
    state: Path


@pytest.fixture(scope="session")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> ExampleRun:
    """The example A/B suite, run once for every test that only reads what it wrote."""
    state = tmp_path_factory.mktemp("example-ab")
    return ExampleRun(run_in_process(EXAMPLE_SUITE, state), state)
