"""Test helper: A/B example paths, and a fixture run through the real pipeline under a fresh run id."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.records.rundoc import RunResult
from fixtures_core.records.store import new_run_id
from tests.pipeline import run_fixture

REPO = Path(__file__).resolve().parents[1]
EXAMPLE_SUITE = REPO / "examples" / "ab" / "suite.md"


def run_in_process(path: Path, out: Path, **options: object) -> RunResult:
    """``run_fixture`` under a new run id, so several runs can share one state folder."""
    return run_fixture(path, out, run_id=new_run_id(), **options)
