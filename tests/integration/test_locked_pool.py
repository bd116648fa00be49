"""The locked work pool (``deployments/process-pool.json``) against custom runs that try to change the process
its worker starts.

One worker on the pool, ``prefect.yaml``'s deployment, a PostgreSQL server, and custom runs that set
``BASH_ENV``, ``PYTHONPATH`` (a ``sitecustomize.py``), ``LD_PRELOAD``, ``PATH``, ``PREFECT_API_URL`` and
``ASSAY_ALLOWED_ROOTS`` by every route the API offers: job variables at creation (the UI's form, the
``env.NAME`` form the worker also reads), a ``PATCH`` of a Scheduled run, and ``POST /flow_runs/`` naming the
deployment (which the server does not check against the pool's variables). Each payload leaves a marker named
after its variable when it acts; none may.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun
from prefect.exceptions import PrefectHTTPStatusError
from prefect.states import Scheduled

from tests.integration.conftest import REPO
from tests.integration.prefect_views import FlowRunView, settled_view
from tests.integration.test_deployments import (
    QUICK,
    RUN_ID,
    Postgres,
    _api,
    custom_run,
    prefect_env,
    stop_group,
    wait_final,
)
from tests.integration.test_deployments import postgres_api as postgres_api  # the module's server, reused

CHANGED = (
    "a custom run may not change its deployment's job variables (on a work pool they set the command, working "
    "folder and environment of the process the worker starts); change the deployment instead"
)
HOSTILE = ("BASH_ENV", "PYTHONPATH", "LD_PRELOAD", "PATH", "PREFECT_API_URL", "ASSAY_ALLOWED_ROOTS")
_PRELOAD = """#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void planted(void) {
    int fd = open("%s", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
}
"""


@dataclass(frozen=True)
class Payloads:
    """Environment variables, each set to a payload that leaves a marker named after it in ``markers`` when it
    acts: at a process's start (``LD_PRELOAD``, ``PYTHONPATH``), when a fixture's ``bash`` starts (``BASH_ENV``,
    ``PATH``), when a flow run calls its API (``PREFECT_API_URL``) or runs ``evil`` (``ASSAY_ALLOWED_ROOTS``);
    and the other job variables of a process pool: a ``command``, and a ``working_dir`` whose ``prefect``
    package shadows Prefect's in ``python -m prefect.engine``."""

    env: dict[str, str]
    job: dict[str, str]
    markers: Path
    evil: Path

    def acted(self) -> list[str]:
        return sorted(p.name for p in self.markers.iterdir())


@contextlib.contextmanager
def planted(folder: Path) -> Iterator[Payloads]:
    """The payloads of ``Payloads``, built in ``folder``; an API trap listens while they are in use."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        if os.environ.get("CI"):
            pytest.fail("a C compiler is missing in CI: .ci/run installs gcc (the LD_PRELOAD payload)")
        pytest.skip("no C compiler for the LD_PRELOAD payload (apt-get install gcc); CI always runs this test")
    markers, site, bin_, evil = folder / "markers", folder / "site", folder / "bin", folder / "evil" / "evil.md"
    shadow = folder / "shadow"
    for made in (markers, site, bin_, evil.parent, shadow / "prefect"):
        made.mkdir(parents=True)
    (site / "sitecustomize.py").write_text(f"open({str(markers / 'PYTHONPATH')!r}, 'w').close()\n")
    (shadow / "prefect" / "__init__.py").write_text(f"open({str(markers / 'working_dir')!r}, 'w').close()\n")
    (folder / "preload.c").write_text(_PRELOAD % (markers / "LD_PRELOAD"))
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "preload.so"), str(folder / "preload.c")], check=True)
    real_bash = shutil.which("bash")
    (bin_ / "bash").write_text(f'#!/bin/sh\ntouch {markers / "PATH"}\nexec {real_bash} "$@"\n')
    (bin_ / "bash").chmod(0o755)
    evil.write_text(f"| Name | Command |\n|---|---|\n| evil | `touch {markers / 'ASSAY_ALLOWED_ROOTS'}` |\n")
    with socket.create_server(("127.0.0.1", 0)) as trap:
        caught = threading.Thread(target=_catch, args=(trap, markers / "PREFECT_API_URL"), daemon=True)
        caught.start()
        try:
            yield Payloads(
                {
                    "BASH_ENV": f"$(touch {markers / 'BASH_ENV'}; echo /dev/null)",
                    "PYTHONPATH": str(site),
                    "LD_PRELOAD": str(folder / "preload.so"),
                    "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}",
                    "PREFECT_API_URL": f"http://127.0.0.1:{trap.getsockname()[1]}/api",
                    "ASSAY_ALLOWED_ROOTS": str(evil.parent),
                },
                {"command": f"touch {markers / 'command'}", "working_dir": str(shadow)},
                markers,
                evil,
            )
        finally:
            trap.shutdown(socket.SHUT_RDWR)  # wakes the accept() of _catch, which then ends
            caught.join(timeout=10)


def _catch(trap: socket.socket, marker: Path) -> None:
    """Leave ``marker`` when anything connects to ``trap`` (until it is closed)."""
    with contextlib.suppress(OSError):
        while True:
            connection, _ = trap.accept()
            marker.touch()
            connection.close()


def test_no_custom_run_changes_the_process_of_the_locked_pool(postgres_api: Postgres, tmp_path: Path) -> None:
    home = tmp_path / "prefect-home"
    env = prefect_env(postgres_api.api_url, home, PREFECT_WORKER_QUERY_SECONDS="1")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "quick.md").write_text(QUICK)  # its row runs `bash -c`: BASH_ENV and PATH act there

    def prefect(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "prefect", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr

    prefect("work-pool", "create", "assay", "--type", "process", "--base-job-template", "deployments/process-pool.json")
    prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all")  # README's, as printed: the pool takes it
    own = {"assay_allowed_roots": str(allowed)}  # then the same deployment, allowing the test's folder
    prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all", "--job-variable", json.dumps(own))
    worker = subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "assay"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        with contextlib.ExitStack() as stack:
            payloads = stack.enter_context(planted(tmp_path / "hostile"))
            stack.enter_context(_api(postgres_api.api_url))
            client = stack.enter_context(get_client(sync_client=True))
            outcome = _try_every_route(client, payloads, allowed)
            deployed = _deploy_a_command(client, tmp_path / "deployed")
    finally:
        stop_group(worker)

    assert payloads.acted() == [], "a hostile payload acted on the worker"
    # Refused by the server, in one line naming the job variable, at creation and at PATCH, in both forms.
    for (route, named), detail in outcome.server.items():
        action = "creating" if route.startswith("create") else "updating"
        assert detail == (
            f"Error {action} flow run: Validation failed. Failure reason: Additional properties are not allowed "
            f"('{named}' was unexpected)"
        ), route
    assert len(outcome.server) == 2 * (2 * len(HOSTILE) + 2)  # created and patched: env, env.NAME, command, working_dir
    # Accepted by the server, refused by assay in one line before anything ran.
    for name, (view, expected) in outcome.refused.items():
        state = view.flow_run.state
        assert state is not None and state.name == "Failed", (name, state)
        assert (state.message or "").startswith(expected), (name, state.message)
        assert "\n" not in (state.message or "")
        if expected.startswith("refused: job_variables."):
            assert (state.message or "").endswith(f": {CHANGED}"), state.message
        assert RUN_ID.fullmatch(view.flow_run.name), view.flow_run.name
        assert "Traceback" not in view.log_text()
    # The run whose PATCHes were refused kept its job variables, and ran as its deployment says.
    kept = outcome.kept
    assert kept.job_variables == {} and kept.state is not None and kept.state.name == "Completed", kept.state
    # A flow run without a deployment, its job variables set to every payload: Prefect's engine fails it.
    adhoc = outcome.adhoc.state
    assert adhoc is not None and adhoc.is_final() and not adhoc.is_completed(), adhoc
    # What the lock is not: with the same access to the API as the custom runs above, a deployment on the pool
    # whose pull step runs any command on the worker.
    assert deployed.exists(), "a deployment's pull step did not run on the worker"


@dataclass(frozen=True)
class Outcome:
    """What became of every try: the server's refusals, the runs it accepted, and the two others."""

    server: dict[tuple[str, str], str]  # (route, the job variable named) -> the server's refusal
    refused: dict[str, tuple[FlowRunView, str]]  # name -> a run the server accepted, the start of its refusal
    kept: FlowRun  # a run whose PATCHes the server refused, made due afterwards
    adhoc: FlowRun  # a flow run in the pool with no deployment


def _try_every_route(client: SyncPrefectClient, payloads: Payloads, allowed: Path) -> Outcome:
    deployment = client.read_deployment_by_name("assay-matrix/nightly")
    # Checked in test_deployments: the runs below may now run side by side.
    client.request("PATCH", "/deployments/{id}", path_params={"id": deployment.id}, json={"concurrency_limit": None})
    good = {"paths": [str(allowed / "quick.md")], "out": str(allowed / "state"), "label": "locked"}
    evil = {**good, "paths": [str(payloads.evil)]}
    later = Scheduled(scheduled_time=datetime.now(UTC) + timedelta(days=365))

    server: dict[tuple[str, str], str] = {}  # (route, the job variable named) -> the server's refusal
    patched = client.create_flow_run_from_deployment(deployment.id, parameters=good, state=later)
    tries = [
        *({"env": {variable: value}} for variable, value in payloads.env.items()),
        *({f"env.{variable}": value} for variable, value in payloads.env.items()),  # the worker reads it as env
        *({name: value} for name, value in payloads.job.items()),
    ]
    for variables in tries:
        [named] = variables
        with pytest.raises(PrefectHTTPStatusError) as refused:
            custom_run(client, deployment.id, parameters=good, job_variables=variables)
        server[(f"create {variables}", named)] = refused.value.response.json()["detail"]
        with pytest.raises(PrefectHTTPStatusError) as refused:
            _patch(client, patched.id, job_variables=variables)
        server[(f"patch {variables}", named)] = refused.value.response.json()["detail"]

    runs: dict[str, tuple[UUID, str]] = {}  # name -> (flow run, the start of the refusal expected)
    for variable, value in payloads.env.items():
        given = {
            "parameters": evil if variable == "ASSAY_ALLOWED_ROOTS" else good,
            "job_variables": {"env": {variable: value}},
        }
        runs[f"POST /flow_runs/ {variable}"] = (
            _post_flow_run(client, deployment.id, **given),
            f"refused: job_variables.env.{variable} ",
        )
    runs["POST /flow_runs/ command, working_dir"] = (
        _post_flow_run(client, deployment.id, parameters=good, job_variables=payloads.job),
        "refused: job_variables.",  # the first of the two the server's JSON gives back
    )
    widened = {"assay_allowed_roots": str(payloads.evil.parent)}
    created = custom_run(client, deployment.id, parameters=evil, job_variables=widened).id
    runs["create assay_allowed_roots"] = (created, "refused: job_variables.assay_allowed_roots ")
    moved = client.create_flow_run_from_deployment(deployment.id, parameters=good, state=later).id
    _patch(client, moved, job_variables=widened)
    runs["patch assay_allowed_roots"] = (moved, "refused: job_variables.assay_allowed_roots ")
    renamed = client.create_flow_run_from_deployment(deployment.id, parameters=good, state=later).id
    _patch(
        client, renamed, parameters=evil, name="renamed", tags=["patched"], flow_version="x", infrastructure_pid="1",
        empirical_policy={"retries": 0, "retry_delay": 5},
    )  # fmt: skip
    runs["patch everything else"] = (renamed, "refused: paths[0] ")
    adhoc = _post_flow_run(client, None, parameters=evil, job_variables={"env": payloads.env})
    for due in (patched.id, moved, renamed):
        client.set_flow_run_state(due, Scheduled(), force=True)

    for run in [*(run for run, _ in runs.values()), patched.id, adhoc]:
        wait_final(client, run)
    return Outcome(
        server,
        {name: (settled_view(client, run, tasks=0), expected) for name, (run, expected) in runs.items()},
        client.read_flow_run(patched.id),
        client.read_flow_run(adhoc),
    )


def _deploy_a_command(client: SyncPrefectClient, marker: Path) -> Path:
    """A deployment on the locked pool, made through the API, whose pull step touches ``marker``; one run of it."""
    step = {"prefect.deployments.steps.run_shell_script": {"script": f"touch {marker}"}}
    deployment_id = client.create_deployment(
        flow_id=client.read_flow_by_name("assay-matrix").id, name="anyone", work_pool_name="assay",
        entrypoint="flows/flow/matrix.py:matrix_flow", pull_steps=[step],
    )  # fmt: skip
    wait_final(client, client.create_flow_run_from_deployment(deployment_id).id)
    return marker


def _patch(client: SyncPrefectClient, flow_run_id: UUID, **fields: Any) -> None:
    client.request("PATCH", "/flow_runs/{id}", path_params={"id": flow_run_id}, json=fields)


def _post_flow_run(client: SyncPrefectClient, deployment_id: UUID | None, **fields: Any) -> UUID:
    """A flow run in the pool's default queue made with ``POST /flow_runs/``, due now."""
    flow_id = client.read_flow_by_name("assay-matrix").id
    body = {
        "flow_id": str(flow_id),
        "deployment_id": str(deployment_id) if deployment_id else None,
        "work_pool_name": "assay",
        "state": {"type": "SCHEDULED"},
        **fields,
    }
    response = client.request("POST", "/flow_runs/", json=body)
    return UUID(response.json()["id"])


@pytest.mark.parametrize("env", [None, {}], ids=["the-locked-template", "a-template-with-env"])
def test_prefects_worker_merges_a_runs_env_only_into_a_template_env(env: dict[str, str] | None) -> None:
    """Prefect's own worker code (no server needed): the job configuration the process worker builds from the
    locked template and a run's job variables, and from the same template with an ``env`` added."""
    import asyncio

    from prefect.workers.process import ProcessJobConfiguration

    template = json.loads((REPO / "deployments" / "process-pool.json").read_text())
    if env is not None:
        template["job_configuration"]["env"] = env
    variables = {"env": {"BASH_ENV": "/tmp/x"}, "env.LD_PRELOAD": "/tmp/x.so", "command": "id", "working_dir": "/"}
    job = asyncio.run(ProcessJobConfiguration.from_template_and_values(template, variables))
    assert (job.command, job.working_dir) == (None, None)  # fixed in the template: never a run's
    assert job.env == ({} if env is None else {"BASH_ENV": "/tmp/x", "LD_PRELOAD": "/tmp/x.so"})
