"""Adaptive sampling: after each finished sample, may the row stop because more samples could no
longer change its verdict?

Each gate of the row is a sequential probability ratio test (Wald, 1945) on 0/1 outcomes, read with
Ville's inequality (1939): under ``p <= low``, a nonnegative supermartingale such as the likelihood
ratio of ``high`` against ``low`` ever reaching ``1 / alpha`` has probability at most ``alpha``,
however often it is looked at, so stopping whenever it crosses is valid under optional stopping, and
exact at every n (no asymptotics; ``sprt`` mixes in the extreme alternative, see there). ``low``
and ``high`` are the gate's threshold minus and plus the sampling margin (the indifference zone):

- pass rate: the outcome is "the sample passed", against the row's ``pass_rate``. With the seeds'
  ``pass_rate: 1`` (every sample must pass) ``high`` is 1, so one failure decides FAIL at once, and
  PASS needs ``(1 / (1 - margin)) ** n >= 1 / alpha`` passes in a row (29 at margin 0.1 and 95%).
- flaky: a row that has both passed and failed is flaky, decided; one that failed every time is told
  from a flaky one against a pass rate of ``FLAKY_FLOOR``; one that passed every time is decided
  with its pass-rate gate.
- metric thresholds on a quantile aggregate (median, p95, min, max): the outcome is "the value is on
  the good side of the threshold", against the quantile's share (median 0.5, p95 0.95, max and min
  every sample). A mean (of an unbounded value) has no distribution-free anytime bound, and a
  regression gate depends on another row's aggregate: such a gate stays undecided, and the row runs
  to ``max``, where the fixed-k rule decides.

A gate is also decided, exactly and without any error, once no outcome of the samples left before
``max`` could change what the fixed-k rule says (deterministic curtailment: a row of ``pass_rate:
0.8`` and max 20 that has failed 5 times can reach at most 15/20; a median with more than half of
the ``max`` values on one side of its threshold stays there).

The verdict itself always comes from the usual rules on the samples taken; this module only says
when to stop taking them.

A row that shares the run's sample budget (``budget: fixed``, ``execution.sample_budget``) may take
samples past ``max``: curtailment is then read against the most it may take (``most``), and
``progress`` says how far its undecided gates are from deciding, so that the samples decided rows
leave go to the least-decided row first. Ville's inequality holds at every n, however the samples
are allotted: each row's evidence is a supermartingale in its own samples, whatever the other rows
(independent of it) show, so a row read at its own n keeps its bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fixtures_core.results import SampleResult
from fixtures_core.spec import MetricSpec, RowSpec, Sampling

FLAKY_FLOOR = 0.25  # a row that passes less than once in four is failing, not flaky
_QUANTILE = {"min": 0.0, "median": 0.5, "p95": 0.95, "max": 1.0}  # each aggregate's quantile level


@dataclass(frozen=True)
class Decision:
    """Whether a row may stop sampling, and why (for reports: ``decided after 12: ...``).

    curtailed: a gate was decided by curtailment alone (no outcome of the samples left before
               ``most`` could change its answer), not by its sequential test.
    """

    decided: bool
    why: str
    curtailed: bool = False


@dataclass(frozen=True)
class _Gate:
    decided: bool
    text: str
    curtailed: bool = False
    # How far an undecided gate is from deciding (``progress``); None: no test can decide it before max.
    progress: float | None = None


def sprt(successes: int, n: int, low: float, high: float, alpha: float) -> str | None:
    """``"high"`` once the evidence for ``p >= high`` over ``p <= low`` reaches ``1/alpha``, ``"low"``
    once the reverse does, else None (``0 <= low < high <= 1``).

    The evidence for a side is a mixture, with equal weights, of the likelihood ratios of its edge
    (``high``) and its extreme (1), against the other edge: each is a nonnegative supermartingale
    under every ``p`` of the other side, so their mean is one too, and Ville's inequality bounds the
    chance that it ever reaches ``1/alpha`` by ``alpha``. The extreme makes a row that never fails
    (or never passes) decide sooner; the edge keeps one with a few failures decidable.
    """
    if _evidence(successes, n, low, (high, 1.0)) >= 1 / alpha:
        return "high"
    if _evidence(n - successes, n, 1 - high, (1 - low, 1.0)) >= 1 / alpha:
        return "low"
    return None


def _progress(successes: int, n: int, low: float, high: float, alpha: float) -> float:
    """The evidence of the side ahead, as a share of the way to its bound on a log scale:
    ``log(evidence) / log(1/alpha)`` (1 decides; 0 is no evidence either way; below 0, less)."""
    ahead = max(_evidence(successes, n, low, (high, 1.0)), _evidence(n - successes, n, 1 - high, (1 - low, 1.0)))
    return math.log(ahead) / math.log(1 / alpha) if ahead > 0 else -math.inf


def _evidence(successes: int, n: int, null: float, alternatives: tuple[float, ...]) -> float:
    """The mean over distinct ``alternatives`` of their likelihood ratio against ``null``."""
    shown = sorted(set(alternatives))
    # Capped below a double's overflow: any ratio that large is far past every decision bound.
    return sum(math.exp(min(_log_ratio(successes, n, null, q), 700.0)) for q in shown) / len(shown)


def _log_ratio(successes: int, n: int, low: float, high: float) -> float:
    """log of prod (high/low)^x ((1-high)/(1-low))^(1-x): -inf where an outcome rules ``high`` out,
    +inf where one rules ``low`` out (and ``high`` stays possible)."""
    failures = n - successes
    if (successes and high == 0) or (failures and high == 1):
        return -math.inf
    if (successes and low == 0) or (failures and low == 1):
        return math.inf
    total = successes * math.log(high / low) if successes else 0.0
    if failures:
        total += failures * math.log((1 - high) / (1 - low))
    return total


def decide(row: RowSpec, samples: Sequence[SampleResult], most: int | None = None) -> Decision:
    """May ``row`` stop after ``samples`` (its finished ones)? Never before ``sampling.min``.
    Curtailment looks ahead to ``most`` samples (default: the row's max, ``repeat``)."""
    gates = _gates(row, samples, most)
    if isinstance(gates, Decision):
        return gates
    n = len(_decisive(samples))
    open_gates = [gate.text for gate in gates if not gate.decided]
    if open_gates:
        return Decision(False, "; ".join(open_gates))
    curtailed = any(gate.curtailed for gate in gates)
    return Decision(True, f"decided after {n}: " + "; ".join(gate.text for gate in gates), curtailed)


def progress(row: RowSpec, samples: Sequence[SampleResult]) -> float | None:
    """How far the row's least-decided gate is from deciding: its sequential test's evidence for the
    side ahead, ``log(evidence) / log(1/alpha)`` (1 decides; 0 is no evidence either way). None when a
    gate no test can decide is open (a mean, a regression gate), or the row is decided or before min.

    The run's sample budget gives a leftover sample to the waiting row with the lowest: the row whose
    verdict the samples so far settle least."""
    gates = _gates(row, samples, row.most_samples)
    if isinstance(gates, Decision):
        return None
    undecided = [gate for gate in gates if not gate.decided]
    if not undecided or any(gate.progress is None for gate in undecided):
        return None
    return min(gate.progress for gate in undecided if gate.progress is not None)


def _decisive(samples: Sequence[SampleResult]) -> list[SampleResult]:
    return [s for s in samples if s.status in ("PASS", "FAIL")]  # a dry run's SKIP decides nothing


def _gates(row: RowSpec, samples: Sequence[SampleResult], most: int | None) -> list[_Gate] | Decision:
    """The row's gates on its finished samples; a Decision when no gate is read yet (fixed, before min)."""
    sampling = row.sampling
    if sampling is None or not sampling.adaptive:  # sampling: fixed
        return Decision(False, "fixed number of samples")
    samples = _decisive(samples)
    if len(samples) < sampling.min:
        return Decision(False, f"fewer than min {sampling.min} samples")
    alpha = 1 - sampling.confidence
    most = row.repeat if most is None else most
    gates = [_pass_gate(row, samples, sampling, alpha, most), _flaky_gate(samples, alpha)]
    gates += [_metric_gate(metric, samples, sampling, alpha, most) for metric in row.metrics if metric.gate]
    return [gate for gate in gates if gate.text]


def _pass_gate(row: RowSpec, samples: Sequence[SampleResult], sampling: Sampling, alpha: float, most: int) -> _Gate:
    passed = sum(s.passed for s in samples)
    n = len(samples)
    low, high = _zone(row.pass_rate, sampling.margin)
    found = sprt(passed, n, low, high, alpha)
    told = f"{passed}/{n} passed"
    if found == "high":
        return _Gate(True, f"{told}, P(pass rate <= {_num(low)}) < {_num(alpha)}")
    if found == "low" and high == 1:
        return _Gate(True, f"{told}: a sample failed, and pass_rate 1 needs every sample to pass")
    if found == "low":
        return _Gate(True, f"{told}, P(pass rate >= {_num(high)}) < {_num(alpha)}")
    settled = _pass_rate_settled(row, passed, n, most)
    if settled is not None:
        return _Gate(True, f"{told}: {settled}", curtailed=True)
    progressed = _progress(passed, n, low, high, alpha)
    return _Gate(False, f"pass rate {told} is not yet told apart from {_num(row.pass_rate)}", progress=progressed)


def _pass_rate_settled(row: RowSpec, passed: int, n: int, most: int) -> str | None:
    """Why no outcome of the samples left before ``most`` can change the usual rule's answer, if so.

    At any n' from n to ``most`` the pass share is at most ``(passed + n' - n) / n'``, which grows with
    n', and at least ``passed / n'``, which shrinks: so the answer at ``most`` is the answer at every
    n' on the way, and a row that may stop anywhere up to ``most`` (a budgeted one) keeps it too."""
    needed = row.pass_rate * most - 1e-9  # the rule of row_status, at most samples
    if n >= most:
        return None  # at max nothing is left: the fixed-k rule decides, and reports say so
    if passed + (most - n) < needed:
        return f"at most {passed + most - n}/{most} can pass, below pass_rate {_num(row.pass_rate)}"
    if passed >= needed:
        return f"pass_rate {_num(row.pass_rate)} of {most} is met whatever the rest do"
    return None


def _flaky_gate(samples: Sequence[SampleResult], alpha: float) -> _Gate:
    passed = sum(s.passed for s in samples)
    if passed == len(samples):
        return _Gate(True, "")  # decided with the pass-rate gate
    if passed:
        return _Gate(True, "flaky (passed and failed)")
    if sprt(0, len(samples), 0.0, FLAKY_FLOOR, alpha) == "low":
        return _Gate(True, f"fails every time, P(pass rate >= {_num(FLAKY_FLOOR)}) < {_num(alpha)}")
    progressed = _progress(0, len(samples), 0.0, FLAKY_FLOOR, alpha)
    return _Gate(False, "failed every time so far: flaky or failing is not decided", progress=progressed)


def _metric_gate(
    metric: MetricSpec, samples: Sequence[SampleResult], sampling: Sampling, alpha: float, most: int
) -> _Gate:
    if metric.threshold.limits_regression:
        return _Gate(False, f"{metric.name}: a regression gate is decided at max")
    limits = [
        (bound, side)
        for bound, side in ((metric.threshold.max, "max"), (metric.threshold.min, "min"))
        if bound is not None
    ]
    values = [v.value for s in samples if (v := s.metrics.get(metric.name)) is not None and v.value is not None]
    texts, curtailed = [], False
    for bound, side in limits:
        share = _good_share(metric.aggregate, side)
        if share is None:
            return _Gate(False, f"{metric.name}: a {metric.aggregate} is decided at max")
        good = sum(1 for value in values if (value <= bound if side == "max" else value >= bound))
        low, high = _zone(share, sampling.margin)
        found = sprt(good, len(values), low, high, alpha)
        if found is None:
            found = _median_settled(metric, good, len(values), most)
            curtailed = curtailed or found is not None
        if found is None:
            text = f"{metric.name} {metric.aggregate} against {side} {_num(bound)} is not decided"
            return _Gate(False, text, progress=_progress(good, len(values), low, high, alpha))
        where = "within" if found == "high" else "beyond"
        texts.append(f"{metric.name} {metric.aggregate} {where} {side} {_num(bound)}")
    return _Gate(True, "; ".join(texts), curtailed)


def _median_settled(metric: MetricSpec, good: int, n: int, most: int) -> str | None:
    """``"high"`` when more than half of ``most`` values are already on the good side of the bound, so
    the median of any count up to ``most`` is too; ``"low"`` when more than half are on the bad side."""
    if metric.aggregate != "median" or n >= most:
        return None
    half = most // 2 + 1
    return "high" if good >= half else "low" if n - good >= half else None


def _good_share(aggregate: str, side: str) -> float | None:
    """The share of samples on the good side of a ``side`` threshold that the ``aggregate`` needs:
    the q-quantile is <= T when at least q of the values are, and >= T when at least 1 - q are."""
    level = _QUANTILE.get(aggregate)
    if level is None:
        return None  # a mean: no distribution-free anytime bound
    return level if side == "max" else 1 - level


def _zone(threshold: float, margin: float) -> tuple[float, float]:
    """The indifference zone around ``threshold``: [threshold - margin, threshold + margin] within [0, 1]."""
    return max(threshold - margin, 0.0), min(threshold + margin, 1.0)


def _num(value: float) -> str:
    return f"{value:.3g}"
