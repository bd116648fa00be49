"""Resuming a run from its evidence (``fixtures_core.records.resume``): what an interrupt stopped runs
again, what finished on its own is kept. ``stopped`` decides, never the wording of an error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures_core.errors import RunFileError, UsageError
from fixtures_core.parsing.matrix import load_matrix
from fixtures_core.records.resume import Started, check_resumable, find_started, resumed_rows
from fixtures_core.records.store import Store
from fixtures_core.results import Check, Outcomes, RowResult, SampleResult, Stop
from fixtures_core.runs.close import RunStop, complete
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.recorder import Recorder
from fixtures_core.spec import Matrix


def sample(index: int, stopped: Stop | None = None, error: str | None = None) -> SampleResult:
    status = "ERR" if stopped or error else "PASS"
    return SampleResult(index=index, status=status, duration_ms=1.0, exit_code=0, stdout="", stderr="",
                        command=Check("pass"), error=error, stopped=stopped)  # fmt: skip


def raw_row(matrix: Matrix, index: int, samples: tuple[SampleResult, ...], **fields: object) -> RowResult:
    spec = matrix.rows[index]
    values: dict[str, object] = dict(id=spec.id, file=spec.fixture_id, name=spec.name, line=spec.line,
                                     status="PASS", repeat=spec.repeat, command=spec.argv, properties={},
                                     samples=samples, outcomes=Outcomes("pass", "pass"))  # fmt: skip
    return RowResult(**{**values, **fields})  # type: ignore[arg-type]


def recorded(
    store: Store, matrix: Matrix, index: int, samples: tuple[SampleResult, ...], row: RowResult | None
) -> None:
    """Evidence as a run writes it: a line per finished sample, then (once the row finished) its raw row."""
    name = matrix.rows[index].name
    for each in samples:
        store.write_sample("r1", index, name, each)
    if row is not None:
        store.write_row("r1", index, row)


@pytest.fixture
def matrix(tmp_path: Path) -> Matrix:
    fixture = tmp_path / "f.md"
    fixture.write_text(
        "---\nrepeat: 3\n---\n\n| Name | Command |\n|---|---|\n| a | `true` |\n| b | `true` |\n| c | `true` |\n"
    )
    return load_matrix([str(fixture)])


def test_samples_and_rows_an_interrupt_stopped_run_again_whatever_their_errors_say(
    tmp_path: Path, matrix: Matrix
) -> None:
    store = Store(tmp_path / "state")
    store.prepare_evidence("r1")
    # Row a was in flight when the run was killed: its cancelled sample runs again; a sample whose
    # error merely starts with "cancelled" (the command's own words) finished and is kept.
    a = (sample(0), sample(1, "cancelled", "cancelled (the sample's processes were killed)"),
         sample(2, error="cancelled order: exit code 3, expected 0"))  # fmt: skip
    recorded(store, matrix, 0, a, None)
    # Row b finished, but because the interrupt stopped it: it runs again, minus its cancelled sample.
    b = (sample(0), sample(1, "cancelled", "cancelled (the sample's processes were killed)"))
    recorded(store, matrix, 1, b, raw_row(matrix, 1, b, status="ERR", error=f"sample 1: {b[1].error}",
                                          stopped="cancelled"))  # fmt: skip
    # Row c finished on its own with an error that reads like a cancellation: it is kept whole.
    c = (sample(0, error="cancelled: said the command"),)
    recorded(store, matrix, 2, c, raw_row(matrix, 2, c, status="ERR", error="sample 0: cancelled: said the command"))

    resumed = resumed_rows(store, "r1", matrix)

    a_id, b_id, c_id = (spec.id for spec in matrix.rows)
    assert set(resumed.rows) == {c_id}
    assert resumed.rows[c_id].samples == c
    assert [s.index for s in resumed.samples[a_id]] == [0, 2]
    assert [s.index for s in resumed.samples[b_id]] == [0]


def test_a_crashed_row_runs_again(tmp_path: Path, matrix: Matrix) -> None:
    store = Store(tmp_path / "state")
    store.prepare_evidence("r1")
    recorded(store, matrix, 0, (), raw_row(matrix, 0, (), status="ERR", error="internal error: OSError: gone",
                                           stopped="crashed"))  # fmt: skip
    resumed = resumed_rows(store, "r1", matrix)
    assert resumed.rows == {} and resumed.samples == {matrix.rows[0].id: ()}


@pytest.mark.parametrize(
    ("stop", "resumable"),
    [
        (RunStop("cancelled", "interrupted: samples were cancelled"), True),
        (RunStop("budget", "budget exhausted: cost_usd 5 spent of 5 (--budget); 1 row(s) skipped: c"), False),
        (None, False),
    ],
)
def test_only_a_run_an_interrupt_stopped_can_be_resumed(
    tmp_path: Path, matrix: Matrix, stop: RunStop | None, resumable: bool
) -> None:
    options = RunOptions(paths=(str(tmp_path / "f.md"),), out=str(tmp_path / "state"))
    recorder = Recorder(store_for(options), "r1", matrix)
    rows = [raw_row(matrix, i, (sample(0),)) for i in range(3)]
    run = complete(recorder, options, rows, stop)
    assert run.stopped == (stop.stopped if stop else None)
    started = Started("r1", run.started_at, options.recorded(), {})
    if resumable:
        check_resumable(recorder.store, started)
        return
    with pytest.raises(UsageError, match="only an interrupted or killed run can be resumed"):
        check_resumable(recorder.store, started)


def start_record(folder: Path, run_id: str) -> None:
    folder.mkdir(parents=True)
    document = {"schema": "assay.started/v1", "run_id": run_id, "started_at": "2026-11-30T00:00:00Z",
                "options": {"paths": ["x.md"]}, "fixtures": {}}  # fmt: skip
    (folder / "started.json").write_text(json.dumps(document))


def test_a_start_record_naming_a_path_as_its_run_id_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "state")
    start_record(store.run_dir("r1"), "../../elsewhere")
    with pytest.raises(RunFileError, match=r"start record with an invalid run id '\.\./\.\./elsewhere'"):
        find_started(store, "r1")


def test_a_run_of_another_state_folder_is_not_resumed_into_this_one(tmp_path: Path) -> None:
    other = Store(tmp_path / "other")
    start_record(other.run_dir("r1"), "r1")
    with pytest.raises(
        UsageError, match=r"run r1 is not in the state folder .*state \(give --out the folder it ran with\)"
    ):
        find_started(Store(tmp_path / "state"), str(other.run_dir("r1")))
    assert find_started(other, str(other.run_dir("r1"))).run_id == "r1"


def test_a_resumed_run_cuts_the_line_a_full_disk_tore_before_it_appends(tmp_path: Path, matrix: Matrix) -> None:
    from fixtures_core.execution.pool import Resumed

    store = Store(tmp_path / "state")
    store.prepare_evidence("r1")
    recorded(store, matrix, 0, (sample(0),), None)
    path = store.evidence_file("r1", 0, matrix.rows[0].name)
    with path.open("ab") as handle:
        handle.write(b'{"sample":{"index":1,"sta')  # the disk filled up mid-line
    recorder = Recorder(store, "r1", matrix, resumed=Resumed({}, {}))
    try:
        recorder.on_sample(matrix.rows[0], sample(1))
    finally:
        recorder.release()
    assert [s.index for s in resumed_rows(store, "r1", matrix).samples[matrix.rows[0].id]] == [0, 1]
