"""The state folder: bounded, collision-free file names; incomplete and malformed runs named, not fatal;
blessing only what passed."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from fixtures_core.errors import BaselineError, RunFileError, UsageError, as_baseline
from fixtures_core.records.rundoc import load_run, to_document
from fixtures_core.records.store import Store, bless_refusal
from fixtures_core.reports import terminal
from tests.core.records.test_rundoc import small_run
from tests.suites import EXAMPLE_SUITE, run_in_process


def test_a_sample_of_a_row_with_a_300_character_name_is_recorded(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.prepare_evidence("r1")
    sample = small_run().rows[0].samples[0]
    store.write_sample("r1", 0, "n" * 300, sample)
    store.write_sample("r1", 1, "a/b", sample)
    store.write_sample("r1", 2, "a_b", sample)
    files = sorted(p.name for p in (tmp_path / "runs" / "r1" / "evidence").iterdir())
    assert len(files) == 3 and all(len(name) < 120 for name in files)


def test_blessed_names_that_differ_are_kept_apart(tmp_path: Path) -> None:
    store = Store(tmp_path)
    run = small_run()
    store.write_run(run)
    store.bless(run.run_id, "team/a")
    store.bless(run.run_id, "team_a")
    assert store.baseline_file("team/a") != store.baseline_file("team_a")
    assert {p.name for p in (tmp_path / "baselines").iterdir()} == {
        store.baseline_file("team/a").name,
        store.baseline_file("team_a").name,
        "blessed.jsonl",  # the record of every bless
    }


def test_history_lists_good_runs_and_names_a_malformed_and_an_incomplete_one(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.write_run(small_run())
    bad = tmp_path / "runs" / "20990101T000000Z-bad"
    bad.mkdir(parents=True)
    (bad / "run.json").write_text('{"schema": "assay.run/v1", "summary": [1]}')
    (tmp_path / "runs" / "20990101T000001Z-killed" / "evidence").mkdir(parents=True)
    text = io.StringIO()
    terminal.render_history(store.runs(), Console(file=text, width=200))
    lines = text.getvalue().splitlines()
    killed = next(line for line in lines if "20990101T000001Z-killed" in line)
    broken = next(line for line in lines if "20990101T000000Z-bad" in line)
    assert "incomplete" in killed and "no run.json" in killed
    assert "unreadable" in broken and "summary: expected an object" in broken
    assert any(small_run().run_id in line and "PASS" in line for line in lines)


def test_baseline_latest_that_is_malformed_is_named(tmp_path: Path) -> None:
    store = Store(tmp_path)
    store.latest.parent.mkdir(parents=True, exist_ok=True)
    store.latest.write_text('{"schema": "assay.run/v1", "fixtures": 3}')
    with pytest.raises(RunFileError, match="latest.json: malformed run document: fixtures: expected a list"):
        load_run(store.resolve_run("latest"))


def test_a_reference_that_is_a_fifo_reaches_the_loader_which_refuses_it(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "base.json"
    os.mkfifo(fifo)
    assert Store(tmp_path / "state").resolve_run(str(fifo)) == fifo
    with pytest.raises(RunFileError, match="a FIFO"):
        load_run(fifo)


def test_a_runs_folder_names_its_run_and_a_missing_run_is_named_as_a_run(tmp_path: Path) -> None:
    """``assay show``, ``report``, ``bless`` take the folder a run is kept in; what is no run is a run's error,
    and a baseline's only where it was given as a baseline."""
    store = Store(tmp_path / "state")
    path = store.write_run(small_run())
    assert store.resolve_run(str(path.parent)) == path
    path.unlink()
    with pytest.raises(RunFileError, match="a folder without run.json") as unfinished:
        store.resolve_run(str(path.parent))
    assert not isinstance(unfinished.value, BaselineError)
    with pytest.raises(RunFileError, match=r"^run nope: no such run file, run folder, run id") as missing:
        store.resolve_run("nope")
    assert not isinstance(missing.value, BaselineError)
    with pytest.raises(BaselineError, match=r"^baseline nope: no such run file"), as_baseline():
        store.resolve_run("nope")


def test_a_reference_too_long_for_a_file_name_is_no_run(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="no such run file"):
        Store(tmp_path).resolve_run("x" * 5000)


def test_runs_closing_at_once_in_one_process_leave_every_run_and_latest_whole(tmp_path: Path) -> None:
    store = Store(tmp_path)
    runs = [replace(small_run(), run_id=f"20260101T00000{i}Z-{i}") for i in range(8)]
    threads = [threading.Thread(target=store.write_run, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for run in runs:
        assert load_run(store.run_file(run.run_id)) == run
    assert load_run(store.latest).run_id in {run.run_id for run in runs}
    assert not [p for p in tmp_path.rglob("*.tmp")], "no temporary file is left behind"
    assert json.loads(store.latest.read_text())["schema"] == "assay.run/v1"


def test_bless_refuses_a_failed_run_unless_forced(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path)
    store = Store(tmp_path)
    failed = replace(run, run_id="failed-run", status="FAIL")
    store.write_run(failed)

    with pytest.raises(UsageError, match=r"not blessing run failed-run: its verdict is FAIL \(.*\) \(--force blesses"):
        store.bless("failed-run", "shipped")
    assert not store.baseline_file("shipped").exists()

    target = store.bless("failed-run", "shipped", force=True)
    assert json.loads(target.read_text())["run_id"] == "failed-run"
    assert store.bless(run.run_id, "shipped") == target  # a PASS is blessed without --force


def test_a_dry_run_is_never_a_baseline_by_accident(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path, dry_run=True)
    # nothing was scored: the document says SKIP, the reports DRY RUN, and it exits 0
    assert (run.status, run.verdict.shown, run.verdict.exit_code) == ("SKIP", "DRY RUN", 0)
    assert to_document(run)["status"] == "SKIP" and to_document(run)["options"]["dry_run"] is True
    assert bless_refusal(run) == "it is a dry run (nothing was scored)"
