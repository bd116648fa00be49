"""The states and messages the Prefect UI shows for samples, rows and runs."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.results import Check, Outcomes, RowResult, SampleResult
from fixtures_core.spec import Expectation, RowSpec
from flows.flow.states import Carried, carried, row_message, row_state, sample_log, sample_state


def sample(index: int, status: str = "PASS", **fields: object) -> SampleResult:
    values: dict[str, object] = dict(index=index, status=status, duration_ms=1.0, exit_code=0, stdout="",
                                     stderr="", command=Check("pass"))  # fmt: skip
    values.update(fields)
    return SampleResult(**values)  # type: ignore[arg-type]


def row(status: str, samples: tuple[SampleResult, ...], error: str | None = None, **fields: object) -> RowResult:
    return RowResult(
        id="f::r", file="f.md", name="r", line=3, status=status, repeat=len(samples),  # type: ignore[arg-type]
        command=("x",), properties={}, samples=samples, outcomes=Outcomes("pass", "pass"), error=error,
        **fields,  # type: ignore[arg-type]
    )  # fmt: skip


def ran(tmp_path: Path, containment: Containment, script: str, **fields: object) -> RowResult:
    """A row that really ran ``script`` (bash) once."""
    values: dict[str, object] = dict(file=str(tmp_path / "f.md"), line=3, name="r", argv=("bash", "-c", script),
                                     expect=Expectation(), properties={})  # fmt: skip
    spec = RowSpec(**{**values, **fields})  # type: ignore[arg-type]
    return run_row(spec, RunSettings(run_id="run-1", tmp_root=str(tmp_path)), containment)


def test_a_false_cel_sample_is_failed_with_its_expression_and_exit_code() -> None:
    bad = sample(2, "FAIL", assertions=Check("fail", expression="json.ok"), stderr="boom\n" * 20)
    state = sample_state(bad)
    assert state.is_failed() and state.name == "Failed"
    assert state.message == "FAIL: CEL assertion false: json.ok (exit code 0)"
    assert carried(state, SampleResult) is bad
    log = sample_log("r", bad)
    assert log.startswith("sample 2 of 'r' FAIL: CEL assertion false: json.ok")
    assert log.count("boom") == 4  # the first 4 lines of stderr


def test_a_sample_that_ran_out_of_time_is_timed_out(tmp_path: Path, containment: Containment) -> None:
    late = ran(tmp_path, containment, "sleep 30", timeout_s=0.5).samples[0]
    assert late.stopped == "timeout"
    state = sample_state(late)
    assert state.is_failed() and state.name == "TimedOut"
    assert state.message == "ERR: timed out: the row's 500ms budget ran out (the sample's processes were killed)"


def test_a_skip_command_that_runs_out_of_time_is_timed_out(tmp_path: Path, containment: Containment) -> None:
    late = ran(tmp_path, containment, "true", timeout_s=0.5, skip_command="sleep 30")
    assert (late.status, late.stopped, late.samples) == ("ERR", "timeout", ())
    state = row_state(late)
    assert state.is_failed() and state.name == "TimedOut"
    assert state.message == "ERR: not run; skip command 'sleep 30' did not finish within the row's time budget"


def test_an_error_that_only_mentions_a_budget_running_out_is_failed_not_timed_out(
    tmp_path: Path, containment: Containment
) -> None:
    # The CEL error quotes stdout: words in an error never decide the state, ``stopped`` does.
    wrong = ran(tmp_path, containment, "echo the budget ran out", expect=Expectation(cel="json.ok"))
    assert (wrong.status, wrong.stopped) == ("ERR", None)
    assert wrong.error is not None and "budget ran out" in wrong.error
    assert row_state(wrong).name == "Failed" and sample_state(wrong.samples[0]).name == "Failed"


def test_a_sample_that_did_not_run_is_completed_and_says_why() -> None:
    unrun = sample(0, "SKIP", exit_code=None, command=Check("not_evaluated", "dry run"), error="dry run")
    state = sample_state(unrun)
    assert state.is_completed() and state.message == "SKIP: dry run"


def test_rows_say_how_many_samples_passed_and_why_they_failed() -> None:
    flaky = row("FAIL", (sample(0), sample(1, "FAIL", assertions=Check("fail", expression="json.ok"))))
    assert row_message(flaky) == "FAIL: 1/2 samples passed; CEL json.ok false on samples 1"
    assert row_state(row("PASS", (sample(0),))).is_completed()
    budget = row("ERR", (), error="time budget 1s ran out after 0 of 1 samples", stopped="timeout")
    assert row_state(budget).name == "TimedOut"
    exit_code = row("FAIL", (sample(0, "FAIL", exit_code=3, error="exit code 3, expected 0"),))
    assert row_message(exit_code) == "FAIL: 0/1 samples passed; samples 0 failed; sample 0: exit code 3, expected 0"


def test_the_outcome_is_an_exception_prefect_can_raise_with_the_message() -> None:
    outcome = Carried(row("FAIL", ()), "assay verdict FAIL")
    assert str(outcome) == "assay verdict FAIL" and repr(outcome) == "<RowResult FAIL>"
