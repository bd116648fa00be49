"""Why a row or a sample did not pass, in one line, for every report that says it.

Reports read results only; these words never decide a status.
"""

from __future__ import annotations

from fixtures_core.results import RowResult, SampleResult

CEL_FALSE = "CEL assertion false"


def sample_reason(sample: SampleResult) -> str:
    """Which check a sample failed: its error, the command expectation, or the CEL assertion."""
    if sample.error:
        return sample.error
    if sample.command.status != "pass" and sample.command.error:
        return sample.command.error
    assertion = sample.assertions
    if assertion is not None and assertion.status == "error":
        return assertion.error or "CEL error"
    if assertion is not None and assertion.status == "fail":
        return CEL_FALSE
    return sample.status


def row_reason(row: RowResult) -> str | None:
    """Why a row did not pass (None for PASS): its own error, else its failing samples' check."""
    if row.status == "PASS":
        return None
    if row.error:
        return row.error
    if row.status == "SKIP":
        return "skipped"
    bad = [s for s in row.samples if not s.passed]
    if not bad:
        return row.status
    which = ", ".join(str(s.index) for s in bad)
    return f"{sample_reason(bad[0])} on sample{'s' if len(bad) > 1 else ''} {which} of {len(row.samples)}"


def assertion_expression(row: RowResult) -> str | None:
    """The CEL assertion a row's samples were checked with, if any."""
    return next((s.assertions.expression for s in row.samples if s.assertions and s.assertions.expression), None)
