"""What ``run.json`` keeps of the samples' output (``fixtures_core.records.shareable``): nothing of a
passing sample, the first EXCERPT_CHARS characters per stream of a failing one.

Samples come from real subprocesses (``run_row``), so the output is what a command really printed.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.shareable import EXCERPT_CHARS, shareable_row, shareable_sample
from fixtures_core.records.store import Store
from fixtures_core.results import Check, RowResult, SampleResult, Status
from fixtures_core.spec import Expectation, RowSpec
from tests.core.conftest import ExampleRun

# 600 "o" on stdout and 40 "e" on stderr; exits 0 the first time (no marker file yet), 1 after.
PRINTS = (
    "import pathlib, sys; print('o' * 600); print('e' * 40, file=sys.stderr); marker = pathlib.Path(sys.argv[1]); "
    "again = marker.exists(); marker.touch(); sys.exit(1 if again else 0)"
)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> RowResult:
    """One real row whose samples run one after another: sample 0 exits 0 (PASS), sample 1 exits 1 (FAIL)."""
    marker = tmp_path_factory.mktemp("shareable") / "ran-once"
    spec = RowSpec(
        file="f.md",
        line=3,
        name="prints",
        argv=(sys.executable, "-c", PRINTS, str(marker)),
        expect=Expectation(exit_code=0),
        properties={},
        repeat=2,
    )
    with Containment() as containment:
        return run_row(spec, RunSettings(run_id="r"), containment)


def sample(status: Status, stdout: str, stderr: str = "") -> SampleResult:
    return SampleResult(0, status, 1.0, 0, stdout, stderr, Check("pass" if status == "PASS" else "fail"))


def test_a_passing_sample_keeps_no_output_and_says_so(ran: RowResult) -> None:
    passed = ran.samples[0]
    assert (passed.status, len(passed.stdout), len(passed.stderr)) == ("PASS", 601, 41)
    kept = shareable_sample(passed)
    assert (kept.stdout, kept.stderr, kept.excerpted) == ("", "", True)
    assert replace(kept, stdout=passed.stdout, stderr=passed.stderr, excerpted=False) == passed  # nothing else changed


def test_a_failing_sample_keeps_the_start_of_each_stream(ran: RowResult) -> None:
    failed = ran.samples[1]
    assert (failed.status, failed.exit_code) == ("FAIL", 1)
    kept = shareable_sample(failed)
    assert kept.stdout == "o" * EXCERPT_CHARS == failed.stdout[:500]
    assert kept.stderr == failed.stderr == "e" * 40 + "\n"  # shorter than the limit: whole
    assert kept.excerpted


@pytest.mark.parametrize(
    ("status", "stdout", "stderr"),
    [("PASS", "", ""), ("FAIL", "x" * EXCERPT_CHARS, "y"), ("ERR", "", "z" * EXCERPT_CHARS)],
)
def test_a_sample_within_the_limit_is_returned_unchanged(status: Status, stdout: str, stderr: str) -> None:
    original = sample(status, stdout, stderr)
    assert shareable_sample(original) is original  # not marked excerpted: nothing was cut


def test_shareable_sample_is_idempotent(ran: RowResult) -> None:
    for raw in ran.samples:
        once = shareable_sample(raw)
        assert shareable_sample(once) == once


def test_shareable_row_reduces_every_sample_and_keeps_the_rest(ran: RowResult) -> None:
    row = shareable_row(ran)
    assert row.samples == tuple(shareable_sample(s) for s in ran.samples)
    assert replace(row, samples=ran.samples) == ran
    assert [(len(s.stdout), s.excerpted) for s in row.samples] == [(0, True), (EXCERPT_CHARS, True)]


def test_run_json_keeps_no_verify_output_of_a_passing_attempt(example_run: ExampleRun) -> None:
    # The example suite's verification commands print (unittest's report on stderr, the CLI's greeting):
    # in run.json a passing sample keeps none of it; each attempt's verify.json holds it whole.
    document = json.loads((Store(example_run.state).run_file(example_run.run.run_id)).read_text())
    samples = [s for f in document["fixtures"] for row in f["rows"] for s in row["samples"]]
    verified = [s for s in samples if s.get("attempt", {}).get("verify")]
    assert verified and all(s["status"] == "PASS" for s in verified)
    assert all(v.get("output", "") == "" for s in verified for v in s["attempt"]["verify"])
    evidence = example_run.state / "runs" / example_run.run.run_id / verified[0]["attempt"]["evidence"]
    kept = json.loads((evidence / "verify.json").read_text())
    assert any(v["output"] for v in kept), "the evidence keeps what the commands printed"


def test_a_judges_rationale_is_cut_and_says_where_the_whole_text_is(example_run: ExampleRun) -> None:
    from fixtures_core.records.shareable import RATIONALE_CHARS, shareable_judgment

    (suite,) = example_run.run.suites
    judgment = suite.cases[0].judgments[0]
    long = replace(judgment, rationale="why " * 5000)  # 20,000 characters, as a real judge wrote once
    cut = shareable_judgment(long)
    assert cut.rationale is not None and len(cut.rationale) < RATIONALE_CHARS + 200
    assert cut.rationale.startswith("why why")
    assert cut.rationale.endswith(
        f"… [cut at {RATIONALE_CHARS:,} of 20,000 characters; the whole text is in {judgment.evidence}/judgment.json]"
    )
    assert shareable_judgment(cut) == cut  # loading a run document again cuts nothing more
    assert shareable_judgment(judgment) == judgment  # a short one stays whole
