"""Rows on the run's one pool of sample slots: concurrent samples, serial rows, stops, budgets.

Real subprocesses (``bash -c``). Concurrency is proven by rendezvous (a sample
waits until its siblings have started, which only concurrent samples can do)
and by start/end records, never by how long anything took.
"""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import Resumed, sample_pool
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.spec import Budget, Expectation, Limit, MetricSpec, RowSpec


def row_of(tmp_path: Path, script: str, *, name: str = "row", repeat: int = 4, **fields: object) -> RowSpec:
    return RowSpec(
        file=str(tmp_path / "fixture.md"),
        line=3,
        name=name,
        argv=("bash", "-c", script),
        expect=Expectation(exit_code=0),
        repeat=repeat,
        timeout_s=60.0,
        **{"properties": {}, **fields},  # type: ignore[arg-type]
    )


def rendezvous(folder: Path, count: int) -> str:
    """A script that checks in, then waits until ``count`` samples checked in (exit 3 after 20 s alone)."""
    where = shlex.quote(str(folder))
    return (
        f"touch {where}/$ASSAY_SAMPLE; for i in $(seq 200); do "
        f'[ "$(ls {where} | wc -l)" -ge {count} ] && exit 0; sleep 0.1; done; exit 3'
    )


def intervals(log: Path) -> list[tuple[str, int, str]]:
    """The ``(event, sample, key)`` lines a logging script wrote, in the order they happened."""
    out = []
    for line in log.read_text().splitlines():
        event, sample, key = line.split()
        out.append((event, int(sample), key))
    return out


def max_in_flight(events: list[tuple[str, int, str]], key: str | None = None) -> int:
    now = peak = 0
    for event, _sample, which in events:
        if key is not None and which != key:
            continue
        now += 1 if event == "start" else -1
        peak = max(peak, now)
    return peak


def logging_script(log: Path, key: str, seconds: float = 0.2) -> str:
    where = shlex.quote(str(log))
    # flock: the start/end lines are written in the order the events happened
    return (
        f"flock {where} -c 'echo start $ASSAY_SAMPLE {key} >> {where}'; sleep {seconds}; "
        f"flock {where} -c 'echo end $ASSAY_SAMPLE {key} >> {where}'"
    )


@pytest.fixture
def settings(tmp_path: Path) -> RunSettings:
    root = tmp_path / "tmp-root"
    root.mkdir()
    return RunSettings(run_id="run-pool", tmp_root=str(root))


def test_samples_of_one_row_run_at_once_on_the_pool(tmp_path: Path, settings: RunSettings) -> None:
    met = tmp_path / "met"
    met.mkdir()
    row = row_of(tmp_path, rendezvous(met, 4), serial=False)  # the fixture opts in
    with Containment() as containment, sample_pool(4) as pool:
        result = run_row(row, settings, containment, pool=pool)
    assert result.status == "PASS", result
    assert [s.index for s in result.samples] == [0, 1, 2, 3]  # indices stay stable


def test_without_a_pool_a_row_runs_its_samples_one_after_another(tmp_path: Path, settings: RunSettings) -> None:
    log = tmp_path / "log"
    row = row_of(tmp_path, logging_script(log, "x", 0.05), repeat=3)
    with Containment() as containment:
        result = run_row(row, settings, containment)
    assert result.status == "PASS"
    expected = [("start", 0), ("end", 0), ("start", 1), ("end", 1), ("start", 2), ("end", 2)]
    assert [e[:2] for e in intervals(log)] == expected


@pytest.mark.parametrize("serial", [None, True], ids=["by-default", "serial-true"])
def test_a_row_keeps_its_samples_in_order_even_with_free_slots(
    tmp_path: Path, settings: RunSettings, serial: bool | None
) -> None:
    # seed 01: "execute samples serially within one row task", unless the fixture says serial: false
    log = tmp_path / "log"
    row = row_of(tmp_path, logging_script(log, "x", 0.05), repeat=4, serial=serial)
    with Containment() as containment, sample_pool(4) as pool:
        result = run_row(row, settings, containment, pool=pool)
    assert result.status == "PASS"
    events = intervals(log)
    assert max_in_flight(events) == 1
    assert [sample for event, sample, _ in events if event == "start"] == [0, 1, 2, 3]


def test_a_limit_caps_samples_in_flight_per_value(tmp_path: Path, settings: RunSettings) -> None:
    log = tmp_path / "log"
    rows = [
        row_of(tmp_path, logging_script(log, provider), name=f"{provider}-{n}", repeat=3,
               properties={"provider": provider})
        for provider in ("a", "b") for n in range(2)
    ]  # fmt: skip
    limits = [Limit("provider", concurrency=2)]
    with Containment() as containment, sample_pool(8, limits) as pool, ThreadPoolExecutor(4) as threads:
        results = list(threads.map(lambda r: run_row(r, settings, containment, pool=pool), rows))
    assert [r.status for r in results] == ["PASS"] * 4
    events = intervals(log)
    assert len(events) == 24
    assert max_in_flight(events, "a") == 2  # the cap is reached and never passed
    assert max_in_flight(events, "b") == 2


def test_an_err_stops_the_row_and_cancels_its_samples_in_flight(tmp_path: Path, settings: RunSettings) -> None:
    started = tmp_path / "started"
    started.mkdir()
    where = shlex.quote(str(started))
    # Sample 0 waits until sample 1 started, then ends; its CEL cannot evaluate (ERR). The others sleep.
    script = (
        f'touch {where}/$ASSAY_SAMPLE; if [ "$ASSAY_SAMPLE" = 0 ]; then '
        f"for i in $(seq 200); do [ -e {where}/1 ] && exit 0; sleep 0.05; done; fi; sleep 60"
    )
    row = row_of(tmp_path, script, repeat=6, serial=False)
    row = replace(row, expect=Expectation(exit_code=0, cel="int(stdout) == 1"))
    with Containment() as containment, sample_pool(2) as pool:
        result = run_row(row, settings, containment, pool=pool)
    assert result.status == "ERR"
    assert result.error is not None and result.error.startswith("sample 0:")
    by_index = {s.index: s for s in result.samples}
    assert by_index[0].status == "ERR"
    assert by_index[1].status == "ERR" and "the row had stopped" in (by_index[1].error or "")
    assert (result.stopped, by_index[0].stopped, by_index[1].stopped) == (None, None, "cancelled")
    assert set(by_index) == {0, 1}  # no new sample started after the ERR
    assert not any((started / str(i)).exists() for i in range(2, 6))


def test_a_shared_time_budget_ends_every_sample_by_the_row_deadline(tmp_path: Path, settings: RunSettings) -> None:
    row = row_of(tmp_path, "sleep 30", repeat=4, serial=False)
    row = replace(row, timeout_s=1.0)
    with Containment() as containment, sample_pool(2) as pool:
        result = run_row(row, settings, containment, pool=pool)
    assert result.status == "ERR"
    assert [s.index for s in result.samples] == [0, 1]  # the two in flight timed out; no third started
    assert all((s.error or "").startswith("timed out:") for s in result.samples)
    assert [result.stopped, *(s.stopped for s in result.samples)] == ["timeout"] * 3


def test_a_reached_budget_starts_no_new_sample(tmp_path: Path, settings: RunSettings) -> None:
    cost = MetricSpec(name="cost_usd", extract="2.0", unit="USD", file="fixture.md", line=2, aggregate="sum")
    budget = Budget("cost_usd", 5.0, "fixture.md:2")
    row = row_of(tmp_path, "true", repeat=10, metrics=(cost,), budget=budget)
    other = row_of(tmp_path, "true", name="later", repeat=2, metrics=(cost,), budget=budget)
    with Containment() as containment, sample_pool(1, order=[row, other]) as pool:
        first = run_row(row, settings, containment, pool=pool)
        second = run_row(other, settings, containment, pool=pool)
    assert first.status == "ERR"
    assert len(first.samples) == 3  # 2 + 2 < 5 <= 6: the third sample reached it
    assert first.error == "budget exhausted after 3 of 10 samples: cost_usd 6 spent of 5 (fixture.md:2)"
    assert first.stopped == "budget" and all(s.stopped is None for s in first.samples)
    assert second.status == "SKIP" and second.samples == () and second.stopped == "budget"
    assert second.error == "budget exhausted: cost_usd 6 spent of 5 (fixture.md:2) before the row started"


def test_a_resumed_row_runs_only_the_samples_it_lacks(tmp_path: Path, settings: RunSettings) -> None:
    counter = tmp_path / "ran"
    row = row_of(tmp_path, f"echo $ASSAY_SAMPLE >> {shlex.quote(str(counter))}", repeat=4)
    with Containment() as containment, sample_pool(2) as pool:
        done = run_row(row, settings, containment, pool=pool)
    kept = tuple(s for s in done.samples if s.index in (0, 2))
    counter.unlink()
    with Containment() as containment, sample_pool(2, resumed=Resumed(samples={row.id: kept})) as pool:
        resumed = run_row(row, settings, containment, pool=pool)
    assert sorted(counter.read_text().split()) == ["1", "3"]
    assert [s.index for s in resumed.samples] == [0, 1, 2, 3]
    assert resumed.samples[0] is kept[0] and resumed.status == "PASS"


def test_a_resumed_row_that_finished_is_kept_whole(tmp_path: Path, settings: RunSettings) -> None:
    with Containment() as containment:
        finished = run_row(row_of(tmp_path, "true", repeat=2), settings, containment)
    row = row_of(tmp_path, "exit 9", repeat=2)  # the same row (name, file, line): it must not run again
    with Containment() as containment, sample_pool(2, resumed=Resumed(rows={row.id: finished})) as pool:
        assert run_row(row, settings, containment, pool=pool) is finished
