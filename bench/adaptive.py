"""Fixed k, adaptive sampling and the sample budget: samples spent, and verdicts against fixed k and the truth.

    python bench/adaptive.py [--runs 2000] [--seed 7] [--matrix nightly|harder|both] [--confidence 0.95]
                             [--margin 0.1] [--out FILE]

Two simulated agent matrices (``NIGHTLY``: the nightly of issue 22, most rows far from their
thresholds; ``HARDER``: most rows near them), each run ``--runs`` times, seeded. In each run every row
draws one stream of samples (the first ``MAX`` from the run's generator, in row order, as issue 22's
bench did, so the fixed-k and adaptive figures are the same as there; the extras from a second one),
and every scheme reads a prefix of the same stream:

- fixed k takes ``MAX``;
- adaptive sampling stops when ``fixtures_core.sequential.decide`` (the runner's own code) says every
  gate is decided, or at ``MAX``;
- the sample budget (``budget: fixed``: at most what fixed k spends, ``MAX`` per row) follows the
  runner's rules (``fixtures_core.execution.sample_budget``): rows stop as adaptive sampling does, a
  row undecided at its max or curtailed waits, and the samples decided rows left go one at a time to
  the waiting row with the lowest ``sequential.progress``, up to ``max_extra`` (2 x ``MAX``) each, until
  the budget is spent or every row is decided. When samples are left over depends on when rows end, so
  it is simulated event by event: 4 sample slots, rows in the run's order, serial samples of random
  length (exponential), and every row in flight (the default with a sample budget), or 4
  (``--parallel 4``: a row then waits for left-over samples only once every row has begun).

Every verdict comes from the runner's rules (``results.row_status`` with the row's ``pass_rate``,
``analysis.metrics.aggregate`` and ``threshold_failure`` on the median) on the samples taken. The truth:
the row's true pass rate is at least its ``pass_rate`` (every sample passes, for ``pass_rate: 1``) and
its true median is within the gate. Intervals are 95%: a Wilson interval on each count of wrong
verdicts, and a paired interval (normal approximation over verdicts on the same streams) on each
scheme's difference from fixed k.

Issue 32 wants: at no more samples than fixed k, at least 25% fewer wrong verdicts than fixed k on the
nightly, and fewer than fixed k on the harder matrix, with the interval.
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common as c  # noqa: E402

from fixtures_core.analysis.metrics import aggregate, threshold_failure  # noqa: E402
from fixtures_core.results import Check, MetricValue, SampleResult, row_status  # noqa: E402
from fixtures_core.sequential import Decision, decide, progress  # noqa: E402
from fixtures_core.spec import Expectation, MetricSpec, RowSpec, Sampling, Threshold  # noqa: E402

MAX = 20
SLOTS = 4
LATENCY = MetricSpec(
    name="latency_s", extract="json.s", unit="s", file="nightly.md", line=3, aggregate="median",
    threshold=Threshold(max=30.0),
)  # fmt: skip
SCHEMES = ("fixed", "adaptive", "budget", "budget_p4")
SCHEME_NAMES = {
    "fixed": "fixed k",
    "adaptive": "adaptive",
    "budget": "budget: fixed",
    "budget_p4": f"budget: fixed, --parallel {SLOTS}",
}


@dataclass(frozen=True)
class SimRow:
    """A row of a simulated matrix: how often it truly passes, its pass_rate, its latency median (s)."""

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
NIGHTLY = (
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

# A harder matrix: 28 of 40 rows near their threshold (true pass rates 0.7 to 0.9 against pass_rate 0.8,
# latency medians 24 to 36 s against 30 s), a few clear ones to leave samples.
HARDER = (
    [SimRow(f"near-{p}-{i}", p) for p in (0.7, 0.72, 0.75, 0.78, 0.82, 0.85, 0.88, 0.9) for i in range(3)]
    + [SimRow(f"latency-{m:g}", 1.0, median_s=m) for m in (24.0, 27.0, 33.0, 36.0)]
    + [SimRow(f"solid-{i}", 1.0) for i in range(6)]
    + [SimRow(f"mostly-{i}", 0.95) for i in range(2)]
    + [SimRow(f"weak-{i}", 0.5) for i in range(2)]
    + [SimRow(f"broken-{i}", 0.0) for i in range(2)]
)
MATRICES = {"nightly": NIGHTLY, "harder": HARDER}


def draw(row: SimRow, rng: random.Random, count: int, start: int = 0) -> list[SampleResult]:
    """``count`` samples of ``row``, indexed from ``start``."""
    samples = []
    for index in range(start, start + count):
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


def verdict(spec: RowSpec, samples: Sequence[SampleResult]) -> str:
    """The runner's rules: the pass rate, then the metric gate on the median."""
    status = row_status(samples, False, spec.pass_rate)
    for metric in spec.metrics:
        values = [v.value for s in samples if (v := s.metrics.get(metric.name)) is not None and v.value is not None]
        if threshold_failure(aggregate(values, metric.aggregate), metric.threshold, metric.unit):
            status = "FAIL"
    return status


class Reading:
    """``sequential.decide`` and ``progress`` on prefixes of one run's streams, each read once: the schemes
    read the same prefixes (the flag that makes a row budgeted changes neither, given the same ``most``)."""

    def __init__(self, streams: Sequence[list[SampleResult]]) -> None:
        self.streams = streams
        self._decisions: dict[tuple[int, int, int], Decision] = {}
        self._progress: dict[tuple[int, int], float | None] = {}

    def decide(self, row: int, spec: RowSpec, n: int, most: int | None = None) -> Decision:
        key = (row, n, most or spec.repeat)
        if key not in self._decisions:
            self._decisions[key] = decide(spec, self.streams[row][:n], most)
        return self._decisions[key]

    def progress(self, row: int, spec: RowSpec, n: int) -> float | None:
        if (row, n) not in self._progress:
            self._progress[(row, n)] = progress(spec, self.streams[row][:n])
        return self._progress[(row, n)]


def taken(reading: Reading, row: int, spec: RowSpec) -> int:
    """How many samples of the row's stream adaptive sampling takes."""
    for n in range(1, MAX + 1):
        if reading.decide(row, spec, n).decided:
            return n
    return MAX


@dataclass
class _Row:
    """A budgeted row in the event simulation: the runner's ``_RowRun`` as far as the budget sees it."""

    rank: int
    spec: RowSpec
    stream: list[SampleResult]
    n: int = 0
    reserved: int = MAX
    begun: bool = False
    past_stop: bool = False  # at its own stop point: its next samples are extras
    done: bool = False
    extra: int = 0
    stop: str = ""
    waiting: float | None = None  # its progress, while it waits for a left-over sample


@dataclass
class _Run:
    """One run of the budget scheduler: ``threads`` rows in flight, ``SLOTS`` sample slots."""

    rows: list[_Row]
    threads: int
    timing: random.Random
    reading: Reading
    budget: int = 0
    spent: int = 0
    now: float = 0.0
    queue: list[tuple[float, int]] = field(default_factory=list)  # (finish time, rank) of samples in flight
    wanting: set[int] = field(default_factory=set)  # rows asking for a slot

    def left(self) -> int:
        return self.budget - self.spent - sum(row.reserved for row in self.rows)

    def may_leave(self) -> bool:
        """``SampleBudget._may_leave``: rows that have begun hold reservations, and no row that has not."""
        holders = [row for row in self.rows if row.reserved > 0]
        return bool(holders) and all(row.begun for row in holders)


def budgeted(specs: Sequence[RowSpec], reading: Reading, threads: int, seed: float) -> list[_Row]:
    """The budget scheduler on one run's streams, event by event; each row's samples and how it ended."""
    rows = [_Row(i, spec, reading.streams[i]) for i, spec in enumerate(specs)]
    run = _Run(rows, threads, random.Random(seed), reading)
    run.budget = MAX * len(specs)  # budget: fixed
    begun = 0
    while True:
        while begun < len(run.rows) and sum(r.begun and not r.done for r in run.rows) < run.threads:
            run.rows[begun].begun = True
            _step(run, run.rows[begun])
            begun += 1
        _grant(run)
        while run.wanting and len(run.queue) < SLOTS:  # a freed slot goes to the earliest row
            rank = min(run.wanting)
            run.wanting.discard(rank)
            heapq.heappush(run.queue, (run.now + run.timing.expovariate(1.0), rank))
        if not run.queue:
            if all(row.done for row in run.rows):
                return run.rows
            _grant(run)  # nothing in flight: waiting rows end (nothing can be left over now)
            if not run.wanting and not run.queue and begun >= len(run.rows):
                for row in run.rows:
                    if not row.done:
                        _finish(run, row, "budget")
            continue
        run.now, rank = heapq.heappop(run.queue)
        row = run.rows[rank]
        row.n += 1
        _step(run, row)


def _step(run: _Run, row: _Row) -> None:
    """``_RowRun._next_step`` for an idle row: stop, take a reserved sample, or wait for an extra."""
    if not row.past_stop:
        decision = run.reading.decide(row.rank, row.spec, row.n)
        if decision.decided and not decision.curtailed:
            return _finish(run, row, "decided")
        if row.n < MAX and not decision.decided:
            row.reserved -= 1
            run.spent += 1
            run.wanting.add(row.rank)
            return None
        row.past_stop = True
        row.reserved = 0
    if row.n >= len(row.stream):
        return _finish(run, row, "cap")
    cap_decision = run.reading.decide(row.rank, row.spec, row.n, row.spec.most_samples)
    if cap_decision.decided:
        return _finish(run, row, "curtailed" if cap_decision.curtailed else "decided")
    share = run.reading.progress(row.rank, row.spec, row.n)
    if share is None:
        return _finish(run, row, "undecided")
    row.waiting = share
    return None


def _grant(run: _Run) -> None:
    """``SampleBudget.extra`` for every waiting row: the least-decided first, while samples are left over;
    waiting rows end once none can be."""
    while True:
        waiting = sorted((row for row in run.rows if row.waiting is not None), key=lambda r: (r.waiting, r.rank))
        if not waiting:
            return
        if run.left() >= 1:
            best = waiting[0]
            best.waiting = None
            best.extra += 1
            run.spent += 1
            run.wanting.add(best.rank)
            continue
        if run.may_leave():
            return
        for row in waiting:
            _finish(
                run,
                row,
                "curtailed" if row.extra == 0 and run.reading.decide(row.rank, row.spec, row.n).decided else "budget",
            )
        return


def _finish(run: _Run, row: _Row, stop: str) -> None:
    row.done, row.reserved, row.waiting, row.stop = True, 0, None, stop


def wilson(wrong: int, total: int) -> list[float]:
    """A 95% Wilson interval on a count of ``wrong`` in ``total`` verdicts, as counts."""
    if total == 0:
        return [0.0, 0.0]
    z, p = 1.96, wrong / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return [round((centre - half) * total, 1), round((centre + half) * total, 1)]


def paired_interval(differences: list[int]) -> list[float]:
    """A 95% interval (normal approximation) on the sum of per-verdict differences (a scheme wrong minus
    fixed k wrong, on the same stream): tells a real difference from the draw's noise."""
    n = len(differences)
    mean = sum(differences) / n
    spread = math.sqrt(sum((x - mean) ** 2 for x in differences) / (n - 1)) if n > 1 else 0.0
    half = 1.96 * spread * math.sqrt(n)
    return [round(mean * n - half, 1), round(mean * n + half, 1)]


def simulate(name: str, matrix: Sequence[SimRow], runs: int, seed: int, sampling: Sampling) -> dict[str, object]:
    """Every scheme on ``runs`` seeded runs of ``matrix``, adaptive rows with ``sampling``."""
    rng, extra_rng, timing = random.Random(seed), random.Random(seed + 1), random.Random(seed + 2)
    adaptive_specs = [row.spec(sampling) for row in matrix]
    budget_specs = [row.spec(replace(sampling, budget=True)) for row in matrix]
    cap = budget_specs[0].most_samples
    spent = dict.fromkeys(SCHEMES, 0)
    wrong = dict.fromkeys(SCHEMES, 0)
    agree = dict.fromkeys(SCHEMES, 0)
    differences: dict[str, list[int]] = {scheme: [] for scheme in SCHEMES}
    stops: dict[str, dict[str, int]] = {scheme: {} for scheme in ("budget", "budget_p4")}
    per_row = {row.name: {scheme: {"spent": 0, "wrong": 0} for scheme in SCHEMES} for row in matrix}
    for _run in range(runs):
        streams = [draw(row, rng, MAX) for row in matrix]
        streams = [stream + draw(row, extra_rng, cap - MAX, MAX) for row, stream in zip(matrix, streams, strict=True)]
        reading = Reading(streams)
        taken_n = {
            "fixed": [MAX] * len(matrix),
            "adaptive": [taken(reading, i, spec) for i, spec in enumerate(adaptive_specs)],
        }
        for scheme, threads in (("budget", len(matrix)), ("budget_p4", SLOTS)):
            ended = budgeted(budget_specs, reading, threads, timing.random())
            taken_n[scheme] = [row.n for row in ended]
            for row in ended:
                stops[scheme][row.stop] = stops[scheme].get(row.stop, 0) + 1
                stops[scheme]["extra rows"] = stops[scheme].get("extra rows", 0) + bool(row.extra)
        for i, row in enumerate(matrix):
            truth = row.truth()
            fixed_verdict = verdict(adaptive_specs[i], streams[i][:MAX])
            for scheme in SCHEMES:
                n = taken_n[scheme][i]
                said = verdict(adaptive_specs[i], streams[i][:n])
                is_wrong = said != truth
                spent[scheme] += n
                wrong[scheme] += is_wrong
                agree[scheme] += said == fixed_verdict
                differences[scheme].append(int(is_wrong) - int(fixed_verdict != truth))
                per_row[row.name][scheme]["spent"] += n
                per_row[row.name][scheme]["wrong"] += is_wrong
    verdicts = runs * len(matrix)
    return {
        "matrix": name, "runs": runs, "rows_per_run": len(matrix), "max": MAX, "cap": cap, "slots": SLOTS,
        "verdicts": verdicts,
        "schemes": {
            scheme: {
                "samples": spent[scheme], "samples_vs_fixed": spent[scheme] / spent["fixed"],
                "agreement": agree[scheme] / verdicts, "wrong": wrong[scheme],
                "wrong_95": wilson(wrong[scheme], verdicts),
                "vs_fixed": sum(differences[scheme]), "vs_fixed_95": paired_interval(differences[scheme]),
            }
            for scheme in SCHEMES
        },
        "stops": stops,
        "rows": {
            row.name: {"p": row.p, "pass_rate": row.pass_rate, "median_s": row.median_s, "truth": row.truth(),
                       **per_row[row.name]}
            for row in matrix
        },
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--matrix", choices=("nightly", "harder", "both"), default="both")
    parser.add_argument("--margin", type=float, default=Sampling.margin, help="the sampling margin to try")
    parser.add_argument("--confidence", type=float, default=Sampling.confidence, help="the confidence to try")
    parser.add_argument("--out", default="bench/results/adaptive.json")
    args = parser.parse_args()
    names = ("nightly", "harder") if args.matrix == "both" else (args.matrix,)
    sampling = Sampling(max=MAX, confidence=args.confidence, margin=args.margin)
    document = {
        "machine": c.machine(),
        "seed": args.seed,
        "sampling": {"min": sampling.min, "confidence": sampling.confidence, "margin": sampling.margin},
        "matrices": {name: simulate(name, MATRICES[name], args.runs, args.seed, sampling) for name in names},
    }
    return c.close(args.out, document, report)


def report(document: dict[str, object]) -> None:
    matrices = document["matrices"]
    assert isinstance(matrices, dict)
    for name, figures in matrices.items():
        print(f"\n{name}: {figures['runs']} runs of {figures['rows_per_run']} rows, seed {document['seed']}, "
              f"max {figures['max']}, cap {figures['cap']} with the budget, {figures['slots']} slots, "
              f"{document['sampling']}")  # fmt: skip
        schemes = figures["schemes"]
        fixed_wrong = schemes["fixed"]["wrong"]
        lines = []
        for scheme in SCHEMES:
            f = schemes[scheme]
            lo, hi = f["vs_fixed_95"]
            change = (
                "-"
                if scheme == "fixed"
                else f"{f['vs_fixed']:+d} ({lo:+g} to {hi:+g}): {_fewer(f['vs_fixed'] / fixed_wrong)}"
            )
            lines.append(
                [SCHEME_NAMES[scheme], f"{f['samples_vs_fixed']:.1%}", f"{f['agreement']:.2%}",
                 f"{f['wrong']} ({f['wrong_95'][0]:g} to {f['wrong_95'][1]:g})", change]
            )  # fmt: skip
        print(c.table(["scheme", "samples vs fixed k", "same verdict as fixed k", "wrong vs truth (95%)",
                       "wrong vs fixed k (95%)"], lines))  # fmt: skip
        for scheme, counts in figures["stops"].items():
            print(f"{SCHEME_NAMES[scheme]}: rows ended {dict(sorted(counts.items()))}")
        _row_table(figures)


def _fewer(change: float) -> str:
    """``53.1% fewer`` for a change of -0.531, ``0.6% more`` for +0.006, ``as many`` for none."""
    if change == 0:
        return "as many"
    return f"{-change:.1%} fewer" if change < 0 else f"{change:.1%} more"


def _row_table(figures: dict[str, object]) -> None:
    rows = figures["rows"]
    runs = figures["runs"]
    assert isinstance(rows, dict) and isinstance(runs, int)
    groups: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for row in rows.values():
        groups.setdefault((row["p"], row["pass_rate"], row["median_s"], row["truth"]), []).append(row)
    lines = []
    for (p, pass_rate, median_s, truth), members in groups.items():
        count = len(members) * runs

        def total(scheme: str, what: str, members: list[dict[str, object]] = members) -> int:
            return sum(int(m[scheme][what]) for m in members)  # type: ignore[index]

        lines.append(
            [len(members), p, pass_rate, median_s if median_s is not None else "-", truth]
            + [f"{total(s, 'spent') / count:.1f}" for s in SCHEMES]
            + [total(s, "wrong") for s in SCHEMES]
        )  # fmt: skip
    headers = ["rows", "true p", "pass_rate", "median s", "truth"]
    headers += [f"n {s}" for s in SCHEMES] + [f"wrong {s}" for s in SCHEMES]
    print(c.table(headers, lines))


if __name__ == "__main__":
    c.run_script(main)
