"""How a flow run's stored parameters reach a flow: Prefect's binding, or as stored for the matrix flow."""

from __future__ import annotations

import uuid

import prefect.flow_engine
import pytest
from prefect import flow
from prefect.client.schemas.objects import FlowRun
from prefect.exceptions import SignatureMismatchError

from flows.flow.stored_parameters import install, not_given


def _stored(**parameters: object) -> FlowRun:
    return FlowRun(flow_id=uuid.uuid4(), parameters=parameters)


def test_this_prefect_binds_stored_parameters_where_assay_hands_them_over_once() -> None:
    from flows.flow.matrix import matrix_flow  # installs it

    bind = prefect.flow_engine._flow_parameters
    assert install() and prefect.flow_engine._flow_parameters is bind, "installed once, at the matrix's import"
    stored = _stored(paths=["a.md"], run_id="../x")
    assert bind(matrix_flow, stored, None) == {"paths": ["a.md"]}  # the flow finds run_id in its flow run
    assert bind(matrix_flow, _stored(run_id="x"), None) == {}  # no paths: the flow says it is required
    assert bind(matrix_flow, stored, {"paths": ["b.md"]}) == {"paths": ["b.md"]}  # given, not stored: as given


def test_other_flows_are_bound_as_prefect_binds_them() -> None:
    import flows.flow.matrix  # noqa: F401  (installs it)

    @flow
    def other(x: int = 1) -> int:
        return x

    assert prefect.flow_engine._flow_parameters(other, _stored(x=2), None) == {"x": 2}
    with pytest.raises(SignatureMismatchError):
        prefect.flow_engine._flow_parameters(other, _stored(x=2, run_id="y"), None)


def test_what_a_flow_was_not_given_is_what_its_flow_run_stores_besides() -> None:
    assert not_given({"paths": ["a"], "run_id": 1}, {"paths": ["a"], "out": ".assay"}) == {"run_id": 1}
    assert not_given(None, {"paths": ["a"]}) == {}
