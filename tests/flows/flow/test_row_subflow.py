"""A row's subflow run as created: under the matrix's flow run, named after the row, tagged like the
run, the row's own budget as its timeout, no secret in its parameters; tried again at once when
SQLite refuses a creation (HTTP 503), never after Prefect's 2 s back-off; a row that would wait for
its own waits for every creation left, unless the run was stopped."""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import uuid
from typing import Any

import httpx
import pytest
from prefect.client.schemas.objects import FlowRun, TaskRun

from fixtures_core.spec import Expectation, RowSpec
from flows.flow import row_subflow
from tests.polling import until

SECRET = "sk-" + "proj0123456789abcdefghijklmnop"
ROW = RowSpec(
    file="suite.md", line=12, name="API high", argv=("agent", "--key", SECRET), expect=Expectation(),
    properties={"token": SECRET}, env={"OPENAI_API_KEY": SECRET}, timeout_s=7.5, repeat=3,
)  # fmt: skip
PARENT = uuid.uuid4()


class Server:
    """What ``create`` asks of Prefect's client, answered as Prefect's server would, refusing the first
    ``refusals`` task-run creations as SQLite does while another write commits."""

    def __init__(self, refusals: int = 0) -> None:
        self.refusals = refusals
        self.task_runs: list[dict[str, Any]] = []
        self.flow_runs: list[dict[str, Any]] = []

    def create_task_run(self, task: Any, flow_run_id: uuid.UUID, dynamic_key: str, **given: Any) -> TaskRun:
        if self.refusals:
            self.refusals -= 1
            row_subflow._refuse(httpx.Response(503, request=httpx.Request("POST", "http://api/task_runs/")))
        self.task_runs.append({"flow_run_id": flow_run_id, "dynamic_key": dynamic_key, "task": task, **given})
        return TaskRun(id=uuid.uuid4(), flow_run_id=flow_run_id, task_key=task.task_key, dynamic_key=dynamic_key)

    def request(self, method: str, path: str, json: dict[str, Any]) -> httpx.Response:
        assert (method, path) == ("POST", "/flow_runs/")
        self.flow_runs.append(json)
        created = FlowRun(id=uuid.uuid4(), **{k: v for k, v in json.items() if k in FlowRun.model_fields})
        return httpx.Response(201, json=created.model_dump(mode="json"))


FLOW_ID = uuid.uuid4()


def test_a_row_subflow_run_is_created_under_the_matrix_named_tagged_with_the_rows_own_budget() -> None:
    server = Server()
    made = row_subflow.create(server, FLOW_ID, PARENT, ROW, "20261202T000000Z-abc123", ["assay", "nightly"])  # type: ignore[arg-type]
    [standing] = server.task_runs
    assert standing["flow_run_id"] == PARENT and standing["name"] == "API high"
    assert standing["dynamic_key"] == ROW.id, "keyed by the row: creating it again finds the same task run"
    [created] = server.flow_runs
    assert made.flow.timeout_seconds == 7.5, "the row's own budget"
    assert made.flow.retries == 0 and made.flow.name == "assay-row" and created["flow_id"] == str(FLOW_ID)
    assert created["empirical_policy"]["retries"] == 0 and created["state"]["type"] == "PENDING"
    assert created["name"] == "API high" and created["tags"] == ["assay", "nightly"]
    assert created["labels"] == {"assay.owner": f"{socket.gethostname()}:{os.getpid()}"}, "a killed run's rows are gone"
    assert created["parent_task_run_id"] == str(made.task_run_id) == str(made.flow_run.parent_task_run_id)
    assert created["parameters"] == {
        "row": "API high", "file": "suite.md", "line": 12, "repeat": 3, "timeout_seconds": 7.5,
        "run_id": "20261202T000000Z-abc123",
    }  # fmt: skip


def test_its_parameters_never_hold_the_rows_command_environment_or_properties() -> None:
    assert SECRET not in repr(row_subflow.describe(ROW, "run"))


def test_a_creation_sqlite_refused_is_tried_again_within_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr(row_subflow.time, "sleep", pauses.append)
    server = Server(refusals=3)
    row_subflow.create(server, FLOW_ID, PARENT, ROW, "run", [])  # type: ignore[arg-type]
    assert len(server.task_runs) == 1 and len(pauses) == 3
    assert max(pauses) < 0.2, pauses  # 20 ms, 40 ms, 80 ms (jittered by +-50%), not Prefect's 2 s, 4 s, 8 s


def test_a_refusal_that_lasts_past_a_minute_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(0, 10_000, 7))  # each look at the clock is 7 s later
    monkeypatch.setattr(row_subflow.time, "monotonic", lambda: float(next(clock)))
    monkeypatch.setattr(row_subflow.time, "sleep", lambda _: None)
    with pytest.raises(row_subflow._Refused, match="POST /task_runs/: HTTP 503"):
        row_subflow.create(Server(refusals=1000), FLOW_ID, PARENT, ROW, "run", [])  # type: ignore[arg-type]


def test_other_answers_pass_the_response_hook_untouched() -> None:
    for status in (200, 201, 404, 500):
        row_subflow._refuse(httpx.Response(status, request=httpx.Request("GET", "http://api/x")))


def test_settings_with_changes_only_the_values_given() -> None:
    from prefect.settings import get_current_settings

    before = get_current_settings()
    with row_subflow.settings_with(flows={"heartbeat_frequency": None}, client={"max_retries": 0})():
        inside = get_current_settings()
        assert inside.flows.heartbeat_frequency is None and inside.client.max_retries == 0
        assert (
            inside.api.url == before.api.url
            and inside.client.csrf_support_enabled == before.client.csrf_support_enabled
        )
    assert get_current_settings().client.max_retries == before.client.max_retries


class Creations:
    """``RowSubflows``' creator, held row by row: the creation of row ``i`` waits for ``release(i)``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, rows: int) -> None:
        self.rows = [dataclasses.replace(ROW, line=i, name=f"row {i}") for i in range(rows)]
        self.gates = [threading.Event() for _ in range(rows)]
        self.entered = [threading.Event() for _ in range(rows)]
        self.shown: list[str | None] = []

        class Client:
            def __enter__(self) -> Client:
                return self

            def __exit__(self, *exc: object) -> None:
                return None

            def create_flow(self, flow: object) -> uuid.UUID:
                return FLOW_ID

        def create(client: object, flow_id: uuid.UUID, parent: uuid.UUID, row: RowSpec, *rest: object) -> str:
            self.entered[row.line].set()
            assert self.gates[row.line].wait(30), f"{row.name} was never released"
            return f"subflow of {row.name}"

        monkeypatch.setattr(row_subflow, "creating_client", Client)
        monkeypatch.setattr(row_subflow, "create", create)
        monkeypatch.setattr(row_subflow.RowSubflows, "FIRST", 2)

    def release(self, *rows: int) -> None:
        for i in rows:
            self.gates[i].set()

    def taking(self, subflows: row_subflow.RowSubflows, i: int) -> tuple[threading.Thread, list[object]]:
        taken: list[object] = []
        thread = threading.Thread(target=lambda: taken.append(subflows.take(self.rows[i])), daemon=True)
        thread.start()
        return thread, taken


def test_a_row_that_would_wait_for_its_subflow_run_waits_for_every_creation_left(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # While samples run, the server refuses and slows creations: rows of short samples, each waiting
    # for its own, ran one by one. Waiting for all of them lets them be made on a quiet server.
    c = Creations(monkeypatch, rows=5)
    c.release(0, 1)
    subflows = row_subflow.RowSubflows(PARENT, c.rows, "run", [], on_wait=lambda _, text: c.shown.append(text))
    assert subflows.take(c.rows[0]) == "subflow of row 0", "the first FIRST exist when the rows start"
    thread, taken = c.taking(subflows, 2)
    c.release(2)
    assert c.entered[3].wait(10), "row 2's subflow run is made, row 3's is being made"
    # Shown only by a row still waiting: row 2's subflow run exists, and row 2 waits on for rows 3 and 4.
    assert until(lambda: "creating the rows' subflow runs in Prefect: 3 of 5" in c.shown), c.shown
    assert not taken and thread.is_alive(), "row 2 waits on for rows 3 and 4"
    c.release(3, 4)
    thread.join(timeout=10)
    assert taken == ["subflow of row 2"]
    assert any(shown and " of 5" in shown for shown in c.shown) and c.shown[-1] is None, c.shown


def test_once_the_run_is_stopped_a_row_waits_for_its_own_subflow_run_only(monkeypatch: pytest.MonkeyPatch) -> None:
    c = Creations(monkeypatch, rows=5)
    c.release(0, 1)
    subflows = row_subflow.RowSubflows(PARENT, c.rows, "run", [], stopped=lambda: True)
    thread, taken = c.taking(subflows, 2)
    c.release(2)
    thread.join(timeout=10)
    assert taken == ["subflow of row 2"], "an interrupted run's rows do not wait for every creation"
    c.release(3, 4)
