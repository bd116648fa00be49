"""A work-pool deployment's flow run runs with its deployment's job variables, never with a custom run's.

On a work pool, job variables configure the process a worker starts for a
flow run: Prefect's worker merges the deployment's and then the flow run's
into the pool's base job template (``env`` key by key, into the template's
``env`` when it has one). Whoever may start a custom run sets the flow run's:
the UI's form, ``prefect deployment run --job-variable``, a ``PATCH`` of a
Scheduled run, or ``POST /flow_runs/`` naming the deployment (which the
server does not check against the pool's variables at all). So a flow run
whose job variables differ from its deployment's is refused in one line,
before any fixture command runs.

What acts when a process starts (``LD_PRELOAD``, a ``sitecustomize`` on
``PYTHONPATH``) has acted before this check: only a pool whose template
passes no job variable to the process stops it (``deployments/process-pool.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fixtures_core.text import excerpt
from flows.flow.parameters import QUOTED_CHARS, ParameterError, quoted

_MERGED_BY_KEY = "env"  # the one job variable Prefect's worker merges key by key (the others replace)


class JobVariablesChanged(ParameterError):
    """A flow run's job variables differ from its deployment's."""


def check_unchanged(deployment: Mapping[str, Any], flow_run: Mapping[str, Any]) -> None:
    """JobVariablesChanged for the first job variable of ``flow_run`` that differs from ``deployment``'s."""
    for name, value in flow_run.items():
        defined = deployment.get(name)
        if name == _MERGED_BY_KEY and isinstance(value, Mapping):
            for key, setting in value.items():
                if (defined if isinstance(defined, Mapping) else {}).get(key) != setting:
                    raise _changed(f"{name}.{key}", setting)
        elif value != defined:
            raise _changed(name, value)


def _changed(name: str, value: object) -> JobVariablesChanged:
    field = excerpt(repr(name)[1:-1], QUOTED_CHARS - 1)  # escaped and cut like a value: a newline, 300 KB
    return JobVariablesChanged(
        f"refused: job_variables.{field} {quoted(value)}: a custom run may not change its deployment's job "
        "variables (on a work pool they set the command, working folder and environment of the process the "
        "worker starts); change the deployment instead"
    )
