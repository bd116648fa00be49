"""The shareable form of results: what ``run.json`` keeps of the samples' output.

``run.json`` is the file people bless, attach to CI and share, so it carries
counts, statuses, checks and metrics, and of the raw output only what explains
a failure: a failing sample's first ``EXCERPT_CHARS`` characters per stream
(and per A/B verification command), nothing of a passing one, and a judge's
rationale cut at ``RATIONALE_CHARS``. The raw output (up to the capture
limit) stays in the run's evidence files and each attempt's ``verify.json``,
the judge's whole answer in its ``judge/CASE/SAMPLE/`` folder (seed 02: raw
answers stay in the evidence).
"""

from __future__ import annotations

from dataclasses import replace

from fixtures_core.analysis.shipgate import SuiteOutcome
from fixtures_core.judgment import Judgment
from fixtures_core.results import RowResult, SampleResult

EXCERPT_CHARS = 500
RATIONALE_CHARS = 1000
_CUT_NOTE = "… [cut at {kept:,} of {whole:,} characters; the whole text is in {where}/judgment.json]"


def shareable_sample(sample: SampleResult) -> SampleResult:
    """A sample with its output reduced to what the run document keeps (idempotent)."""
    limit = 0 if sample.passed else EXCERPT_CHARS
    attempt = sample.attempt
    verify_cut = attempt is not None and any(len(v.output) > limit for v in attempt.verify)
    if len(sample.stdout) <= limit and len(sample.stderr) <= limit and not verify_cut:
        return sample
    if attempt is not None and verify_cut:
        attempt = replace(attempt, verify=tuple(replace(v, output=v.output[:limit]) for v in attempt.verify))
    return replace(sample, stdout=sample.stdout[:limit], stderr=sample.stderr[:limit], attempt=attempt, excerpted=True)


def shareable_row(row: RowResult) -> RowResult:
    """A row whose samples are shareable."""
    return replace(row, samples=tuple(shareable_sample(s) for s in row.samples))


def shareable_judgment(judgment: Judgment) -> Judgment:
    """A judgment whose rationale is cut at ``RATIONALE_CHARS``, saying where the whole text is (idempotent:
    a cut rationale ends with its note, within the bound)."""
    text = judgment.rationale
    if text is None or len(text) <= RATIONALE_CHARS + len(_CUT_NOTE) + 120:
        return judgment
    note = _CUT_NOTE.format(kept=RATIONALE_CHARS, whole=len(text), where=judgment.evidence or "judge")
    return replace(judgment, rationale=text[:RATIONALE_CHARS].rstrip() + note)


def shareable_suite(outcome: SuiteOutcome) -> SuiteOutcome:
    """A suite outcome whose judges' rationales are cut (``shareable_judgment``)."""
    if not any(j.rationale and len(j.rationale) > RATIONALE_CHARS for c in outcome.cases for j in c.judgments):
        return outcome
    cases = tuple(replace(c, judgments=tuple(map(shareable_judgment, c.judgments))) for c in outcome.cases)
    return replace(outcome, cases=cases)
