"""Adaptive sampling against fixed k: samples spent, and verdicts against fixed k and the truth.

    python bench/adaptive.py [--runs 2000] [--seed 7] [--out bench/results/adaptive.json]

A simulated nightly matrix of an agent suite (``MATRIX``: rows with known true pass rates, some with
a median-latency gate on a lognormal latency) is run ``--runs`` times, seeded. In each run every row
draws one stream of ``max`` samples; fixed k takes all of them, adaptive sampling a prefix, stopping
when ``fixtures_core.sequential.decide`` (the code the runner calls) says every gate is
decided. Both verdicts come from the runner's own rules (``results.row_status`` with the row's
``pass_rate``, ``analysis.metrics.aggregate`` and ``threshold_failure`` on the metric's median), on
the same samples, so a difference is due to stopping alone. The truth: the row's true pass rate is at
least its ``pass_rate`` (every sample passes, for ``pass_rate: 1``) and its true median is within
the gate.

Issue 22 wants: at least 40% fewer samples than fixed k = max, the fixed-k verdict on at least 99% of
rows, and no more wrong verdicts than fixed k.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c  # noqa: E402

from fixtures_core.analysis.metrics import aggregate, threshold_failure  # noqa: E402
from fixtures_core.results import Check, MetricValue, SampleResult, row_status  # noqa: E402
from fixtures_core.sequential import decide  # noqa: E402
from fixtures_core.spec import Expectation, MetricSpec, RowSpec, Sampling, Threshold  # noqa: E402

MAX = 20
LATENCY = MetricSpec(
    name="latency_s", extract="json.s", unit="s", file="nightly.md", line=3, aggregate="median",
    threshold=Threshold(max=30.0),
)  # fmt: skip


@dataclass(frozen=True)
class SimRow:
    """A row of the simulated matrix: how often it truly passes, its pass_rate, its latency median (s)."""

    name: str
    p: float
    pass_rate: float = 0.8
    median_s: float | None = None  # a lognormal latency with this median and sigma 0.5, gated at median <= 30 s

    def spec(self, sampling: Sampling) -> RowSpec:
        return RowSpec(
            file="nightly.md", line=1, name=self.name, argv=(), expect=Expectation(), properties={},
            repeat=MAX, pass_rate=self.pass_rate, sampling=sampling,
            metrics=(LATENCY,) if self.median_s is not None else (),
        )  # fmt: skip

    def truth(self) -> str:
        passes = self.p >= self.pass_rate if self.pass_rate < 1 else self.p == 1.0
        fast = self.median_s is None or self.median_s <= LATENCY.threshold.max  # type: ignore[operator]
        return "PASS" if passes and fast else "FAIL"


# An agent suite's nightly matrix: most tasks pass, some are flaky, a few are broken; agent rows must
# pass 80% of the time; four deterministic rows (pass_rate 1) and latency gates near and far from 30 s.
MATRIX = (
    [SimRow(f"solid-{i}", 1.0) for i in range(14)]
    + [SimRow(f"mostly-{i}", 0.95) for i in range(6)]
    + [SimRow(f"shaky-{i}", 0.9) for i in range(3)]
    + [SimRow("edge-above", 0.85), SimRow("edge-below", 0.75)]
    + [SimRow(f"weak-{i}", 0.6) for i in range(3)]
    + [SimRow(f"flaky-{i}", 0.3) for i in range(2)]
    + [SimRow(f"broken-{i}", 0.0) for i in range(3)]
    + [SimRow("fast", 1.0, median_s=8.0), SimRow("near", 1.0, median_s=26.0), SimRow("slow", 1.0, median_s=48.0)]
    + [SimRow(f"cli-{i}", 1.0, pass_rate=1.0) for i in range(3)]
    + [SimRow("cli-broken", 0.0, pass_rate=1.0)]
)


def draw(row: SimRow, rng: random.Random) -> list[SampleResult]:
    """One stream of MAX samples of ``row``."""
    samples = []
    for index in range(MAX):
        passed = rng.random() < row.p
        metrics = {}
        if row.median_s is not None:
            metrics[LATENCY.name] = MetricValue("pass", value=row.median_s * math.exp(rng.gauss(0.0, 0.5)))
        samples.append(
            SampleResult(
                index=index,
                status="PASS" if passed else "FAIL",
                duration_ms=1.0,
                exit_code=0 if passed else 1,
                stdout="",
                stderr="",
                command=Check("pass"),
                metrics=metrics,
            )  # fmt: skip
        )
    return samples


def verdict(spec: RowSpec, samples: list[SampleResult]) -> str:
    """The runner's rules: the pass rate, then the metric gate on the median."""
    status = row_status(samples, False, spec.pass_rate)
    for metric in spec.metrics:
        values = [v.value for s in samples if (v := s.metrics.get(metric.name)) is not None and v.value is not None]
        if threshold_failure(aggregate(values, metric.aggregate), metric.threshold, metric.unit):
            status = "FAIL"
    return status


def taken(spec: RowSpec, stream: list[SampleResult]) -> int:
    """How many samples of ``stream`` adaptive sampling takes."""
    for n in range(1, MAX + 1):
        if decide(spec, stream[:n]).decided:
            return n
    return MAX


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--margin", type=float, default=Sampling.margin, help="the sampling margin to try")
    parser.add_argument("--confidence", type=float, default=Sampling.confidence, help="the confidence to try")
    parser.add_argument("--out", default="bench/results/adaptive.json")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    sampling = Sampling(max=MAX, margin=args.margin, confidence=args.confidence)
    per_row = {row.name: {"spent": 0, "agree": 0, "fixed_wrong": 0, "adaptive_wrong": 0} for row in MATRIX}
    excess: list[int] = []  # per row verdict: adaptive wrong (1) or fixed k wrong (-1), paired on one stream
    for _run in range(args.runs):
        for row in MATRIX:
            spec = row.spec(sampling)
            stream = draw(row, rng)
            n = taken(spec, stream)
            fixed, adaptive = verdict(spec, stream), verdict(spec, stream[:n])
            figures = per_row[row.name]
            figures["spent"] += n
            figures["agree"] += fixed == adaptive
            figures["fixed_wrong"] += fixed != row.truth()
            figures["adaptive_wrong"] += adaptive != row.truth()
            excess.append(int(adaptive != row.truth()) - int(fixed != row.truth()))
    rows = args.runs * len(MATRIX)
    fixed_samples = rows * MAX
    spent = sum(f["spent"] for f in per_row.values())
    document = {
        "machine": c.machine(),
        "runs": args.runs, "seed": args.seed, "rows_per_run": len(MATRIX), "max": MAX,
        "sampling": {"min": sampling.min, "confidence": sampling.confidence, "margin": sampling.margin},
        "fixed_samples": fixed_samples, "adaptive_samples": spent,
        "saved": 1 - spent / fixed_samples,
        "agreement": sum(f["agree"] for f in per_row.values()) / rows,
        "fixed_wrong": sum(f["fixed_wrong"] for f in per_row.values()),
        "adaptive_wrong": sum(f["adaptive_wrong"] for f in per_row.values()),
        "excess_wrong_95": paired_interval(excess),
        "rows": {
            row.name: {"p": row.p, "pass_rate": row.pass_rate, "median_s": row.median_s, "truth": row.truth(),
                       **per_row[row.name]}
            for row in MATRIX
        },
    }  # fmt: skip
    return c.close(args.out, document, report)


def paired_interval(excess: list[int]) -> list[float]:
    """A 95% interval (normal approximation) on how many more wrong verdicts adaptive sampling made than
    fixed k, from the paired per-verdict differences: tells a real excess from the draw's noise."""
    n = len(excess)
    mean = sum(excess) / n
    spread = math.sqrt(sum((x - mean) ** 2 for x in excess) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * spread * math.sqrt(n)
    return [round(mean * n - half, 1), round(mean * n + half, 1)]


def report(document: dict[str, object]) -> None:
    rows = document["rows"]
    assert isinstance(rows, dict)
    runs = document["runs"]
    assert isinstance(runs, int)
    groups: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for figures in rows.values():
        key = (figures["p"], figures["pass_rate"], figures["median_s"], figures["truth"])
        groups.setdefault(key, []).append(figures)
    lines = []
    for (p, pass_rate, median_s, truth), members in groups.items():
        count = len(members) * runs

        def total(name: str, members: list[dict[str, object]] = members) -> int:
            return sum(int(m[name]) for m in members)  # type: ignore[call-overload]

        lines.append(
            [len(members), p, pass_rate, median_s if median_s is not None else "-", truth,
             f"{total('spent') / count:.1f}", f"{total('agree') / count:.2%}",
             total("fixed_wrong"), total("adaptive_wrong")]
        )  # fmt: skip
    print(f"adaptive sampling vs fixed k = {document['max']}: {runs} runs of {document['rows_per_run']} rows, "
          f"seed {document['seed']}, {document['sampling']}")  # fmt: skip
    print(c.table(["rows", "true p", "pass_rate", "median s", "truth", "mean n", "agree", "fixed wrong",
                   "adaptive wrong"], lines))  # fmt: skip
    print(
        f"\nsamples: fixed {document['fixed_samples']}, adaptive {document['adaptive_samples']} "
        f"({document['saved']:.1%} fewer); same verdict as fixed k on {document['agreement']:.2%} of rows; "
        f"wrong against the truth: fixed {document['fixed_wrong']}, adaptive {document['adaptive_wrong']} "
        f"(adaptive's excess, 95% interval: {document['excess_wrong_95']})"
    )


if __name__ == "__main__":
    c.run_script(main)
