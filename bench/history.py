"""What "since the previous run" costs a report: the previous run, failure ages, metric moves, read from disk.

    python bench/history.py [--runs 30] [--rows 100] [--out bench/results/history.json]

Writes ``--runs`` saved runs of one suite (``--rows`` rows each, one row
failing in every run, so its age is read back through every run) into a
temporary state folder, then times, each the least of 5 tries with the run
documents' cache cleared: ``since_of`` (what the run page, the summary,
JUnit and the terminal report compute: the previous run read whole, the
earlier ones' row statuses only, the commits between them), the earlier runs
decoded whole (what the ages would cost read that way), and their row
statuses alone.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402


def saved_runs(state: Path, runs: int, rows: int) -> list[object]:
    """``runs`` runs of ``rows`` rows each, written to ``state``; row r0 fails in all of them."""
    from fixtures_core.analysis.finalize import Summary
    from fixtures_core.records.rundoc import FixtureResult, RunResult
    from fixtures_core.records.store import Store
    from fixtures_core.results import Check, MetricSummary, Outcomes, RowResult, SampleResult, Stochastic

    def row(index: int) -> RowResult:
        ok = index != 0
        samples = tuple(SampleResult(i, "PASS" if ok else "FAIL", 1.0, 0, "", "", Check("pass" if ok else "fail"))
                        for i in range(3))  # fmt: skip
        value = 100.0 + index
        return RowResult(
            id=f"bench.md::r{index}", file="bench.md", name=f"r{index}", line=index + 1,
            status="PASS" if ok else "FAIL", repeat=3, command=("true",), properties={"group": f"g{index % 5}"},
            samples=samples, outcomes=Outcomes("pass", "pass" if ok else "fail"),
            metrics={"latency_ms": MetricSummary("ms", "mean", "lower", True, (value,) * 3, "pass", value)},
            stochastic=Stochastic(3, 3 if ok else 0, 3, 1.0 if ok else 0.0, "stable-pass" if ok else "stable-fail"),
        )  # fmt: skip

    store = Store(state)
    made = []
    for night in range(runs):
        found = [row(index) for index in range(rows)]
        run = RunResult(
            run_id=f"2026{1 + night // 28:02d}{1 + night % 28:02d}T020000.000000Z-abc1234-main",
            started_at=f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T02:00:00Z",
            finished_at=f"2026-{1 + night // 28:02d}-{1 + night % 28:02d}T02:10:00Z",
            status="FAIL", fixtures=(FixtureResult("bench.md", "sha", tuple(found)),), summary=Summary.of(found),
            label="bench", environment={"git": {"commit": "abc1234def567890", "branch": "main"}},
        )  # fmt: skip
        store.write_run(run)
        made.append(run)
    return made


def least_ms(measured: Callable[[], object], tries: int = 5) -> float:
    from fixtures_core.records.history import _read

    times = []
    for _ in range(tries):
        _read.cache_clear()
        start = time.perf_counter()
        measured()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def report(document: dict[str, object]) -> None:
    print(f"{document['runs']} runs of {document['rows']} rows; ages read back {document['age_runs']} runs")
    print(c.table(["what", "ms"], [[name, value] for name, value in dict(document["ms"]).items()]))  # type: ignore[call-overload]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=30, help="saved runs of the suite (30)")
    parser.add_argument("--rows", type=int, default=100, help="rows per run (100)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "history.json"), help="JSON file")
    args = parser.parse_args(argv)
    if not (2 <= args.runs <= 500 and 1 <= args.rows <= 10_000):
        parser.error("--runs must be 2 to 500 and --rows 1 to 10,000")
    from fixtures_core.records.history import earlier_runs, earlier_statuses
    from fixtures_core.records.store import Store
    from fixtures_core.reports.trends import since_of

    work = Path(tempfile.mkdtemp(prefix="assay-bench-history-"))
    try:
        state = work / ".assay"
        runs = saved_runs(state, args.runs, args.rows)
        last = runs[-1]
        store = Store(state)
        since = since_of(last, state)  # type: ignore[arg-type]
        document: dict[str, object] = {
            "machine": c.machine(),
            "runs": args.runs,
            "rows": args.rows,
            "age_runs": since.ages[0].runs if since is not None and since.ages else 0,
            "ms": {
                "since_of (the report's)": least_ms(lambda: since_of(last, state)),  # type: ignore[arg-type]
                "earlier runs decoded whole": least_ms(lambda: list(earlier_runs(store, last))),  # type: ignore[arg-type]
                "earlier runs' row statuses": least_ms(lambda: list(earlier_statuses(store, last))),  # type: ignore[arg-type]
            },
            "leftover_processes": [],
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return c.close(args.out, document, report)


if __name__ == "__main__":
    c.run_script(main)
