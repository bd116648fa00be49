"""The local engine: the same row function on a plain thread pool, no Prefect."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, crashed_row, run_row
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.progress import ProgressListener
from fixtures_core.results import RowResult
from fixtures_core.runner import Plan, Recorder, RunOptions, complete, interruption, settings_for, store_for


def run_locally(
    planned: Plan, options: RunOptions, run_id: str, containment: Containment, listener: ProgressListener | None = None
) -> RunResult:
    """Run a planned matrix on ``options.parallel`` threads and close the run."""
    recorder = Recorder(store_for(options), run_id, planned.matrix, listener=listener)
    rows = run_rows_locally(recorder, settings_for(options, run_id), containment, options.parallel)
    return complete(recorder, options, rows, interruption(containment), planned.baseline, containment)


def run_rows_locally(
    recorder: Recorder, settings: RunSettings, containment: Containment, parallel: int
) -> list[RowResult]:
    """Run every row of the recorder's matrix, ``parallel`` rows at a time."""

    def one(row_index: int) -> RowResult:
        row = recorder.matrix.rows[row_index]
        try:
            recorder.on_row_start(row)
            result = run_row(row, settings, containment, on_sample=recorder.on_sample)
            recorder.on_row(result)
        except Exception as exc:
            return crashed_row(row, exc)
        return result

    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="assay-row") as pool:
        return list(pool.map(one, range(len(recorder.matrix.rows))))
