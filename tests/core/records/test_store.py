"""The state folder (``fixtures_core.records.store``): blessing only what passed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.records.rundoc import to_document
from fixtures_core.records.store import Store, bless_refusal
from tests.suites import EXAMPLE_SUITE, run_in_process


def test_bless_refuses_a_failed_run_unless_forced(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path)
    store = Store(tmp_path)
    failed = replace(run, run_id="failed-run", status="FAIL")
    store.write_run(failed)

    with pytest.raises(UsageError, match=r"not blessing run failed-run: its verdict is FAIL \(--force blesses it"):
        store.bless("failed-run", "shipped")
    assert not store.baseline_file("shipped").exists()

    target = store.bless("failed-run", "shipped", force=True)
    assert json.loads(target.read_text())["run_id"] == "failed-run"
    assert store.bless(run.run_id, "shipped") == target  # a PASS is blessed without --force


def test_a_dry_run_is_never_a_baseline_by_accident(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path, dry_run=True)
    assert run.verdict == "PASS" and to_document(run)["options"]["dry_run"] is True
    assert bless_refusal(run) == "it is a dry run (nothing was scored)"
