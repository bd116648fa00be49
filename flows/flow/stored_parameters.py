"""A deployment run's stored parameters reach the flow as they are, so that it refuses bad ones in one line.

Prefect binds the parameters stored with a flow run to the flow function's
signature in ``run_flow`` (``prefect.flow_engine._flow_parameters``), before
any code of the flow runs and outside the engine that would end the run in a
state: a stored key that is not a parameter (``run_id``: a custom run the
server did not check against the schema, whose properties do not exclude
others, or a ``PATCH`` of a scheduled run), or a missing required one,
raises there. The flow-run process exits 1 with a traceback, and the run is
Crashed ("Process exited with status code: 1") under its random name,
naming nothing.

For a flow that takes its parameters whole (``takes_stored_parameters``) and
reads what it was not given from its flow run (``not_given``), ``install``
makes that binding hand over the stored parameters the flow has, unchecked:
the flow checks them, with the rest, and refuses the run in one line (see
``flows.flow.parameters``). Other flows are bound as Prefect binds them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import prefect.flow_engine

_ATTRIBUTE = "_flow_parameters"  # Prefect 3.4 to 3.9; a test runs a deployment run through it
_MARK = "__assay_stored_parameters__"


def install() -> bool:
    """Hand a flow that says ``takes_stored_parameters`` its stored parameters as they are. Once per
    process; False when this Prefect binds them elsewhere (then nothing changes, and a test says so)."""
    bind = getattr(prefect.flow_engine, _ATTRIBUTE, None)
    if bind is None:
        return False
    if not getattr(bind, _MARK, False):
        setattr(prefect.flow_engine, _ATTRIBUTE, _handing_over(bind))
    return True


def _handing_over(bind: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @functools.wraps(bind)
    def flow_parameters(flow: Any, flow_run: Any, parameters: dict[str, Any] | None) -> dict[str, Any]:
        if parameters or flow_run is None or not getattr(flow, "takes_stored_parameters", False):
            return bind(flow, flow_run, parameters)
        names = flow.parameters.properties  # the flow's own, as its schema lists them
        return {key: value for key, value in (flow_run.parameters or {}).items() if key in names}

    setattr(flow_parameters, _MARK, True)
    return flow_parameters


def not_given(stored: Mapping[str, Any] | None, given: Mapping[str, Any]) -> dict[str, Any]:
    """The stored parameters of a flow run that its flow function was not given (keys it does not have)."""
    return {key: value for key, value in (stored or {}).items() if key not in given}
