"""Quiet Prefect: settings that must be in place before ``import prefect``.

Without them Prefect prints its own logs, telemetry errors and shutdown
tracebacks, and assay's report would not be the only output. A user's own
environment wins: only unset variables are filled in.
"""

from __future__ import annotations

import os

QUIET = {
    "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "CRITICAL",
    "PREFECT_LOGGING_TO_API_ENABLED": "false",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
}


def quiet_prefect() -> None:
    """Fill in the quiet settings; call before the first ``import prefect``."""
    for key, value in QUIET.items():
        os.environ.setdefault(key, value)
