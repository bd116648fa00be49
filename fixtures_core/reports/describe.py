"""The words and figures every report of a run shows, as plain text.

The terminal report styles them and the Markdown report lays them out as
Markdown; the HTML and JUnit reports and the Prefect states read the same
words (why a sample or a row did not pass, an output excerpt) from here, so
every report says the same thing. Reports read results only; these words
never decide a status.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from fixtures_core.analysis.passk import SuiteFigures
from fixtures_core.analysis.shipgate import CaseOutcome, SuiteOutcome
from fixtures_core.analysis.trends import run_costs
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports import status_words
from fixtures_core.reports.comparison import baseline_facts
from fixtures_core.reports.status_words import Look
from fixtures_core.results import BudgetFigures, MetricSummary, RowResult, SampleResult
from fixtures_core.suite import VerifyResult
from fixtures_core.text import counted, excerpt

_EXCERPT_LINES = 4
_EXCERPT_CHARS = 300
CEL_FALSE = "CEL assertion false"


def median_duration_ms(row: RowResult) -> float | None:
    """Median wall time of the samples of a row that ran."""
    durations = [s.duration_ms for s in row.samples if s.status != "SKIP"]
    return statistics.median(durations) if durations else None


def duration(ms: float | None) -> str:
    """A duration for people: milliseconds below 10 s, else seconds."""
    if ms is None:
        return "-"
    return f"{ms:.0f} ms" if ms < 10_000 else f"{ms / 1000:.1f} s"


def fraction(value: float | None) -> str:
    """A rate in [0, 1] with at most three decimals; 0 and 1 bare."""
    return "-" if value is None else f"{value:.3f}".rstrip("0").rstrip(".") if value not in (0, 1) else f"{value:g}"


def k_label(run: RunResult) -> str:
    """The k of the pass@k columns: the run's ``--k``, or "k" (each row's n)."""
    k = run.options.get("k")
    return str(k) if k is not None else "k"


NOT_RUN = "not run"


def passed_cell(row: RowResult) -> str:
    """Samples passed out of samples planned (and run, when fewer ran); ``not run`` for a row that
    stopped before its first sample (a configuration error, a failed daemon, a spent budget)."""
    if row.status == "SKIP":
        return "-"
    if not row.samples and row.status == "ERR":
        return NOT_RUN
    passed = sum(s.passed for s in row.samples)
    if row.sampled is not None and row.sampled.extra:  # the run's sample budget gave it more than its max
        return f"{passed}/{len(row.samples)} ({budgeted_samples(row, row.sampled.extra)})"
    if row.sampling is not None:  # adaptive: n is what it took, repeat its maximum
        return f"{passed}/{len(row.samples)} (max {row.repeat})"
    return (
        f"{passed}/{row.repeat}" if len(row.samples) == row.repeat else f"{passed}/{len(row.samples)} of {row.repeat}"
    )


def budgeted_samples(row: RowResult, extra: int) -> str:
    """``49 samples: 19 of its max 20, then 30 from the budget``: figures a reader can add up (the budget's
    samples are counted from the row's own stop point, which may come before its max: a curtailed row)."""
    taken = len(row.samples)
    return f"{taken} samples: {taken - extra} of its max {row.repeat}, then {extra} from the budget"


def passed_phrase(row: RowResult, passed: str = "passed") -> str:
    """``3/5 passed`` (``passed`` the words after the count), or ``not run``: the passed cell as words."""
    cell = passed_cell(row)
    return cell if cell in (NOT_RUN, "-") else f"{cell} {passed}"


def sampling_lines(run: RunResult) -> list[str]:
    """Why each adaptive row stopped where it did: ``sampling 'row': decided after 4: ...``."""
    return [f"sampling {row.name!r}: {row.sampling}" for row in run.rows if row.sampling is not None]


def sampling_saving(run: RunResult) -> str | None:
    """What adaptive sampling spent against fixed k (None without adaptive rows):
    ``36 of at most 48 samples (25% fewer than fixed k)``; with a sample budget, what it spent and how
    its rows ended (``budget_spending``)."""
    adaptive = [row for row in run.rows if row.sampling is not None and not _budgeted(row)]
    budget = run.summary.sample_budget
    if not adaptive:
        return budget_spending(budget) if budget is not None else None
    taken, most = sum(len(row.samples) for row in adaptive), sum(row.repeat for row in adaptive)
    fewer = 1 - taken / most if most else 0.0
    saving = f"{taken} of at most {most} samples ({fewer:.0%} fewer than fixed k)"
    return saving if budget is None else f"{budget_spending(budget)}; rows without it: {saving}"


def budget_spending(figures: BudgetFigures) -> str:
    """``40 of a sample budget of 40 spent (fixed k: 40); 2 rows: 1 decided, 0 curtailed, 0 undecided
    at their cap, 1 undecided when the budget ran out; 1 row took 11 extra samples``."""
    ended = [f"{figures.decided} decided", f"{figures.curtailed} curtailed", f"{figures.at_cap} undecided at their cap"]
    if figures.ran_out:
        ended.append(f"{figures.ran_out} undecided when the budget ran out")
    if figures.undecided:
        ended.append(f"{figures.undecided} undecided for another reason")
    rows = figures.decided + figures.curtailed + figures.at_cap + figures.ran_out + figures.undecided
    took = (
        f"{counted(figures.extra_rows, 'row')} took {counted(figures.extra, 'extra sample')}"
        if figures.extra
        else "no row took extra samples"
    )
    return (
        f"{figures.spent} of a sample budget of {figures.budget} spent (fixed k: {figures.fixed}); "
        f"{counted(rows, 'row')}: {', '.join(ended)}; {took}"
    )


def _budgeted(row: RowResult) -> bool:
    return row.sampled is not None and row.sampled.cap is not None


def passk_cells(row: RowResult) -> tuple[str, str]:
    """pass@k and pass^k of a row, or why they are withheld; ``-`` for a row left out of them (it did not
    run: skipped, or a configuration error)."""
    s = row.stochastic
    if s is None or row.stopped == "configuration":
        return "-", "-"
    if s.withheld:
        return "withheld", "withheld"
    return fraction(s.pass_at_k), fraction(s.pass_hat_k)


@dataclass(frozen=True)
class MetricCells:
    """One metric of one row as a report shows it."""

    value: str
    baseline: str
    delta: str
    mark: Look


def metric_cells(metric: MetricSummary) -> MetricCells:
    """Aggregate with unit, baseline row value, signed regression, and the verdict mark."""
    value = "-" if metric.value is None else f"{metric.value:.4g} {metric.unit}"
    comparison = metric.comparison
    baseline = delta = ""
    if comparison is not None:
        baseline = (
            f"{comparison.baseline_value:.4g} ({comparison.baseline})"
            if comparison.baseline_value is not None
            else comparison.baseline
        )
        delta = f"{comparison.regression_percent:+.1f}%" if comparison.regression_percent is not None else "-"
    return MetricCells(value, baseline, delta, status_words.metric(metric))


@dataclass(frozen=True)
class Failure:
    """Why a row failed or errored: where it is, the error, the CEL, which samples, an excerpt."""

    row: RowResult
    where: str
    error: str | None
    expression: str | None
    failing_samples: tuple[int, ...]
    sample_reason: str | None
    excerpts: tuple[tuple[str, str], ...]  # (stream name, excerpt) of the first failing sample

    @property
    def first_sample(self) -> int | None:
        return self.failing_samples[0] if self.failing_samples else None


def failures(run: RunResult) -> list[Failure]:
    """The failure details of every FAIL or ERR row, in row order."""
    return [failure(row) for row in run.rows if row.status in ("FAIL", "ERR")]


def skipped(run: RunResult) -> list[RowResult]:
    """The rows that did not run by design (each with why: ``row_reason``), in row order."""
    return [row for row in run.rows if row.status == "SKIP"]


def failure(row: RowResult) -> Failure:
    """The failure details of one row."""
    bad = [s for s in row.samples if not s.passed]
    reason = None
    excerpts: tuple[tuple[str, str], ...] = ()
    if bad:
        first = bad[0]
        reason = sample_reason(first)
        if reason in (row.error or ""):
            reason = None  # already said by the row's error
        streams = (("stdout", output_excerpt(first.stdout)), ("stderr", output_excerpt(first.stderr)))
        excerpts = tuple((stream, text) for stream, text in streams if text)
    return Failure(
        row=row,
        where=f"{row.file}:{row.line}",
        error=row.error,
        expression=assertion_expression(row),
        failing_samples=tuple(s.index for s in bad),
        sample_reason=reason,
        excerpts=excerpts,
    )


def output_excerpt(text: str) -> str:
    """The first few lines of a sample's output, bounded, as reports quote it."""
    return excerpt(text, _EXCERPT_CHARS, lines=_EXCERPT_LINES)


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
        return f"{CEL_FALSE} ({assertion.error})" if assertion.error else CEL_FALSE
    return sample.status


def row_reason(row: RowResult) -> str | None:
    """Why a row did not pass (None for PASS), every reason: its own error (a metric over its threshold, a
    regression against its baseline row, a budget), then its failing samples' check when that says more."""
    if row.status == "PASS":
        return None
    if row.status == "SKIP":
        return row.error or "skipped"
    reasons = [row.error] if row.error else []
    bad = [s for s in row.samples if not s.passed]
    if bad:
        first = sample_reason(bad[0])
        if not any(first in reason for reason in reasons):  # an ERR row's error is often its sample's
            which = ", ".join(str(s.index) for s in bad)
            reasons.append(f"{first} on sample{'s' if len(bad) > 1 else ''} {which} of {len(row.samples)}")
    return "; ".join(reasons) or row.status


def assertion_expression(row: RowResult) -> str | None:
    """The CEL assertion a row's samples were checked with, if any."""
    return next((s.assertions.expression for s in row.samples if s.assertions and s.assertions.expression), None)


def suite_line(figures: SuiteFigures) -> str:
    """One line of suite figures, or why they are withheld; the rows left out for a configuration error."""
    k = figures.k if figures.k is not None else "k"
    if figures.withheld:
        told = f"pass@{k} and pass^{k} withheld: {figures.withheld}"
    else:
        told = (
            f"pass@{k} {fraction(figures.pass_at_k)} (rows {figures.rows_pass_at_k}/{figures.rows}), "
            f"pass^{k} {fraction(figures.pass_hat_k)} (rows {figures.rows_pass_hat_k}/{figures.rows})"
        )
    if figures.left_out:
        named = ", ".join(repr(name) for name in figures.left_out)
        told += f"; left out: {counted(len(figures.left_out), 'row')} with a configuration error ({named})"
    return told


def suite_lines(run: RunResult) -> list[str]:
    """The suite line, then one per group value (``PROPERTY=VALUE: ...``)."""
    lines = []
    figures = run.summary.stochastic
    if figures is not None:
        lines.append(f"suite: {suite_line(figures)}")
    for prop, groups in (run.summary.groups or {}).items():
        for value, group in groups.items():
            lines.append(f"  {prop}={value}: {suite_line(group)}")
    return lines


def answer(run: RunResult) -> str:
    """Both answers, the exit code and why, on one line, the same in every report:
    ``FAIL · no regression against shipped · exit 0 — 1 row failed: 'flaky'``."""
    verdict = run.verdict
    return f"{verdict.answer} — {verdict.why}"


def counts(run: RunResult) -> str:
    """Rows by status and the number of samples that ran (a dry run's: none, nothing was scored)."""
    s = run.summary
    told = f"{s.passed} passed, {s.failed} failed, {s.errored} errored, {s.skipped} skipped; "
    return told + counted(s.samples, "sample") + ("; nothing was scored" if run.dry_run else "")


def no_comparison_note(run: RunResult) -> str | None:
    """Why a run with a baseline shows no comparison."""
    if run.comparison is None and run.options.get("baseline") and run.status == "ERR":
        return "no comparison with the baseline: the run itself errored"
    return None


def row_names(rows: Sequence[RowResult]) -> str:
    """Row names for one line: ``'a', 'b'``."""
    return ", ".join(f"'{row.name}'" for row in rows)


def baseline_context(run: RunResult) -> list[str]:
    """The saved runs this run was compared with, each by id, label, start and commit: the baseline of
    ``--baseline``, then the shipped run an A/B suite's gates read when it is another."""
    lines = []
    compared = run.comparison
    if compared is not None and compared.baseline_facts is not None:
        named = run.verdict.baseline or compared.baseline
        lines.append(f"baseline {named}: {baseline_facts(compared.baseline_facts)}")
    shown = {compared.baseline_facts.run_id} if compared is not None and compared.baseline_facts else set()
    for suite in run.suites:
        facts = suite.baseline_facts
        if facts is not None and facts.run_id not in shown:
            named = (suite.baseline or "").split(" (run ")[0]  # its own name; the facts give the run id
            lines.append(f"A/B suite {suite.file} compared with {named}: {baseline_facts(facts)}")
    return lines


def dask_line(run: RunResult) -> str | None:
    """How long the run waited for its Dask cluster: ``dask: waited 14.2 s for the cluster (local, 2 workers) ...``."""
    cluster = run.dask
    if cluster is None:
        return None
    return (
        f"dask: waited {cluster.waited_s:.1f} s for the cluster ({cluster.address}, "
        f"{counted(cluster.workers, 'worker')}) before any row started; each row's time budget began when its "
        "first sample reached a worker"
    )


def cost_line(run: RunResult) -> str | None:
    """The run's cost, each cost metric summed over its samples: ``cost: 4.59 usd (cost_usd over 20 samples)``."""
    costs = run_costs(run)
    if not costs:
        return None
    return "cost: " + "; ".join(
        f"{cost.total:,.4g} {cost.unit} ({cost.metric} over {counted(cost.samples, 'sample')})" for cost in costs
    )


_REASON_CHARS = 160


def case_reasons(case: CaseOutcome, suite: SuiteOutcome, run: RunResult) -> list[str]:
    """Why an A/B case went as it did, in a few lines: per arm, its first failing verification command with
    the end of what it printed (``variant: verify `pytest -q` failed (exit 1): AssertionError: 8``) and what
    disqualified it; then the judge's reason on its first judged sample."""
    rows = {row.name: row for row in run.rows if row.file == suite.file}
    told = []
    for arm in suite.arms:
        outcome = case.arms.get(arm)
        if outcome is None:
            continue
        row = rows.get(outcome.row)
        failed = _first_failed_verify(row) if row is not None else None
        if failed is not None:
            exited = f"exit {failed.exit_code}" if failed.exit_code is not None else "failed"
            code = failed.reason if failed.reason not in (None, "exit") else exited
            printed = _last_lines(failed.error or failed.output)
            told.append(f"{arm}: verify `{failed.command}` failed ({code})" + (f": {printed}" if printed else ""))
        if outcome.disqualified:
            told.append(f"{arm}: disqualified: " + ("; ".join(outcome.disqualified_by) or "the judge"))
    judged = next((j for j in case.judgments if j.rationale or j.error), None)
    if judged is not None:
        said = excerpt(" ".join((judged.rationale or judged.error or "").split()), _REASON_CHARS)
        told.append(f"judge (sample {judged.sample}, winner {judged.winner or '-'}): {said}")
    return told


def _first_failed_verify(row: RowResult) -> VerifyResult | None:
    for sample in row.samples:
        if sample.attempt is None:
            continue
        for result in sample.attempt.verify:
            if not result.passed:
                return result
    return None


def _last_lines(text: str, lines: int = 2) -> str:
    """The last non-empty lines of an output, joined (where a test runner says what failed)."""
    kept = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return excerpt(" / ".join(kept), _REASON_CHARS)
