"""The local engine: the same row function on plain threads, no Prefect.

Rows run on ``rows_at_once`` threads; their samples share the run's sample
slots (``runs.plan.pool_for``): local semaphores for ``limits``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.daemons import running_daemons
from fixtures_core.execution.pool import SamplePool
from fixtures_core.execution.rows import RunSettings
from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.progress import ProgressListener
from fixtures_core.results import RowResult
from fixtures_core.runs.close import RunStop, complete, complete_from_evidence, run_stop
from fixtures_core.runs.options import RunOptions, settings_for
from fixtures_core.runs.plan import Plan, pool_for, rows_at_once
from fixtures_core.runs.recorder import Recorder, open_run, run_recorded_row
from fixtures_core.spec import RowSpec


def run_locally(
    planned: Plan, options: RunOptions, run_id: str, containment: Containment, listener: ProgressListener | None = None
) -> RunResult:
    """Run a planned matrix on threads and close the run."""
    recorder = open_run(options, run_id, planned, listener)
    with (
        pool_for(options, planned, planned.matrix.rows) as pool,
        running_daemons(planned.matrix.rows, containment) as daemons,
    ):
        settings = replace(settings_for(options, run_id), daemons=daemons)
        try:
            rows = run_rows_locally(recorder, settings, containment, rows_at_once(options, planned.matrix), pool)
        except BaseException:
            # A second interrupt, raised here while the rows' threads ran: they have ended (every sample
            # was killed at once); their results are in the evidence. The run still gets its run.json.
            stopped = RunStop("cancelled", "interrupted: every sample was killed at once")
            complete_from_evidence(recorder, options, planned.matrix.rows, stopped, planned.baseline, containment)
            raise
        stop = run_stop(containment, pool, rows)
    containment.closing.set()
    return complete(recorder, options, rows, stop, planned.baseline, containment)


def run_rows_locally(
    recorder: Recorder, settings: RunSettings, containment: Containment, parallel: int, pool: SamplePool | None = None
) -> list[RowResult]:
    """Run every row of the recorder's matrix, ``parallel`` rows at a time, on ``pool``'s sample slots
    (without one: a row's samples one after another)."""

    def one(row: RowSpec) -> RowResult:
        return run_recorded_row(row, settings, containment, recorder, pool)

    with ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="assay-row") as rows:
        return list(rows.map(one, recorder.matrix.rows))
