"""The Prefect engine's recheck: one flow run (``assay-recheck``) that closes a prepared recheck and
publishes the run's report, rows and metrics as its artifacts, as a matrix flow run does.

No sample runs in it, so it has no task run: ``fixtures_core.runs.recheck`` checked the stored
samples again before the flow run began (any input it refused never reached Prefect).
"""

from __future__ import annotations

import contextvars
import copy
import threading
from typing import Any, cast

from flows.server.prefect_env import quiet_prefect

quiet_prefect()  # before Prefect is imported

from prefect import Flow, get_run_logger  # noqa: E402
from prefect.client.schemas.objects import State  # noqa: E402
from prefect.settings import temporary_settings  # noqa: E402

from fixtures_core.records.rundoc import RunResult  # noqa: E402
from fixtures_core.runs.options import store_for  # noqa: E402
from fixtures_core.runs.recheck import PreparedRecheck, close_recheck  # noqa: E402
from flows.flow import states  # noqa: E402
from flows.flow.events import emit_run_finished  # noqa: E402
from flows.flow.matrix import publish  # noqa: E402
from flows.flow.naming import artifact_key, flow_run_name  # noqa: E402
from flows.server.local import Backend  # noqa: E402

# Set around the flow call: the prepared recheck (domain objects Prefect must not serialize as parameters).
_PREPARED: contextvars.ContextVar[PreparedRecheck | None] = contextvars.ContextVar("assay_recheck", default=None)


def _recheck_flow(source: str) -> Any:
    """Judge run ``source``'s stored samples again with the fixture files as they are now; no sample runs.

    The flow run ends Failed, naming the failing rows, when the verdict is FAIL or ERR.
    """
    prepared = _PREPARED.get()
    if prepared is None or prepared.source != source:
        raise RuntimeError("assay-recheck runs from `assay recheck` (it needs the recheck it prepared)")
    run = close_recheck(prepared)
    document = store_for(prepared.options).run_file(run.run_id).resolve()
    key = artifact_key(prepared.options, prepared.planned.matrix)
    publish(run, document, key)
    emit_run_finished(run, key, str(document))
    log = get_run_logger().info if run.verdict.exit_code == 0 else get_run_logger().error
    log(f"{states.verdict_message(run)}; rechecked {source}; run document {document}")
    return states.flow_state(run)


recheck_flow: Flow[..., Any] = Flow(
    _recheck_flow, name="assay-recheck", log_prints=False, validate_parameters=False, persist_result=False
)


def recheck_with_prefect(prepared: PreparedRecheck, backend: Backend) -> RunResult:
    """Run the recheck's flow run on ``backend`` in a worker thread (Prefect must not take the main
    thread's signal handlers) and wait for it."""
    updates: dict[str, Any] = {"flows.heartbeat_frequency": None, **backend.prefect_settings()}
    outcome: dict[str, Any] = {}

    def target() -> None:
        token = _PREPARED.set(prepared)
        try:
            named = copy.copy(recheck_flow)
            named.flow_run_name = flow_run_name(prepared.run_id, prepared.options.label)
            with temporary_settings(updates=updates):
                state = cast(State[Any], named(source=prepared.source, return_state=True))
            outcome["run"] = states.carried(state, RunResult)
        except BaseException as exc:  # handed to the calling thread, which re-raises it
            outcome["error"] = exc
        finally:
            _PREPARED.reset(token)
            finished.set()

    finished = threading.Event()
    thread = threading.Thread(target=contextvars.copy_context().run, args=(target,), name="assay-recheck", daemon=True)
    thread.start()
    while not finished.wait(timeout=0.2):  # short waits: the calling thread still answers signals
        pass
    if "error" in outcome:
        raise outcome["error"]
    return cast(RunResult, outcome["run"])
