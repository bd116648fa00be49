"""What the Prefect UI shows of samples, rows and runs: honest states and concise log lines.

Prefect marks a task Completed whenever it returns normally, whatever its
value says. So every assay task returns a state built here: a passing sample
or row is Completed; a failing one is Failed with its reason (the failing
expectation or CEL, the exit code); a sample or row whose time budget ran
out (``stopped == "timeout"``) is TimedOut; an errored one is Failed with
the error; the flow run is Failed, with both answers and why, whenever the
run exits non-zero (``verdicts.answer``). Tasks return states instead of raising, so a
failing sample never stops its row.

The domain result rides along as the state's data, wrapped in a
``Carried``: Prefect logs the state of every failed task, and a bare result
would put a whole sample's stdout into that line; and where Prefect turns a
Failed state into an exception (a deployment's flow run process does),
a Carried is one, saying the state's message.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from prefect.client.schemas.objects import State
from prefect.states import Completed, Failed

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import describe, status_words
from fixtures_core.reports.status_words import Look
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.text import excerpt

T = TypeVar("T")
_MESSAGE_CHARS = 400


class Carried(Exception, Generic[T]):
    """A result handed back through a Prefect state: a short repr for Prefect's log lines, and an
    exception for Prefect to raise when the state is Failed."""

    def __init__(self, value: T, message: str) -> None:
        super().__init__(message)
        self.value = value

    def __reduce__(self) -> tuple[Any, ...]:
        # An exception pickles as its class and args: keep the value too (a sample's state comes back
        # from a Dask worker pickled).
        return (type(self), (self.value, str(self)))

    def __repr__(self) -> str:
        status = getattr(self.value, "status", "")
        return f"<{type(self.value).__name__} {status}>".replace(" >", ">")


def carried(state: State[Any], kind: type[T]) -> T:
    """The result a task or flow handed back in ``state``; re-raises what the run raised instead."""
    data = state.data  # as the task returned it (results are not persisted); reading it costs no event loop
    if not isinstance(data, Carried):
        data = state.result(raise_on_failure=False)
    if isinstance(data, Carried) and isinstance(data.value, kind):
        return data.value
    if isinstance(data, BaseException):
        raise data
    raise TypeError(f"expected a {kind.__name__} in state {state.name!r}, got {type(data).__name__}")


def _state(settled: bool, name: str | None, timed_out: bool, message: str, value: object) -> State[Any]:
    """Completed when ``settled``, else Failed (TimedOut when its time budget ran out), named ``name``."""
    outcome = Carried(value, message)
    if settled:
        return Completed(message=message, data=outcome, name=name or "Completed")
    if timed_out:
        return Failed(name="TimedOut", message=message, data=outcome)
    return Failed(message=message, data=outcome, name=name or "Failed")


def _shown(look: Look, timed_out: bool, message: str, value: object) -> State[Any]:
    """A state as ``look`` shows its status: Completed when settled (it passed, did not run by design, lost
    or tied a case), named after its word when that is no plain PASS or FAIL (``Skipped``, ``Lost``,
    ``Disqualified``)."""
    word = look.word.split(" (")[0]
    name = None if word in ("PASS", "FAIL", "ERR") else "Skipped" if word == "SKIP" else word.title()
    return _state(look.settled, name, timed_out, message, value)


def sample_state(sample: SampleResult) -> State[Any]:
    """Completed for PASS and SKIP (with why it did not run), Failed with the reason, or TimedOut when
    the row's time budget ran out during it."""
    message = "PASS" if sample.passed else f"{sample.status}: {sample_reason(sample)}"
    return _shown(status_words.status(sample.status), sample.stopped == "timeout", _bounded(message), sample)


def sample_reason(sample: SampleResult) -> str:
    """Why a sample did not pass (the reports' words), with the false CEL itself and the exit code."""
    reason = describe.sample_reason(sample)
    assertion = sample.assertions
    if reason == describe.CEL_FALSE and assertion is not None and assertion.expression:
        reason += f": {assertion.expression}"
    if sample.exit_code is not None and "exit code" not in reason:
        reason += f" (exit code {sample.exit_code})"
    return reason


def sample_log(row_name: str, sample: SampleResult) -> str:
    """A failing sample's log line: which one, why, and the first lines of its stderr (bounded)."""
    line = f"sample {sample.index} of '{row_name}' {sample.status}: {_bounded(sample_reason(sample))}"
    stderr = describe.output_excerpt(sample.stderr)
    if stderr:
        line += "\nstderr:\n" + "\n".join("  " + text for text in stderr.splitlines())
    return line


def row_state(row: RowResult) -> State[Any]:
    """As ``status_words.row`` shows the row: Completed when it passed, was skipped, or (an A/B arm) won,
    lost or tied its case; TimedOut when its time budget ran out; otherwise Failed with the reason."""
    return _shown(status_words.row(row), row.stopped == "timeout", row_message(row), row)


def row_message(row: RowResult) -> str:
    """``WORD: passed/planned samples passed; why`` (the reports' failure, on one line), bounded; a skipped
    row's says what it lacked (``SKIP: requires ...``)."""
    word = status_words.row(row).word
    if row.status == "SKIP":
        return _bounded(f"SKIP: {row_why(row)}")
    message = f"{word}: {describe.passed_phrase(row, 'samples passed')}"
    why = row_why(row)
    return _bounded(f"{message}; {why}" if why else message)


def row_why(row: RowResult) -> str:
    """Why a row did not pass, or which of its samples failed, on one line ("" when none did): its
    error (a metric over its threshold, a budget), then its failing samples' check."""
    if row.status == "SKIP":
        return describe.row_reason(row) or ""
    told = describe.failure(row)
    reasons = [told.error] if told.error else []
    failing = [sample for sample in row.samples if sample.status == "FAIL"]  # an ERR sample's error is the row's
    if failing:
        indices = ", ".join(str(sample.index) for sample in failing)
        if told.expression and any(s.assertions is not None and s.assertions.status == "fail" for s in failing):
            reasons.append(f"CEL {told.expression} false on samples {indices}")
        else:
            reasons.append(f"samples {indices} failed; sample {failing[0].index}: {sample_reason(failing[0])}")
    return "; ".join(reasons)


def row_log(row: RowResult) -> str:
    """A row's log line once its samples are done and it is final (with the rows it compares with)."""
    return f"row '{row.name}' ({row.file}:{row.line}): {row_message(row)}"


def flow_state(run: RunResult) -> State[Any]:
    """Completed when the run exits 0, Failed otherwise (the exit code's answer: with a baseline a
    FAIL that did not regress exits 0), its message naming both answers and why."""
    return _state(run.verdict.exit_code == 0, None, False, verdict_message(run), run)


def verdict_message(run: RunResult) -> str:
    """``assay verdict FAIL · exit 1 (run ID): 1 row failed: 'a'``: both answers, the exit code, why."""
    verdict = run.verdict
    message = f"assay verdict {verdict.answer} (run {run.run_id}): {verdict.why}"
    if verdict.exit_code == 0:
        message += f"; {describe.counts(run)}"
    return _bounded(message, 1000)


def _bounded(text: str, limit: int = _MESSAGE_CHARS) -> str:
    """At most ``limit`` characters, the cut marked (a state message has a bound of its own)."""
    return excerpt(text, limit - 1)
