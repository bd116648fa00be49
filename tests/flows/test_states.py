"""The states and messages the Prefect UI shows for samples, rows and runs."""

from __future__ import annotations

from fixtures_core.results import Check, Outcomes, RowResult, SampleResult
from flows.states import Outcome, carried, row_message, row_state, sample_log, sample_state


def sample(index: int, status: str = "PASS", **fields: object) -> SampleResult:
    values: dict[str, object] = dict(index=index, status=status, duration_ms=1.0, exit_code=0, stdout="",
                                     stderr="", command=Check("pass"))  # fmt: skip
    values.update(fields)
    return SampleResult(**values)  # type: ignore[arg-type]


def row(status: str, samples: tuple[SampleResult, ...], error: str | None = None) -> RowResult:
    return RowResult(
        id="f::r", file="f.md", name="r", line=3, status=status, repeat=len(samples),  # type: ignore[arg-type]
        command=("x",), properties={}, samples=samples, outcomes=Outcomes("pass", "pass"), error=error,
    )  # fmt: skip


def test_a_false_cel_sample_is_failed_with_its_expression_and_exit_code() -> None:
    bad = sample(2, "FAIL", assertions=Check("fail", expression="json.ok"), stderr="boom\n" * 20)
    state = sample_state(bad)
    assert state.is_failed() and state.name == "Failed"
    assert state.message == "FAIL: CEL assertion false: json.ok (exit code 0)"
    assert carried(state, SampleResult) is bad
    log = sample_log("r", bad)
    assert log.startswith("sample 2 of 'r' FAIL: CEL assertion false: json.ok")
    assert log.count("boom") == 4  # the first 4 lines of stderr


def test_a_sample_that_ran_out_of_time_is_timed_out() -> None:
    error = "timed out: the row's 2s budget ran out (the sample's processes were killed)"
    late = sample(0, "ERR", exit_code=None, error=error)
    state = sample_state(late)
    assert state.is_failed() and state.name == "TimedOut" and "budget ran out" in (state.message or "")


def test_a_sample_that_did_not_run_is_completed_and_says_why() -> None:
    unrun = sample(0, "SKIP", exit_code=None, command=Check("not_evaluated", "dry run"), error="dry run")
    state = sample_state(unrun)
    assert state.is_completed() and state.message == "SKIP: dry run"


def test_rows_say_how_many_samples_passed_and_why_they_failed() -> None:
    flaky = row("FAIL", (sample(0), sample(1, "FAIL", assertions=Check("fail", expression="json.ok"))))
    assert row_message(flaky) == "FAIL: 1/2 samples passed; CEL json.ok false on samples 1"
    assert row_state(row("PASS", (sample(0),))).is_completed()
    budget = row("ERR", (), error="time budget 1s ran out after 0 of 1 samples")
    assert row_state(budget).name == "TimedOut"
    exit_code = row("FAIL", (sample(0, "FAIL", exit_code=3, error="exit code 3, expected 0"),))
    assert row_message(exit_code) == "FAIL: 0/1 samples passed; samples 0 failed; sample 0: exit code 3, expected 0"


def test_the_outcome_is_an_exception_prefect_can_raise_with_the_message() -> None:
    outcome = Outcome(row("FAIL", ()), "assay verdict FAIL")
    assert str(outcome) == "assay verdict FAIL" and repr(outcome) == "<RowResult FAIL>"
