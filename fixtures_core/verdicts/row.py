"""A row's verdict: its status and every reason, decided here and nowhere else.

A row goes through these steps, in order; each can make it worse under
ERR > FAIL > PASS, and each adds its reason to the row's ``error``:

1. **It could not run**: a configuration error of the row, a daemon that did
   not start, its engine crashed: ERR, and no sample ran.
2. **It did not run by design**: a ``skip`` (a requirement missing, another
   OS), a skip command that said so, a cost budget reached before it began, or
   a dry run that prepared and ran nothing: SKIP, with why.
3. **Its samples** (``verdicts.sample``: the command expectation, then CEL).
4. **The sampling rule**: FAIL when fewer than ``pass_rate`` of its decided
   samples passed (seed 01's rule, a pass rate of 1: any FAIL).
5. **Its metrics and thresholds**, with the comparisons against its baseline
   row: a gating metric that failed makes it FAIL, one in error ERR.
6. **Its judge** (an A/B arm): a judgment that failed makes it ERR.
7. **Disqualification** (an A/B arm): a disqualified arm loses its case
   whatever its score: FAIL, naming the rule or the judge's reason. How an arm
   ended its case (won, lost, tie) is recorded beside its status.
8. **Budget and errors**: an ERR sample, its time budget running out, a
   cancellation or a cost budget that stopped it: ERR.

Steps 1-4 and 8 are known when its samples end (``ran``), 5 once the rows it
compares with have ended (``with_metrics``), 6 and 7 once the judge has
spoken (``judged``, ``with_case``). Each step is a function here, and the
engines call them in that order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from fixtures_core.results import (
    CaseResult,
    MetricSummary,
    Outcome,
    Outcomes,
    RowResult,
    SampleResult,
    Status,
)
from fixtures_core.verdicts.precedence import combine_outcomes, worst

_ROUNDING = 1e-9  # pass_rate * n is a float: 0.8 * 5 must admit 4 passes


@dataclass(frozen=True)
class RowVerdict:
    """A row's status and why (None: nothing against it)."""

    status: Status
    error: str | None = None


def could_not_run(reason: str) -> RowVerdict:
    """Step 1: ERR, nothing ran (a configuration error, a daemon, a crash of the engine)."""
    return RowVerdict("ERR", reason)


def skipped(reason: str) -> RowVerdict:
    """Step 2: SKIP, with why (a requirement, a skip command, a cost budget reached before it began)."""
    return RowVerdict("SKIP", reason)


def ran(samples: Sequence[SampleResult], stop: str | None, pass_rate: float = 1.0) -> RowVerdict:
    """Steps 3, 4 and 8 once its samples have ended: ERR when it stopped on an error (``stop``, its
    first cause) or a sample erred; FAIL when fewer than ``pass_rate`` of its decided samples passed;
    else PASS. SKIP samples weigh like PASS ones (``dry_run_skipped`` makes a wholly skipped row SKIP)."""
    passed = sum(1 for s in samples if s.status == "PASS")
    failed = sum(1 for s in samples if s.status == "FAIL")
    below = failed > 0 and passed < pass_rate * (passed + failed) - _ROUNDING
    others = [s.status for s in samples if s.status not in ("PASS", "FAIL")]
    status = worst("ERR" if stop is not None else "PASS", *others, "FAIL" if below else "PASS")
    return RowVerdict(status, stop)


def outcomes(samples: Sequence[SampleResult], metrics: Outcome | None = None) -> Outcomes:
    """The row's outcome by kind of check: its samples' commands and assertions (and its metrics)."""
    return Outcomes(
        command=combine_outcomes(s.command.status for s in samples),
        assertions=combine_outcomes(s.assertions.status for s in samples if s.assertions is not None),
        metrics=metrics,
    )


def dry_run_skipped(row: RowResult) -> RowResult:
    """Step 2 for a dry run: a row none of whose samples ran (each one SKIP) is SKIP, with their reason."""
    if row.status != "PASS" or not row.samples or any(s.status != "SKIP" for s in row.samples):
        return row
    return replace(row, status="SKIP", error=row.error or row.samples[0].error)


def with_metrics(row: RowResult, metrics: Mapping[str, MetricSummary]) -> RowResult:
    """Step 5: a gating metric that failed (its threshold, its comparison with the baseline row) makes
    the row FAIL, one in error ERR; a SKIP row stays SKIP. The metrics are kept on the row."""
    if not metrics:
        return row
    gating = combine_outcomes(m.status for m in metrics.values() if m.gate)
    reasons = [f"metric {name}: {m.error}" for name, m in metrics.items() if m.gate and m.status in ("fail", "error")]
    row = replace(row, metrics=dict(metrics), outcomes=replace(row.outcomes, metrics=gating))
    if row.status == "SKIP":
        return row
    found: Status = "ERR" if gating == "error" else "FAIL" if gating == "fail" else "PASS"
    return _worse(row, found, reasons)


def judged(row: RowResult, failure: str | None) -> RowResult:
    """Step 6: an arm whose judgment failed (``failure`` says which and why) is ERR."""
    if failure is None:
        return row
    return _worse(row, "ERR", [f"judge: {failure}"])


def with_case(row: RowResult, result: CaseResult | None, disqualified_by: Sequence[str] = ()) -> RowResult:
    """Step 7: how an arm ended its case (``result``); a disqualified arm is FAIL, naming what
    disqualified it (``disqualified_by``: the rules it broke, the judge's reason)."""
    row = replace(row, case_result=result)
    if result != "disqualified" or row.status == "SKIP":
        return row
    why = "; ".join(disqualified_by) or "the judge disqualified it"
    return _worse(row, "FAIL", [f"loses its case whatever its score: {why}"])


def _worse(row: RowResult, status: Status, reasons: Sequence[str]) -> RowResult:
    """The row with ``status`` when it is worse than its own, and ``reasons`` added to its error."""
    told = [row.error] if row.error else []
    for reason in reasons:
        if not any(reason in said for said in told):  # an ERR sample's error often says it already
            told.append(reason)
    return replace(row, status=worst(row.status, status), error="; ".join(told) or None)
