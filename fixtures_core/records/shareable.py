"""The shareable form of results: what ``run.json`` keeps of the samples' output.

``run.json`` is the file people bless, attach to CI and share, so it carries
counts, statuses, checks and metrics, and of the raw output only what explains
a failure: a failing sample's first ``EXCERPT_CHARS`` characters per stream
(and per A/B verification command), nothing of a passing one. The raw output
(up to the capture limit) stays in the run's evidence files and each
attempt's ``verify.json`` (seed 02: raw answers stay in the evidence).
"""

from __future__ import annotations

from dataclasses import replace

from fixtures_core.results import RowResult, SampleResult

EXCERPT_CHARS = 500


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
