"""Prefect settings that must be in place before ``import prefect``.

Quiet: without them Prefect prints its own logs, telemetry errors and
shutdown tracebacks, and assay's report would not be the only terminal
output. Logs still go to the Prefect API (its Logs tab), console only is
quiet. Patient: a temporary server's first start on an empty Prefect home
runs the database migrations, longer than Prefect's default 20 s wait on 2
cores. A user's own environment wins: only unset variables are filled in.
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


def quiet_prefect() -> None:
    """Fill in the quiet and patient settings; call before the first ``import prefect``."""
    for key, value in {**QUIET, **PATIENT}.items():
        os.environ.setdefault(key, value)
