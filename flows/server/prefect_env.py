"""Prefect settings that must be in place before ``import prefect``.

Quiet: without them Prefect prints its own logs, telemetry errors and
shutdown tracebacks, and assay's report would not be the only terminal
output. Logs still go to the Prefect API (its Logs tab), console only is
quiet. Patient: a temporary server's first start on an empty Prefect home
runs the database migrations, longer than Prefect's default 20 s wait on 2
cores. Batched: the servers assay starts (the local one, a temporary one)
record events in batches (``RECORDING``). A user's own environment wins:
only unset variables are filled in.
"""

from __future__ import annotations

import os

QUIET = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    # Prefect's internal loggers (its events and log workers failing) write to stderr on a handler of their own.
    "PREFECT_LOGGING_HANDLERS_DEBUG_LEVEL": "CRITICAL",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}
PATIENT = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "180",
}
# How the server records what clients send: task runs from their events, and the events themselves. Prefect
# writes each task-run event in a transaction of its own (batch size 1): three per sample, each taking SQLite's
# one write lock, and each commit makes SQLite refuse ("database is locked", HTTP 503) any other request that
# had read before it writes, such as creating a subflow run. Batches of up to 100, written at least every
# second, take about a twentieth of the writes; the UI shows task runs and events within a second.
RECORDING = {
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_FLUSH_INTERVAL": "1",  # whole seconds (Prefect rounds it down)
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_FLUSH_INTERVAL": "1",
}


def quiet_prefect() -> None:
    """Fill in the quiet, patient and recording settings; call before the first ``import prefect``."""
    for key, value in {**QUIET, **PATIENT, **RECORDING}.items():
        os.environ.setdefault(key, value)
