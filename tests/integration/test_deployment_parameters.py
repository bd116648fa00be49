"""Deployment runs with parameters the flow must refuse, through the two ways a team runs them.

A schedule served by ``deployments/nightly.py`` (Prefect's runner starts each run
in a process of its own) and a process worker on a work pool (``python -m
prefect.engine``) get custom runs, and a ``PATCH`` of a scheduled run, whose
parameters hold a key that is not a parameter, C1 controls or a bidi override.
The server accepts them all (its schema does not exclude other keys, and a
custom run may skip the schema). Each run must end Failed with one line naming
the parameter, renamed after its run id, having written nothing: never a crash
with a traceback under a random name. Everything is read through the API.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import WorkPoolCreate
from prefect.exceptions import PrefectHTTPStatusError
from prefect.states import Scheduled

from flows.flow.parameters import MatrixParameters
from tests.integration.conftest import REPO
from tests.integration.prefect_views import settled_view
from tests.integration.test_deployments import (
    NIGHTLY,
    QUICK,
    RUN_ID,
    _api,
    custom_run,
    prefect_env,
    stop_group,
    wait_final,
)
from tests.polling import wait_until

KNOWN = ", ".join(MatrixParameters.model_fields)
UNKNOWN = f"run_id: not a parameter of assay-matrix (known: {KNOWN})"
# (parameters of a custom run, whether the server checks them against the schema, the one line the run ends with)
CUSTOM_RUNS = [
    ({"run_id": "../../elsewhere"}, True, f"invalid flow parameters: {UNKNOWN}"),
    (
        {"label": "nightly\u0085eu", "tags": ["\u009b2J"]},
        False,
        "invalid flow parameters: label: a control character (U+0085) is not allowed here (got 'nightly\\x85eu'); "
        "tags.0: a control character (U+009B) is not allowed here (got '\\x9b2J')",
    ),
    (
        {"tags": ["team\u202egpj.md"]},
        False,
        "invalid flow parameters: tags.0: an invisible format character (U+202E RIGHT-TO-LEFT OVERRIDE) is not "
        "allowed here (got 'team\\u202egpj.md')",
    ),
    (
        {"label": "a\u2066b\u2069"},
        False,
        "invalid flow parameters: label: an invisible format character (U+2066 LEFT-TO-RIGHT ISOLATE) is not "
        "allowed here (got 'a\\u2066b\\u2069')",
    ),
]
# A scheduled run's parameters replaced by a PATCH (the server checks nothing there): no paths, and run_id.
PATCHED = {"run_id": "x"}
PATCHED_LINE = f"invalid flow parameters: paths: required; {UNKNOWN}"


@pytest.fixture
def fixture_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "quick.md").write_text(QUICK)
    return folder


@pytest.fixture
def served(prefect_server: Any, fixture_folder: Path, tmp_path: Path) -> Iterator[UUID]:
    """``nightly.py`` serving the quick fixture (runs at once, side by side); the deployment's id."""
    name = f"refusals-{uuid.uuid4().hex[:8]}"
    process = subprocess.Popen(
        [sys.executable, str(NIGHTLY), str(fixture_folder / "quick.md"), "--name", name, "--out",
         str(tmp_path / "state"), "--concurrency-limit", "8"],
        cwd=fixture_folder, env=prefect_env(prefect_server.api_url, tmp_path / "serve-home",
                                            PREFECT_RUNNER_POLL_FREQUENCY="1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        with _api(prefect_server.api_url), get_client(sync_client=True) as client:
            found: list[UUID] = []

            def registered() -> bool:
                assert process.poll() is None, process.stderr.read() if process.stderr else ""
                try:
                    found.append(client.read_deployment_by_name(f"assay-matrix/{name}").id)
                except Exception:  # noqa: BLE001 - not registered yet
                    return False
                return True

            wait_until(registered, "nightly.py registered its deployment", within_s=240)
        yield found[0]
    finally:
        stop_group(process)


@pytest.fixture
def pool_deployment(prefect_server: Any, fixture_folder: Path, tmp_path: Path) -> tuple[str, UUID]:
    """A process work pool of its own and a deployment of the flow on it: the pool's name, the deployment's id."""
    pool = f"refusals-{uuid.uuid4().hex[:8]}"
    from flows.flow.matrix import matrix_flow

    with _api(prefect_server.api_url), get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
        deployment_id = client.create_deployment(
            flow_id=client.create_flow_from_name("assay-matrix"), name=pool, work_pool_name=pool,
            entrypoint="flows/flow/matrix.py:matrix_flow", path=str(REPO),
            parameter_openapi_schema=matrix_flow.parameters.model_dump_for_openapi(),
            parameters={"paths": [str(fixture_folder / "quick.md")], "out": str(tmp_path / "state")},
            job_variables={"env": {"ASSAY_ALLOWED_ROOTS": str(tmp_path)}},
        )  # fmt: skip
    return pool, deployment_id


@pytest.fixture
def pooled(prefect_server: Any, pool_deployment: tuple[str, UUID], tmp_path: Path) -> Iterator[UUID]:
    """A process worker on the pool of ``pool_deployment``; the deployment's id."""
    pool, deployment_id = pool_deployment
    worker = subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool], cwd=tmp_path,
        env=prefect_env(prefect_server.api_url, tmp_path / "worker-home", PREFECT_WORKER_QUERY_SECONDS="1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        yield deployment_id
    finally:
        stop_group(worker)


def _patched_run(client: SyncPrefectClient, deployment_id: UUID) -> UUID:
    """A run scheduled for later whose parameters a PATCH replaces, then made due now."""
    later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=1)
    run = client.create_flow_run_from_deployment(deployment_id, state=Scheduled(scheduled_time=later))
    client.request("PATCH", "/flow_runs/{id}", path_params={"id": run.id}, json={"parameters": PATCHED})
    now = datetime.datetime.now(datetime.UTC)
    client.set_flow_run_state(run.id, Scheduled(scheduled_time=now), force=True)
    return run.id


def _check_refusals(api_url: str, deployment_id: UUID, state_dir: Path) -> None:
    with _api(api_url), get_client(sync_client=True) as client:
        runs = [
            (custom_run(client, deployment_id, parameters=parameters, enforce_parameter_schema=enforced).id, line)
            for parameters, enforced, line in CUSTOM_RUNS
        ]
        runs.append((_patched_run(client, deployment_id), PATCHED_LINE))
        for flow_run_id, _line in runs:
            wait_final(client, flow_run_id, timeout=300)
        views = [(settled_view(client, flow_run_id, tasks=0), line) for flow_run_id, line in runs]
    for view, line in views:
        state = view.flow_run.state
        assert state is not None and (state.name, state.message) == ("Failed", line), (state, line)
        assert RUN_ID.fullmatch(view.flow_run.name), f"a refused run is named after its run id: {view.flow_run.name!r}"
        logs = view.log_text()
        assert "Traceback" not in logs and "SignatureMismatchError" not in logs, logs
    assert not (state_dir / "runs").exists(), "a refused run wrote nothing"


def test_a_served_deployments_runs_with_an_unknown_parameter_or_invisible_characters_fail_in_one_line(
    prefect_server: Any, served: UUID, tmp_path: Path
) -> None:
    _check_refusals(prefect_server.api_url, served, tmp_path / "state")


def test_a_workers_runs_with_an_unknown_parameter_or_invisible_characters_fail_in_one_line(
    prefect_server: Any, pooled: UUID, tmp_path: Path
) -> None:
    _check_refusals(prefect_server.api_url, pooled, tmp_path / "state")


def test_the_server_refuses_a_checked_custom_run_with_a_bidi_override_in_one_line_without_echoing_it(
    prefect_server: Any, pool_deployment: tuple[str, UUID]
) -> None:
    """The schema's pattern lists the characters of the Basic Multilingual Plane the flow refuses."""
    with (
        _api(prefect_server.api_url),
        get_client(sync_client=True) as client,
        pytest.raises(PrefectHTTPStatusError) as refused,
    ):
        client.create_flow_run_from_deployment(pool_deployment[1], parameters={"label": "a\u202eb"})
    detail = refused.value.response.json()["detail"]
    field = "Error creating flow run: Validation failed for field 'label'."
    assert detail.startswith(f"{field} Failure reason: 'a\\u202eb'"), detail
    assert "\u202e" not in detail and "\n" not in detail


def test_assay_run_on_prefect_refuses_a_label_or_a_tag_that_would_act_in_one_line(
    prefect_server: Any, fixture_folder: Path, tmp_path: Path
) -> None:
    """The label and the tags become the flow run's name and tags: the same characters are refused, naming
    the options, before anything runs."""
    from tests.integration.conftest import run_cli

    done = run_cli(
        [str(fixture_folder / "quick.md"), "--out", str(tmp_path / "state"), "--label", "a\u202eb", "--tag", "x\u0085"],
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "error: invalid options for a Prefect run: --label: an invisible format character (U+202E RIGHT-TO-LEFT "
        "OVERRIDE) is not allowed here (got 'a\\u202eb'); --tag: a control character (U+0085) is not allowed here "
        "(got 'x\\x85')\n"
    )
    assert not (tmp_path / "state" / "runs").exists()
