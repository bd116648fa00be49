"""The run's sample budget: what decided rows leave goes to the undecided ones, never more than the budget.

The ledger alone (reservations, left-over samples, who waits, who gets one), then rows on real
subprocesses (``bash -c``) sharing one pool: a seeded matrix whose arithmetic is in the comments, and
the budget held under samples at once, limits, a cost budget and a resumed run. Outcomes are set by
the sample index (``$ASSAY_SAMPLE``), so every run of these tests takes the same samples.
"""

from __future__ import annotations

import random
import shlex
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import Resumed, SamplePool, sample_pool
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.execution.sample_budget import SPENT, SampleBudget, budget_total
from fixtures_core.results import RowResult
from fixtures_core.spec import Budget, Expectation, Limit, MetricSpec, RowSpec, Sampling

# Fails every fifth sample (indices 4, 9, 14, ...): a true pass rate of 0.8, on a pass_rate of 0.8.
EDGE = "exit $(( ASSAY_SAMPLE % 5 == 4 ))"


def row_of(tmp_path: Path, script: str, name: str, *, repeat: int = 20, **fields: object) -> RowSpec:
    sampling = fields.pop("sampling", Sampling(max=repeat, budget=True))
    return RowSpec(
        file=str(tmp_path / "fixture.md"), line=3, name=name, argv=("bash", "-c", script),
        expect=Expectation(exit_code=0), repeat=repeat, timeout_s=60.0, pass_rate=0.8, sampling=sampling,
        **{"properties": {}, **fields},  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> RunSettings:
    root = tmp_path / "tmp-root"
    root.mkdir()
    return RunSettings(run_id="run-budget", tmp_root=str(root))


def budgeted_pool(rows: list[RowSpec], slots: int, **kwargs: object):  # type: ignore[no-untyped-def]
    """A pool whose budget is what fixed k spends on ``rows`` (``budget: fixed``)."""
    total = budget_total("fixed", rows)
    assert total is not None
    resumed = kwargs.get("resumed") or Resumed()
    assert isinstance(resumed, Resumed)
    kept = {row.id: len(resumed.samples.get(row.id, ())) for row in rows}
    return sample_pool(slots, order=rows, budget=SampleBudget(total, rows, kept), **kwargs)  # type: ignore[arg-type]


def run_all(rows: list[RowSpec], settings: RunSettings, pool: SamplePool, at_once: int) -> dict[str, RowResult]:
    """The rows on ``at_once`` threads, as an engine runs them."""
    with Containment() as containment, ThreadPoolExecutor(at_once) as threads:
        results = list(threads.map(lambda row: run_row(row, settings, containment, pool=pool), rows))
    return {result.name: result for result in results}


# --- the ledger ---------------------------------------------------------------------------------------


def spec(name: str, repeat: int = 20) -> RowSpec:
    return RowSpec(file="f.md", line=1, name=name, argv=("true",), expect=Expectation(), properties={},
                   repeat=repeat, sampling=Sampling(max=repeat, budget=True))  # fmt: skip


def never() -> str | None:
    return None


def test_only_what_decided_rows_leave_is_given_past_a_max() -> None:
    a, b = spec("a"), spec("b")
    budget = SampleBudget(40, [a, b])  # fixed k: 20 + 20
    budget.begin(a)
    budget.begin(b)
    for _ in range(20):
        budget.take(b)  # b takes its 20 and reaches max undecided
    budget.release(b)
    for _ in range(10):
        budget.take(a)
    budget.release(a)  # a decided after 10: 40 - 30 spent - 0 reserved = 10 are left over
    granted = [budget.extra(b, 0.0, never) for _ in range(10)]
    assert granted == [None] * 10 and budget.spent == 40
    budget.finish(a)
    assert budget.extra(b, 0.0, never) == SPENT  # nothing holds a reservation: nothing more can be left


def test_reserved_samples_are_never_given_to_another_row() -> None:
    a, b = spec("a"), spec("b")
    budget = SampleBudget(45, [a, b])  # 5 more than fixed k's 40
    budget.begin(a)
    budget.begin(b)
    for _ in range(5):
        assert budget.extra(b, 0.0, never) is None  # 45 - 0 spent - 40 reserved = 5 left over from the start
    # A sixth would take one of the 40 the rows hold: b waits (both have begun, and may still leave some).
    looked, stop = threading.Semaphore(0), threading.Event()

    def give_up() -> str | None:
        looked.release()  # once per look: a second look means it waited in between, granted nothing
        return "gave up" if stop.is_set() else None

    waited: list[str | None] = []
    waiter = threading.Thread(target=lambda: waited.append(budget.extra(b, 0.0, give_up)))
    waiter.start()
    assert looked.acquire(timeout=10) and looked.acquire(timeout=10)
    assert budget.spent == 5 and not waited
    stop.set()
    waiter.join()
    assert waited == ["gave up"] and budget.spent == 5


def test_a_row_does_not_wait_while_rows_that_have_not_begun_hold_samples() -> None:
    a, b = spec("a"), spec("b")
    budget = SampleBudget(40, [a, b])
    budget.begin(b)
    for _ in range(20):
        budget.take(b)
    budget.release(b)  # 40 - 20 spent - 20 reserved for a = 0 left over
    # a has not begun: it needs a row thread, which a waiting b would hold; b takes what is left now (none).
    assert budget.extra(b, 0.0, never) == SPENT


def test_a_left_over_sample_goes_to_the_least_decided_waiting_row() -> None:
    a, b, c = spec("a"), spec("b"), spec("c")
    budget = SampleBudget(60, [a, b, c])
    for row in (a, b, c):
        budget.begin(row)
    for row in (b, c):  # b and c take their 20 and wait at max; a still holds its 20: 60 - 40 - 20 = 0 left
        for _ in range(20):
            budget.take(row)
        budget.release(row)
    waiting = {name: threading.Event() for name in ("b", "c")}
    got: dict[str, str | None] = {}

    def ask(row: RowSpec, progress: float) -> None:
        def give_up() -> None:
            waiting[row.name].set()

        got[row.name] = budget.extra(row, progress, give_up)

    threads = [threading.Thread(target=ask, args=(b, 0.6)), threading.Thread(target=ask, args=(c, 0.1))]
    for thread in threads:
        thread.start()
    assert all(event.wait(10) for event in waiting.values())  # both wait
    for _ in range(19):
        budget.take(a)
    budget.release(a)  # a decided after 19: 60 - 59 - 0 = 1 left over, for c (progress 0.1 is below b's 0.6)
    for thread in threads:
        thread.join(10)
    assert got == {"c": None, "b": SPENT} and budget.spent == 60


def test_the_budget_is_never_exceeded_however_rows_interleave() -> None:
    rng = random.Random(20261202)
    for trial in range(30):
        rows = [spec(f"r{i}", rng.randint(3, 8)) for i in range(6)]
        total = sum(row.repeat for row in rows) + rng.randint(0, 5)
        budget = SampleBudget(total, rows)
        taken = {row.id: 0 for row in rows}

        def one(row: RowSpec, seed: int, budget: SampleBudget = budget, taken: dict[str, int] = taken) -> None:
            own = random.Random(seed)
            budget.begin(row)
            stop_at = own.randint(1, row.repeat)  # where its tests decide it, or its max
            for _ in range(stop_at):
                budget.take(row)
                taken[row.id] += 1  # each row counts its own: no two threads write one key
            budget.release(row)
            while own.random() < 0.8 and budget.extra(row, own.random(), never) is None:
                taken[row.id] += 1
            budget.finish(row)

        with ThreadPoolExecutor(3) as threads:  # fewer threads than rows: some rows begin late
            list(threads.map(one, rows, [trial * 100 + i for i in range(len(rows))]))
        assert sum(taken.values()) == budget.spent <= total


# --- rows on real processes -------------------------------------------------------------------------


def test_a_decided_rows_left_over_samples_go_to_the_undecided_row(tmp_path: Path, settings: RunSettings) -> None:
    always, edge = row_of(tmp_path, "true", "always"), row_of(tmp_path, EDGE, "edge")
    # budget: fixed = 20 + 20 = 40 samples; max_extra is twice max (40), so each row may take up to 60.
    with budgeted_pool([always, edge], 1) as pool, Containment() as containment:
        first = run_row(always, settings, containment, pool=pool)
        second = run_row(edge, settings, containment, pool=pool)
        spent = pool.budget.spent if pool.budget else None
    # 'always' is decided after 10 passes (the evidence (0.9/0.7)^10 / 2 + (1/0.7)^10 / 2 = 23.9 >= 20):
    # it leaves 20 - 10 = 10 samples.
    assert (len(first.samples), first.sampled and first.sampled.stop) == (10, "decided")
    # 'edge' fails samples 4, 9 and 14; after sample 18 it has 16/19 passed, which meets pass_rate 0.8 of 20
    # whatever sample 19 does (16 >= 0.8 x 20): curtailed, its own stop point, so it leaves 1 more.
    # Left over: 40 - (10 + 19) spent - 0 reserved = 11 extra samples, one at a time: indices 19 to 29.
    # Its tests never decide on the way: at 24/30 the evidence for either side stays below 20, e.g.
    # (0.9/0.7)^24 (0.1/0.3)^6 / 2 = 0.29 and (0.3/0.1)^6 (0.7/0.9)^24 / 2 = 0.88.
    assert [s.index for s in second.samples] == list(range(30))
    assert second.sampled is not None and (second.sampled.stop, second.sampled.extra) == ("budget", 11)
    assert sum(s.passed for s in second.samples) == 24  # fails 4, 9, ..., 29: six of 30
    assert second.status == "PASS"  # the usual rule on its 30 samples: 24 >= 0.8 x 30
    assert spent == 40 == len(first.samples) + len(second.samples)  # the budget, spent, and no more
    assert second.sampling == (
        "undecided after 30 (pass rate 24/30 passed is not yet told apart from 0.8): 11 extra samples from "
        "the sample budget, then the sample budget had no sample left for it; the usual rule on its 30 samples "
        "decides"
    )


def test_without_a_budget_the_same_rows_stop_where_adaptive_sampling_stops(
    tmp_path: Path, settings: RunSettings
) -> None:
    adaptive = Sampling(max=20)
    always, edge = (row_of(tmp_path, script, name, sampling=adaptive) for script, name in (("true", "a"), (EDGE, "e")))
    with sample_pool(1, order=[always, edge]) as pool, Containment() as containment:
        results = [run_row(row, settings, containment, pool=pool) for row in (always, edge)]
    assert [len(r.samples) for r in results] == [10, 19]  # decided after 10; curtailed after 19, as above
    assert [r.sampled.stop if r.sampled else None for r in results] == ["decided", "curtailed"]


def test_a_row_undecided_at_its_cap_stops_there(tmp_path: Path, settings: RunSettings) -> None:
    # Fails samples 0, 5, 10, ...: at n its pass share is (n - ceil(n/5)) / n, never settled before it ends.
    edge = row_of(tmp_path, "exit $(( ASSAY_SAMPLE % 5 == 0 ))", "edge", repeat=10,
                  sampling=Sampling(max=10, budget=True, max_extra=5))  # fmt: skip
    rows = [row_of(tmp_path, "true", f"always-{i}") for i in range(2)] + [edge]
    with budgeted_pool(rows, 1) as pool, Containment() as containment:
        results = [run_row(row, settings, containment, pool=pool) for row in rows]
    # Budget 20 + 20 + 10 = 50. The two rows that always pass are decided after 10 each, leaving 20. The edge
    # row reaches its max undecided (8/10: 8 >= 0.8 x 10 only at 10 itself, where curtailment never applies)
    # and takes extras up to its cap of 10 + 5: indices 10 to 14, 12/15, with 15 left over unspent.
    assert [len(r.samples) for r in results] == [10, 10, 15]
    sampled = results[2].sampled
    assert sampled is not None and (sampled.stop, sampled.extra, sampled.cap) == ("cap", 5, 15)
    assert results[2].sampling == (
        "undecided at its cap of 15 (max 10 + 5 extra) (pass rate 12/15 passed is not yet told apart from 0.8): "
        "the usual rule on its 15 samples decides"
    )
    assert pool.budget is not None and pool.budget.spent == 35


@pytest.mark.parametrize("at_once", [1, 3, 6])
def test_the_budget_holds_with_samples_at_once_limits_and_a_cost_budget(
    tmp_path: Path, settings: RunSettings, at_once: int
) -> None:
    cost = MetricSpec(name="cost_usd", extract="1.0", unit="USD", file="fixture.md", line=2, aggregate="sum")
    rows = [
        row_of(tmp_path, script, f"{name}-{i}", serial=False, metrics=(cost,), properties={"provider": name})
        for i in range(2)
        for name, script in (("always", "true"), ("edge", EDGE), ("never", "false"))
    ]
    limits = [Limit("provider", concurrency=1)]
    with budgeted_pool(rows, 4, limits=limits) as pool:
        results = run_all(rows, settings, pool, at_once)
        assert pool.budget is not None and pool.budget.spent == sum(len(r.samples) for r in results.values())
    total = 6 * 20  # fixed k
    assert sum(len(r.samples) for r in results.values()) <= total
    assert all(len(r.samples) <= 60 for r in results.values())
    assert all(r.status != "ERR" for r in results.values())  # extras never cut a row short
    # A cost budget that runs out ends the extras of the waiting rows, without cutting any row short.
    capped = [row_of(tmp_path, script, name, metrics=(cost,), budget=Budget("cost_usd", 45.0, "fixture.md:2"))
              for name, script in (("always", "true"), ("edge", EDGE))]  # fmt: skip
    with budgeted_pool(capped, 2) as pool:
        spent = run_all(capped, settings, pool, at_once)
    # A passing sample costs 1 (a failing one extracts no metric): always 10 + edge 16 of 19 = 26. The edge
    # row takes the 11 left over (indices 19 to 29, 8 of them passing): 34 < 45, so the sample budget ends it.
    assert sum(len(r.samples) for r in spent.values()) == 40
    assert spent["edge"].status == "PASS" and spent["edge"].error is None


def test_a_cost_budget_ends_extras_without_an_error(tmp_path: Path, settings: RunSettings) -> None:
    cost = MetricSpec(name="cost_usd", extract="1.0", unit="USD", file="fixture.md", line=2, aggregate="sum")
    money = Budget("cost_usd", 32.0, "fixture.md:2")
    rows = [
        row_of(tmp_path, script, name, metrics=(cost,), budget=money) for name, script in (("a", "true"), ("e", EDGE))
    ]
    with budgeted_pool(rows, 1) as pool, Containment() as containment:
        always, edge = (run_row(row, settings, containment, pool=pool) for row in rows)
    # A passing sample costs 1 (a failing one extracts no metric): always 10, edge 16 of its first 19: 26.
    # Extras: 19 fails (26), 20-23 pass (30), 24 fails, 25 and 26 pass (32 USD): the cost budget is reached
    # after 8 extras, with 3 samples still left over: the row stops there, complete, not cut short.
    assert len(edge.samples) == 27 and edge.status == "PASS" and edge.error is None and edge.stopped is None
    assert edge.sampled is not None and (edge.sampled.stop, edge.sampled.extra) == ("undecided", 8)
    assert edge.sampling is not None and "then budget exhausted: cost_usd 32 spent of 32" in edge.sampling


def test_a_resumed_run_counts_the_samples_it_kept(tmp_path: Path, settings: RunSettings) -> None:
    always, edge = row_of(tmp_path, "true", "always"), row_of(tmp_path, EDGE, "edge")
    with budgeted_pool([always, edge], 1) as pool, Containment() as containment:
        done = [run_row(row, settings, containment, pool=pool) for row in (always, edge)]
    # Killed after 'always' and 25 of the edge row's 30 samples: it kept 0-24, extras included.
    kept = Resumed(samples={always.id: done[0].samples, edge.id: done[1].samples[:25]})
    counter = tmp_path / "ran"
    again = row_of(tmp_path, f"echo $ASSAY_SAMPLE >> {shlex.quote(str(counter))}; {EDGE}", "edge")
    with budgeted_pool([always, again], 1, resumed=kept) as pool, Containment() as containment:
        resumed = [run_row(row, settings, containment, pool=pool) for row in (always, again)]
        spent = pool.budget.spent if pool.budget else None
    # 10 + 25 kept are spent; 40 - 35 = 5 are left over, and the edge row takes them: 25 to 29.
    assert counter.read_text().split() == ["25", "26", "27", "28", "29"]
    assert [len(r.samples) for r in resumed] == [10, 30] and spent == 40
    # Its extras: the 6 it kept past its stop point after 19 (indices 19 to 24) and the 5 it took now.
    assert resumed[1].sampled is not None and resumed[1].sampled.extra == 11
