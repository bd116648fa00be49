"""The local engine: the same row function on a plain thread pool, no Prefect."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from fixtures_core.results import RowResult
from fixtures_core.rows import RunSettings, run_row
from fixtures_core.runner import Recorder
from fixtures_core.sampling import ProcessGroups


def run_rows_locally(
    recorder: Recorder, settings: RunSettings, groups: ProcessGroups, parallel: int
) -> list[RowResult]:
    """Run every row of the recorder's matrix, ``parallel`` rows at a time."""

    def one(row_index: int) -> RowResult:
        row = recorder.matrix.rows[row_index]
        result = run_row(row, settings, groups, on_sample=recorder.on_sample)
        recorder.on_row(result)
        return result

    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="assay-row") as pool:
        return list(pool.map(one, range(len(recorder.matrix.rows))))
