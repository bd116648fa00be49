"""The ``assay.run.finished`` event, for Prefect automations (e.g. notify when a nightly run fails).

The resource is the suite (``assay.suite.<key>``) and carries the verdict as
a label, so an automation's trigger can match ``assay.verdict: [FAIL, ERR]``
without reading the payload; Prefect relates the event to its flow run,
flow, deployment and tags. The payload has the counts and the run document.
"""

from __future__ import annotations

from prefect.events import emit_event

from fixtures_core.records.rundoc import RunResult

FINISHED = "assay.run.finished"


def emit_run_finished(run: RunResult, artifact_key: str, document: str) -> None:
    """Tell Prefect a run finished, with its verdict and counts."""
    s = run.summary
    emit_event(
        event=FINISHED,
        resource={
            "prefect.resource.id": f"assay.suite.{artifact_key}",
            "prefect.resource.name": run.label or artifact_key,
            "assay.verdict": run.verdict.shown,
            "assay.exit-code": str(run.verdict.exit_code),
            "assay.run-id": run.run_id,
        },
        payload={
            "run_id": run.run_id,
            "label": run.label,
            "verdict": run.verdict.shown,
            "exit_code": run.verdict.exit_code,
            "error": run.error,
            "rows": s.rows,
            "passed": s.passed,
            "failed": s.failed,
            "errored": s.errored,
            "skipped": s.skipped,
            "samples": s.samples,
            "failing_rows": [row.name for row in run.rows if row.status in ("FAIL", "ERR")],
            "regressed": run.verdict.regressed,
            "document": document,
        },
    )
