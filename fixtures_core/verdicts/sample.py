"""A sample's status, decided here and nowhere else.

In order: a sample whose process could not give an answer (it timed out, was
cancelled, could not start) is ERR; one whose command expectation failed (exit
code, exact stdout or stderr, a missing working folder) is FAIL, its other
checks not evaluated; one whose checks could not be evaluated (a CEL error, an
unreadable ``files``, a gating metric that could not be extracted) is ERR; one
whose CEL assertion is false is FAIL; else PASS. A sample that did not run by
design (a dry run) is SKIP. An A/B arm that ran past its own time limit is
FAIL (its evidence was still taken), never PASS.

``execution.checks`` evaluates the checks; the functions here turn what they
found into the sample's result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fixtures_core.results import Check, MetricValue, SampleResult, Status, Stop


@dataclass(frozen=True)
class Ran:
    """What a sample's process left, whatever its checks say."""

    index: int
    duration_ms: float
    exit_code: int | None
    stdout: str
    stderr: str
    truncated: bool = False


def process_failed(ran: Ran, reason: str, stopped: Stop | None) -> SampleResult:
    """ERR: the process gave no answer to check (``stopped``: the row's budget ran out, or it was cancelled)."""
    return _result(ran, "ERR", Check("error", reason), error=reason, stopped=stopped)


def command_failed(ran: Ran, reason: str, assertion: str | None, metrics: Sequence[str]) -> SampleResult:
    """FAIL: the command expectation failed; the CEL ``assertion`` and the ``metrics`` were not evaluated."""
    return _unchecked(ran, "FAIL", Check("fail", reason), assertion, metrics)


def checked(
    ran: Ran,
    assertion: Check | None,
    metrics: Mapping[str, MetricValue],
    errors: Sequence[str],
    indeterminate: bool,
) -> SampleResult:
    """ERR when a check could not be evaluated (``errors``), FAIL when the assertion is false, else PASS."""
    status: Status = "ERR" if errors else "FAIL" if assertion is not None and assertion.status == "fail" else "PASS"
    return _result(
        ran,
        status,
        Check("pass"),
        assertions=assertion,
        metrics=metrics,
        error="; ".join(errors) or None,
        indeterminate=indeterminate,
    )


def not_run(ran: Ran, reason: str, assertion: str | None, metrics: Sequence[str]) -> SampleResult:
    """SKIP: the sample did not run by design (a dry run), none of its checks evaluated."""
    return _unchecked(ran, "SKIP", Check("not_evaluated", reason), assertion, metrics)


def past_arm_limit(sample: SampleResult, reason: str) -> SampleResult:
    """An A/B arm that ran past its own time limit: FAIL (an ERR stays ERR), never PASS."""
    if sample.status == "ERR":
        return sample
    return replace(sample, status="FAIL", command=Check("fail", reason), error=reason)


def _unchecked(ran: Ran, status: Status, command: Check, assertion: str | None, metrics: Sequence[str]) -> SampleResult:
    """A sample whose checks were not evaluated after ``command``'s outcome; its reason is the command's."""
    return _result(
        ran,
        status,
        command,
        assertions=Check("not_evaluated", expression=assertion) if assertion else None,
        metrics={name: MetricValue("not_evaluated") for name in metrics},
        error=command.error,
    )


def _result(
    ran: Ran,
    status: Status,
    command: Check,
    assertions: Check | None = None,
    metrics: Mapping[str, MetricValue] | None = None,
    error: str | None = None,
    stopped: Stop | None = None,
    indeterminate: bool = False,
) -> SampleResult:
    return SampleResult(
        index=ran.index,
        status=status,
        duration_ms=ran.duration_ms,
        exit_code=ran.exit_code,
        stdout=ran.stdout,
        stderr=ran.stderr,
        truncated=ran.truncated,
        command=command,
        assertions=assertions,
        metrics=dict(metrics or {}),
        error=error,
        stopped=stopped,
        indeterminate=indeterminate,
    )
