"""Reading back a run's raw rows from its evidence (``fixtures_core.records.evidence``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import RunFileError
from fixtures_core.records.evidence import raw_rows
from fixtures_core.records.shareable import shareable_sample
from fixtures_core.records.store import Store
from tests.core.conftest import ExampleRun
from tests.suites import EXAMPLE_SUITE, run_in_process


def test_raw_rows_come_back_with_their_samples_and_attempts(example_run: ExampleRun) -> None:
    run, state = example_run.run, example_run.state

    rows = raw_rows(Store(state).run_dir(run.run_id))

    assert list(rows) == [row.id for row in run.rows]
    for finished in run.rows:
        raw = rows[finished.id]
        # as its samples left it: the judge (a disqualification, config-comments' hasty) speaks after
        before_the_judge = "PASS" if finished.case_result == "disqualified" else finished.status
        assert (raw.status, raw.name, len(raw.samples)) == (before_the_judge, finished.name, 1)
        assert raw.case_result is None
        assert raw.metrics == {}  # before finalize, before the judge: no score yet
        assert "score" not in raw.samples[0].metrics and "score" in finished.samples[0].metrics
        # the evidence keeps the attempt whole; run.json keeps no verify output of a passing sample
        assert shareable_sample(raw.samples[0]).attempt == finished.samples[0].attempt
        # run.json keeps no output of a passing sample; the evidence keeps all of it (re-judging needs it)
        assert finished.samples[0].stdout == "" and finished.samples[0].excerpted
        attempt = raw.samples[0].attempt
        assert attempt is not None
        folder = Store(state).run_dir(run.run_id) / attempt.evidence
        assert raw.samples[0].stdout == (folder / "stdout.txt").read_text() != ""


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path)
    folder = Store(tmp_path).run_dir(run.run_id) / "evidence"
    first = sorted(folder.glob("*.jsonl"))[0]
    first.write_text(first.read_text() + '{"sample": {"ind')

    assert len(raw_rows(folder.parent)) == len(run.rows)


def test_a_run_without_evidence_cannot_be_rejudged(tmp_path: Path) -> None:
    with pytest.raises(RunFileError, match="no evidence folder"):
        raw_rows(tmp_path)
