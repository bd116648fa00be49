"""The matrix's flow run ends after every row's subflow run: the run's end in the UI is the end of all of it.

A subflow run's final state reaches the server after the samples' events
that came before it; on an idle test server it arrives in time anyway.
Here each row's subflow writes its final state a second after the row has
ended, so only the matrix waiting for its subflow runs keeps the order.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import get_client

from fixtures_core.runs.options import RunOptions
from flows.flow.naming import flow_run_name
from flows.flow.row_subflow import RowSubflow
from tests.integration.prefect_views import flow_run_named, settled_view

pytestmark = pytest.mark.usefixtures("prefect_backend")

TWO_ROWS = """| Name | Command | Repeat |
|---|---|---:|
| one | `true` | 2 |
| two | `true` | 2 |
"""


def test_the_matrix_flow_run_ends_after_its_slowest_row_subflow_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flows.flow.matrix import run_with_prefect

    body = RowSubflow.body

    def late(self: RowSubflow) -> Any:
        state = body(self)  # the row has ended and handed over its state
        time.sleep(1.0)  # a busy server's delay, made certain: the subflow's final state is written later
        return state

    monkeypatch.setattr(RowSubflow, "body", late)
    fixture = tmp_path / "two.md"
    fixture.write_text(TWO_ROWS)
    run_id = f"late-{uuid.uuid4().hex[:8]}"
    run = run_with_prefect(RunOptions(paths=(str(fixture),), out=str(tmp_path / "state")), run_id)
    assert run.verdict.exit_code == 0

    with get_client(sync_client=True) as client:
        seen = settled_view(client, flow_run_named(client, flow_run_name(run_id, None)).id, tasks=2 + 4 + 1)
    assert set(seen.subflows) == {"one", "two"}
    ended = seen.flow_run.end_time
    assert ended is not None
    for name, row in seen.subflows.items():
        assert row.end_time is not None and row.end_time <= ended, f"{name} ended after the matrix's flow run, or never"
