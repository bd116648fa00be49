"""Deployments as a team runs them: a worker on a process work pool deployed from
``deployments/prefect.yaml`` with the server on PostgreSQL, ``deployments/nightly.py``
serving a schedule, and custom runs with bad parameters.

Everything is real: PostgreSQL from Debian's package, Prefect's server, ``prefect
deploy``, ``prefect worker start``, the served process. The checks read the API
the UI reads.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun
from prefect.exceptions import PrefectHTTPStatusError

from flows.server.owners import Owner
from tests.integration.conftest import REPO
from tests.integration.prefect_views import settled_view

POSTGRES_SCRIPT = REPO / "deployments" / "postgres_server.py"
NIGHTLY = REPO / "deployments" / "nightly.py"
RUN_ID = re.compile(r"\d{8}T\d{6}\.\d{6}Z-[0-9a-z]+(-[A-Za-z0-9._-]+)?")
QUICK = "| Name | Command | CEL |\n|---|---|---|\n| ok | `echo '{\"ok\": true}'` | `json.ok` |\n"


def postgres_available() -> bool:
    return bool(shutil.which("initdb") or list(Path("/usr/lib/postgresql").glob("*/bin/initdb")))


# The API secret of each server this process started with postgres_server.py (its API authentication is on).
CREDENTIALS: dict[str, str] = {}


def prefect_env(api_url: str, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a Prefect client of ``api_url`` (a worker, ``prefect deploy``, ``assay run``), with
    its credentials when that server requires them."""
    env = dict(os.environ, PREFECT_API_URL=api_url, PREFECT_HOME=str(home), PYTHONPATH=str(REPO), **extra)
    env.pop("ASSAY_PREFECT_PORT", None)
    env.pop("PREFECT_API_AUTH_STRING", None)
    if api_url in CREDENTIALS:
        env["PREFECT_API_AUTH_STRING"] = CREDENTIALS[api_url]
    return env


def stop_group(process: subprocess.Popen[Any]) -> None:
    """SIGTERM the process's whole group, then SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=20)


def wait_final(client: SyncPrefectClient, flow_run_id: UUID, timeout: float = 180.0) -> None:
    """Wait (bounded) until a flow run is in a final state."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = client.read_flow_run(flow_run_id).state
        if state is not None and state.is_final():
            return
        time.sleep(0.5)


@dataclass(frozen=True)
class Postgres:
    """A Prefect server on PostgreSQL: its API and the database URL its home's profile pins; its folder
    (``--dir``), the API secret its clients pass, and what ``start`` said on stderr."""

    api_url: str
    database_url: str
    root: Path = Path()
    auth_string: str = dataclasses.field(default="", repr=False)
    said: str = ""

    @property
    def home(self) -> Path:
        return self.root / "prefect-home"


@pytest.fixture(scope="module")
def postgres_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    """A Prefect server on PostgreSQL, started by ``deployments/postgres_server.py`` and stopped after."""
    if not postgres_available():
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI: .ci/run installs the postgresql package")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); CI always runs this test")
    # Not under pytest's folder: as root, PostgreSQL runs as the postgres user, who must reach it.
    root = Path(tempfile.mkdtemp(prefix="assay-pg-"))
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    from flows.server.local import free_port

    port = str(free_port())
    try:
        done = subprocess.run(
            [sys.executable, str(POSTGRES_SCRIPT), "start", "--dir", str(root), "--port", port],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        api_url = done.stdout.strip().removeprefix("PREFECT_API_URL=")
        assert api_url == f"http://127.0.0.1:{port}/api"
        from flows.server.credentials import read_secret
        from flows.server.local import pinned_database

        pinned = pinned_database(root.resolve() / "prefect-home")  # a restart another way stays on PostgreSQL
        assert pinned is not None and pinned.startswith("postgresql+asyncpg://postgres@127.0.0.1:"), pinned
        secret = read_secret(root.resolve() / "prefect-home")  # API authentication on: every client passes it
        assert secret is not None
        CREDENTIALS[api_url] = secret
        yield Postgres(api_url, pinned, root.resolve(), secret, done.stderr)
    finally:
        CREDENTIALS.pop(f"http://127.0.0.1:{port}/api", None)
        subprocess.run([sys.executable, str(POSTGRES_SCRIPT), "stop", "--dir", str(root)], env=env, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


def test_a_worker_runs_the_prefect_yaml_deployment_on_postgres(postgres_api: Postgres, tmp_path: Path) -> None:
    """The README's setup: a locked pool, prefect.yaml's deployment allowing one state folder outside the project.
    Custom runs try every field of the UI's custom-run form; none gets a command outside the allowed folders run.
    Then a run killed together with its worker is marked Crashed by the next run, whoever starts it."""
    home = tmp_path / "prefect-home"
    env = prefect_env(postgres_api.api_url, home, PREFECT_WORKER_QUERY_SECONDS="1")
    state_dir = tmp_path / "state"

    def prefect(*args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "prefect", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr

    prefect("work-pool", "create", "assay", "--type", "process", "--base-job-template", "deployments/process-pool.json")
    allowed = json.dumps({"assay_allowed_roots": str(state_dir)})
    prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all", "--job-variable", allowed)
    worker = subprocess.Popen(
        [sys.executable, "-m", "prefect", "worker", "start", "--pool", "assay"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        with contextlib.ExitStack() as stack:
            stack.enter_context(_api(postgres_api.api_url))
            client = stack.enter_context(get_client(sync_client=True))
            deployment = client.read_deployment_by_name("assay-matrix/nightly")
            assert deployment.global_concurrency_limit is not None
            assert deployment.global_concurrency_limit.limit == 1  # nightly runs never overlap
            assert set(deployment.tags) == {"assay", "nightly"}
            [schedule] = deployment.schedules
            assert (schedule.schedule.cron, schedule.schedule.timezone) == ("0 2 * * *", "UTC")  # type: ignore[union-attr]
            # Checked: the custom runs below may now run side by side (seconds instead of a minute, one by one).
            client.request(
                "PATCH", "/deployments/{id}", path_params={"id": deployment.id}, json={"concurrency_limit": None}
            )

            # Custom runs with bad parameters are refused with one line; nothing runs.
            good = {"paths": ["examples/matrix.md"], "out": str(state_dir), "label": "pg"}
            with pytest.raises(PrefectHTTPStatusError) as refused:
                client.create_flow_run_from_deployment(deployment.id, parameters={**good, "repeat": "2"})
            detail = refused.value.response.json()["detail"]
            assert "Validation failed for field 'repeat'" in detail and "\n" not in detail
            # The locked pool takes no job variable but assay_allowed_roots: the server says so (test_locked_pool).
            for variables in ({"command": "touch /tmp/escaped"}, {"working_dir": "/"}):
                with pytest.raises(PrefectHTTPStatusError) as refused:
                    client.create_flow_run_from_deployment(deployment.id, parameters=good, job_variables=variables)
                assert "Additional properties are not allowed" in refused.value.response.text, variables

            # The state folder is allowed by the deployment's definition; nothing else outside the project is,
            # whatever else a custom run sets: every other field of the UI's custom-run form, all at once.
            evil, marker = hostile_fixture(tmp_path)
            hostile = [
                {**good, "paths": [os.path.relpath(evil, REPO)]},
                {**good, "paths": [str(evil)]},
                {**good, "out": str(tmp_path / "elsewhere" / "state")},
                {**good, "baseline": "../../../../etc/passwd"},
            ]
            refusals = [client.create_flow_run_from_deployment(deployment.id, parameters=p) for p in hostile]
            refusals.append(
                custom_run(
                    client,
                    deployment.id,
                    parameters=hostile[1],
                    enforce_parameter_schema=False,
                    name="custom",
                    tags=["custom"],
                    work_queue_name="elsewhere",
                    retries=1,
                    job_variables=json.loads(allowed),  # the deployment's own, as the form shows them
                    message="from the form",
                )  # fmt: skip
            )
            flow_run = client.create_flow_run_from_deployment(deployment.id, parameters=good)
            for run in [*refusals, flow_run]:
                wait_final(client, run.id)
            refused_runs = [settled_view(client, run.id, tasks=0) for run in refusals]
            seen = settled_view(client, flow_run.id, tasks=4 + 20 + 1)

            # A run killed with its worker (SIGKILL to the worker's whole group, the run's process included).
            slow, started = slow_fixture(state_dir)
            killed = client.create_flow_run_from_deployment(deployment.id, parameters={**good, "paths": [str(slow)]})
            for _ in range(3000):  # bounded wait for its sample to start (not a timing assertion)
                if started.exists():
                    break
                time.sleep(0.05)
            assert started.exists(), "the slow run never started"
            before = client.read_flow_run(killed.id)
            for _ in range(600):  # bounded wait for the run's own process to record itself
                if before.labels.get("assay.owner"):
                    break
                time.sleep(0.05)
                before = client.read_flow_run(killed.id)
    finally:
        owner = Owner.parse(before.labels.get("assay.owner")) if "before" in locals() else None
        for pid, kill in ((worker.pid, os.killpg), (owner.pid if owner else None, os.kill)):
            with contextlib.suppress(ProcessLookupError, TypeError):
                kill(pid, signal.SIGKILL)  # type: ignore[arg-type]
        worker.wait(timeout=20)

    assert not marker.exists(), "a hostile fixture ran on the worker"
    assert not (tmp_path / "elsewhere" / "state").exists()
    for view, field in zip(refused_runs, ["paths[0]", "paths[0]", "out", "baseline", "paths[0]"], strict=True):
        refusal = view.flow_run.state
        assert refusal is not None and refusal.name == "Failed"
        assert (refusal.message or "").startswith(f"refused: {field} "), refusal.message
        assert "outside this deployment's working folder" in (refusal.message or "")
        assert RUN_ID.fullmatch(view.flow_run.name), view.flow_run.name  # a search by run id finds it
        assert "Traceback" not in view.log_text() and "unexpected exception" not in view.log_text()

    state = seen.flow_run.state
    assert state is not None and state.name == "Failed", state
    run_id = seen.flow_run.name.removesuffix(" pg")
    assert (
        state.message
        == f"assay verdict FAIL · exit 1 (run {run_id}): 3 rows failed: 'CLI high', 'API low', 'API flaky'"
    )
    assert set(seen.flow_run.tags) >= {"assay", "nightly", "pg", "examples/matrix.md"}
    assert seen.state("API high")[0] == "Completed" and seen.state("CLI high")[0] == "Failed"
    assert seen.state("API low #0")[0] == "Failed" and seen.state("API flaky #0")[0] == "Completed"
    # The worker's run has the default shape: each row a subflow run under it, in the row's state.
    assert set(seen.subflows) == {"API high", "CLI high", "API low", "API flaky"}
    assert {name: run.state.name for name, run in seen.subflows.items() if run.state} == {
        "API high": "Completed", "CLI high": "Failed", "API low": "Failed", "API flaky": "Failed"
    }  # fmt: skip
    logs = seen.log_text()
    assert "row 'API low' (examples/matrix.md:68): FAIL: 0/5 samples passed" in logs
    assert "set_working_directory" in logs  # the worker's own lines reach the same run
    # A FAIL verdict is an answer, not a crash: no engine traceback in the run's logs.
    assert "Traceback" not in logs and "unexpected exception" not in logs, logs
    assert {"assay-report-pg", "assay-rows-pg", "assay-metrics-pg"} <= set(seen.artifacts)
    assert "### FAIL API low (`examples/matrix.md:68`)" in str(seen.artifacts["assay-report-pg"].data)
    assert (state_dir / "runs" / run_id / "run.json").exists()

    # The worker recorded a bare pid; the run's own process recorded host:pid in a label. The next run marks it.
    assert before.state is not None and before.state.type.value == "RUNNING"
    assert before.infrastructure_pid is not None and before.infrastructure_pid.isdigit(), before.infrastructure_pid
    assert owner is not None and owner.host == socket.gethostname(), before.labels
    quick = tmp_path / "quick.md"
    quick.write_text(QUICK)
    done = subprocess.run(
        [sys.executable, "-m", "flows.run", str(quick), "--out", str(tmp_path / "other")], cwd=tmp_path,
        env=prefect_env(postgres_api.api_url, home), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    with _api(postgres_api.api_url), get_client(sync_client=True) as client:
        after = client.read_flow_run(killed.id)
    assert after.state is not None and after.state.type.value == "CRASHED", after.state
    assert (after.state.message or "").startswith(f"its process ({owner}) is gone: killed, or lost; found by flow run")


def custom_run(client: SyncPrefectClient, deployment_id: UUID, **form: Any) -> FlowRun:
    """A flow run as the UI's custom-run form creates it, with every field the form offers."""
    body = {
        "name": form.get("name"),
        "parameters": form.get("parameters", {}),
        "tags": form.get("tags", []),
        "work_queue_name": form.get("work_queue_name"),
        "job_variables": form.get("job_variables", {}),
        "enforce_parameter_schema": form.get("enforce_parameter_schema", True),
        "empirical_policy": {"retries": form.get("retries", 0), "retry_delay": 0},
        "state": {"type": "SCHEDULED", "message": form.get("message", ""), "state_details": {"scheduled_time": None}},
    }
    response = client.request("POST", "/deployments/{id}/create_flow_run", path_params={"id": deployment_id}, json=body)
    return FlowRun.model_validate(response.json())


def slow_fixture(folder: Path) -> tuple[Path, Path]:
    """A fixture (in an allowed folder) whose one row leaves a marker as it starts, then sleeps."""
    started = folder / "slow-started"
    slow = folder / "slow.md"
    folder.mkdir(parents=True, exist_ok=True)
    slow.write_text(f"| Name | Command |\n|---|---|\n| slow | `sh -c 'touch {started}; sleep 120'` |\n")
    return slow, started


def hostile_fixture(tmp_path: Path) -> tuple[Path, Path]:
    """A fixture outside the project whose one row leaves a marker when it runs."""
    marker = tmp_path / "elsewhere" / "ran"
    evil = tmp_path / "elsewhere" / "evil.md"
    evil.parent.mkdir()
    evil.write_text(f"| Name | Command |\n|---|---|\n| evil | `touch {marker}` |\n")
    return evil, marker


@contextlib.contextmanager
def _api(url: str) -> Iterator[None]:
    """This process's Prefect client on ``url``, with its credentials when that server requires them."""
    from prefect.settings import temporary_settings

    updates = {"api.url": url} | ({"api.auth_string": CREDENTIALS[url]} if url in CREDENTIALS else {})
    with temporary_settings(updates=updates):
        yield


def test_nightly_serves_a_schedule_whose_runs_never_overlap(prefect_server: Any, tmp_path: Path) -> None:
    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    env = prefect_env(prefect_server.api_url, tmp_path / "home", PREFECT_RUNNER_POLL_FREQUENCY="1")
    served = subprocess.Popen(
        [sys.executable, str(NIGHTLY), str(fixture), "--name", "nightly-test", "--cron", "30 3 * * 1-5",
         "--timezone", "Europe/Paris", "--out", str(tmp_path / "state"), "--tag", "team-a", "--repeat", "2"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        with _api(prefect_server.api_url), get_client(sync_client=True) as client:
            deployment = None
            for _ in range(240):  # bounded wait for the served deployment to register
                with contextlib.suppress(Exception):
                    deployment = client.read_deployment_by_name("assay-matrix/nightly-test")
                    break
                assert served.poll() is None, served.stderr.read() if served.stderr else ""
                time.sleep(0.25)
            assert deployment is not None
            assert deployment.global_concurrency_limit is not None and deployment.global_concurrency_limit.limit == 1
            assert deployment.tags == ["assay", "nightly", "team-a", "quick.md"]  # as its runs are tagged
            [schedule] = deployment.schedules
            assert (schedule.schedule.cron, schedule.schedule.timezone) == ("30 3 * * 1-5", "Europe/Paris")  # type: ignore[union-attr]
            assert deployment.parameters["repeat"] == 2  # flat: an override names only what it changes

            runs = [client.create_flow_run_from_deployment(deployment.id) for _ in range(2)]
            for run in runs:
                wait_final(client, run.id)
            finished = [client.read_flow_run(run.id) for run in runs]
            rows = [settled_view(client, run.id, tasks=1 + 2 + 1).subflows for run in runs]
    finally:
        stop_group(served)
    # Served runs have the default shape: each row a subflow run, tagged like the run, Completed.
    for subflows in rows:
        assert set(subflows) == {"ok"}
        assert subflows["ok"].state is not None and subflows["ok"].state.name == "Completed"
        assert {"assay", "nightly", "team-a", "quick.md"} <= set(subflows["ok"].tags)
    assert [run.state.name for run in finished if run.state] == ["Completed", "Completed"], [
        (run.state.message if run.state else None) for run in finished
    ]
    first, second = sorted(finished, key=lambda run: run.start_time or 0)
    assert first.end_time is not None and second.start_time is not None
    assert second.start_time >= first.end_time, "two runs of the deployment overlapped"
    assert len(list((tmp_path / "state" / "runs").glob("*/run.json"))) == 2


def test_nightly_refuses_to_take_over_a_work_pool_deployment(prefect_server: Any, tmp_path: Path) -> None:
    from prefect.client.schemas.actions import WorkPoolCreate

    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    pool = f"pool-{os.getpid()}"
    with _api(prefect_server.api_url), get_client(sync_client=True) as client:
        client.create_work_pool(WorkPoolCreate(name=pool, type="process"))
        flow_id = client.create_flow_from_name("assay-matrix")
        client.create_deployment(
            flow_id=flow_id, name="pooled", work_pool_name=pool, entrypoint="flows/flow/matrix.py:matrix_flow"
        )
        done = subprocess.run(
            [sys.executable, str(NIGHTLY), str(fixture), "--name", "pooled"], cwd=tmp_path,
            env=prefect_env(prefect_server.api_url, tmp_path / "home"), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        kept = client.read_deployment_by_name("assay-matrix/pooled")
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: deployment assay-matrix/pooled runs on work pool '{pool}' (prefect deploy); "
        "serving it would take it over: choose another --name\n"
    )
    assert kept.work_pool_name == pool


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--cron", "61 * * * *"], "error: --cron '61 * * * *' --timezone 'UTC': Invalid cron string: \"61 * * * *\""),
        (["--timezone", "Mars/Olympus"], 'Invalid timezone: "Mars/Olympus"'),
        (["--concurrency-limit", "0"], "error: --concurrency-limit must be >= 1, got 0"),
    ],
)
def test_nightly_refuses_bad_options_in_one_line(args: list[str], expected: str, tmp_path: Path) -> None:
    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    done = subprocess.run(
        [sys.executable, str(NIGHTLY), str(fixture), *args], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert expected in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_nightly_says_in_one_line_when_the_server_wants_credentials(postgres_api: Postgres, tmp_path: Path) -> None:
    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    env = prefect_env(postgres_api.api_url, tmp_path / "home")
    env.pop("PREFECT_API_AUTH_STRING")
    done = subprocess.run(
        [sys.executable, str(NIGHTLY), str(fixture)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr == (
        f"error: the Prefect API at {postgres_api.api_url} (PREFECT_API_URL) requires credentials (HTTP 401): set "
        "PREFECT_API_AUTH_STRING to its secret (`python deployments/postgres_server.py start` prints how)\n"
    )


def test_nightly_says_in_one_line_when_the_server_is_unreachable(tmp_path: Path) -> None:
    from flows.server.local import free_port

    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    dead = f"http://127.0.0.1:{free_port()}/api"
    done = subprocess.run(
        [sys.executable, str(NIGHTLY), str(fixture)], cwd=tmp_path,
        env=prefect_env(dead, tmp_path / "home"), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: cannot reach the Prefect API at {dead} (PREFECT_API_URL): ")
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


@pytest.mark.usefixtures("prefect_backend")
@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"repeat": "2"}, "invalid flow parameters: repeat: Input should be a valid integer (got '2')"),
        ({"parallel": 0}, "invalid flow parameters: parallel: Input should be greater than or equal to 1 (got 0)"),
        ({"tags": "x"}, "invalid flow parameters: tags: Input should be a valid list (got 'x')"),
        (
            {"out": "s" * 300, "filter": ["a\x00"], "label": "L" * 100_000, "tags": ["T" * 300_000]},
            (
                "out: a path component is longer than 255 bytes (a file name's limit) (got 'sss",
                "filter.0: a control character (U+0000) is not allowed here (got 'a\\x00')",
                "label: String should have at most 200 characters (got 'LLL",
                "tags.0: String should have at most 200 characters (got 'TTT",
            ),
        ),
    ],
    ids=["text-repeat", "parallel-0", "tags-text", "nul-long-component-100kb-label-300kb-tag"],
)
def test_a_custom_run_with_bad_parameters_fails_in_one_line_and_writes_nothing(
    extra: dict[str, object], expected: str | tuple[str, ...], tmp_path: Path
) -> None:
    """What a flow run does with parameters the server did not check (a deployment without
    schema enforcement): Failed with one line naming each bad field and quoting at most 80
    characters of each value, before anything runs; named after a run id like every run."""
    from prefect.flow_engine import run_flow

    from flows.flow.matrix import matrix_flow

    fixture = tmp_path / "quick.md"
    fixture.write_text(QUICK)
    options = {"paths": [str(fixture)], "out": str(tmp_path / "state"), **extra}
    state = run_flow(matrix_flow, parameters=options, return_type="state")
    assert state.is_failed() and state.message is not None
    assert state.message.startswith("invalid flow parameters: ") and "\n" not in state.message, state.message
    assert all(part in state.message for part in ([expected] if isinstance(expected, str) else expected))
    assert not any(letter * 80 in state.message for letter in "LTs"), "each value quoted is cut to 80 characters"
    assert len(state.message) < 600, "a refusal names the values, never echoes them"
    assert [p.name for p in tmp_path.iterdir()] == ["quick.md"]
    with get_client(sync_client=True) as client:
        flow_run = client.read_flow_run(state.state_details.flow_run_id)  # type: ignore[arg-type]
    assert RUN_ID.fullmatch(flow_run.name), f"a refused run is named after its run id, not {flow_run.name!r}"


@pytest.mark.usefixtures("prefect_backend")
def test_the_allow_list_is_the_deployments_own_never_what_a_custom_run_sets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The allow-list is read from the deployment's job variables and the pool's fixed env, never from the flow
    run's environment; a flow run whose job variables differ from its deployment's is refused, on a pool that
    passes them on (Prefect's default template) as on the locked one."""
    from prefect.client.schemas.actions import WorkPoolCreate

    from flows.flow.confinement import Confinement
    from flows.flow.job_variables import JobVariablesChanged

    allowed, fixed = tmp_path / "allowed", tmp_path / "fixed"
    locked = json.loads((REPO / "deployments" / "process-pool.json").read_text())
    locked["job_configuration"]["env"] = {"ASSAY_ALLOWED_ROOTS": str(fixed)}
    suffix = uuid.uuid4().hex[:8]
    pools = {
        f"open-{suffix}": (None, {"env": {"ASSAY_ALLOWED_ROOTS": str(allowed)}}),
        f"locked-{suffix}": (locked, {"assay_allowed_roots": str(allowed)}),
    }
    with get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name("assay-matrix")
        runs, deployments = {}, {}
        for pool, (template, variables) in pools.items():
            client.create_work_pool(WorkPoolCreate(name=pool, type="process", base_job_template=template or {}))
            deployments[pool] = client.create_deployment(
                flow_id=flow_id, name=pool, work_pool_name=pool, entrypoint="flows/flow/matrix.py:matrix_flow",
                job_variables=variables,
            )  # fmt: skip
            runs[pool] = client.create_flow_run_from_deployment(deployments[pool], job_variables=variables)
        open_pool = deployments[f"open-{suffix}"]
        changed = [
            client.create_flow_run_from_deployment(open_pool, job_variables=variables)
            for variables in ({"env": {"ASSAY_ALLOWED_ROOTS": "/"}}, {"working_dir": "/"}, {"env": {"PATH": "/x\n"}})
        ]
        monkeypatch.setenv("ASSAY_ALLOWED_ROOTS", "/")  # what the open pool's worker puts in the run's environment
        monkeypatch.chdir(tmp_path)
        confined = {pool: Confinement.of_flow_run(client, run).roots for pool, run in runs.items()}
        refusals = []
        for run in changed:
            with pytest.raises(JobVariablesChanged) as refused:
                Confinement.of_flow_run(client, run)
            refusals.append(str(refused.value))
    here, allowed, fixed = tmp_path.resolve(), allowed.resolve(), fixed.resolve()
    assert confined == {f"open-{suffix}": (here, allowed), f"locked-{suffix}": (here, allowed, fixed)}
    fields = ["env.ASSAY_ALLOWED_ROOTS '/'", "working_dir '/'", "env.PATH '/x\\n'"]
    for refusal, field in zip(refusals, fields, strict=True):
        assert refusal.startswith(f"refused: job_variables.{field}: a custom run may not change its deployment's job "
                                  "variables"), refusal  # fmt: skip
        assert "\n" not in refusal


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ("PREFECT_API_DATABASE_CONNECTION_URL", "PREFECT_API_DATABASE_CONNECTION_URL in the environment"),
        ("PREFECT_SERVER_DATABASE_CONNECTION_URL", "PREFECT_SERVER_DATABASE_CONNECTION_URL in the environment"),
        ("prefect.toml", "a setting beside the profile (PREFECT_PROFILE, or .env, prefect.toml or pyproject.toml in"),
    ],
)
def test_a_postgres_home_refuses_a_sqlite_url_from_any_source(
    postgres_api: Postgres, source: str, named: str, tmp_path: Path
) -> None:
    """A home pinned to a running PostgreSQL, with a SQLite URL beside its profile: one line, nothing started."""
    from deployments.postgres_server import pin_database
    from flows.server.local import find, stop
    from tests.integration.conftest import run_cli

    home = tmp_path / "team" / "prefect-home"
    pin_database(home, postgres_api.database_url)
    sqlite = f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    env = {"PREFECT_HOME": str(home)}
    if source == "prefect.toml":
        (home / "prefect.toml").write_text(f'[server.database]\nconnection_url = "{sqlite}"\n')
    else:
        env[source] = sqlite
    try:
        done = run_cli(["server", "start"], cwd=tmp_path, env=env)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith(f"error: the Prefect home {home} keeps its database in PostgreSQL ("), done.stderr
        assert f"but {named}" in done.stderr and "names another one (sqlite+aiosqlite:///…" in done.stderr
        assert "/fresh.db): remove that setting, or use another PREFECT_HOME" in done.stderr
        assert len(done.stderr.splitlines()) == 1
        assert find(home) is None and not (tmp_path / "fresh.db").exists() and not (home / "prefect.db").exists()
    finally:
        stop(home)


def listening_addresses(port: int) -> set[str]:
    """The IPv4 addresses a TCP socket listens on at ``port`` on this machine (``/proc/net/tcp``)."""
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local_address, state = line.split()[1], line.split()[3]
        address, _, hexport = local_address.partition(":")
        if state == "0A" and int(hexport, 16) == port:  # 0A: LISTEN
            found.add(".".join(str(b) for b in reversed(bytes.fromhex(address))))
    return found


def test_the_team_server_is_safe_by_default_and_outlives_the_requests_that_ended_it(postgres_api: Postgres) -> None:
    """postgres_server.py's server: loopback only, Prefect's API authentication on, its output in a log. A NUL
    in a flow run's parameters and runs creating one limit at once (each ended it before) leave it up; killed,
    its supervisor brings it back, and says so; ``--host`` makes it listen beyond loopback."""
    import stat

    from prefect.settings import temporary_settings

    from flows.server import local, supervisor
    from flows.server.credentials import secret_path
    from tests.integration.server_faults import create_one_limit_at_once, patch_parameters_with_nul
    from tests.polling import wait_until

    home, root = postgres_api.home, postgres_api.root
    secret = secret_path(home)
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600, "the secret is its owner's only"
    assert stat.S_IMODE((home / "profiles.toml").stat().st_mode) == 0o600, "the profile pins the secret too"
    pinned = subprocess.run(  # so Prefect's own `prefect server start` of that home requires it as well
        [sys.executable, "-c", "from prefect.settings import get_current_settings as s; "
         "print(s().server.api.auth_string.get_secret_value())"],
        env={**prefect_env(postgres_api.api_url, home), "PREFECT_HOME": str(home)}, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert pinned.stdout.strip() == postgres_api.auth_string, pinned.stderr
    server = local.find(home)
    assert server is not None and listening_addresses(server.port) == {"127.0.0.1"}
    # How a worker on another machine gets the credentials, as start printed it.
    assert "it listens on 127.0.0.1 only: for workers on other machines, stop it and start it again with " \
        "--host 0.0.0.0" in postgres_api.said  # fmt: skip
    assert f'  export PREFECT_API_AUTH_STRING="$(ssh {socket.getfqdn()} cat {secret})"' in postgres_api.said

    # Prefect's own client: 401 without the secret, served with it (as every other test here is).
    with temporary_settings(updates={"api.url": postgres_api.api_url}), get_client(sync_client=True) as stranger:
        with pytest.raises(PrefectHTTPStatusError) as refused:
            stranger.read_work_pools()
        assert refused.value.response.status_code == 401

    def survives(running: Any) -> None:
        with _api(postgres_api.api_url):
            assert patch_parameters_with_nul() == 503  # PostgreSQL refuses the NUL; Prefect says retry later
            assert create_one_limit_at_once(6) == [201, 409, 409, 409, 409, 409]
            assert patch_parameters_with_nul() == 503
        assert local.find(home) == running and local.serves_home(running), "the server did not survive"

    survives(server)
    log = supervisor.log_of(home).path
    said = log.read_text()
    assert "unsupported Unicode escape sequence" in said and "uq_concurrency_limit_v2__name" in said
    assert " died: " not in said
    shown = subprocess.run(
        [sys.executable, str(POSTGRES_SCRIPT), "status", "--dir", str(root)],
        env=prefect_env(postgres_api.api_url, home), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert f", log {log} (supervisor pid {supervisor.supervisor_pid(home)}), API authentication on (the secret: " \
        f"{secret}), answering\n" in shown.stdout, shown.stdout + shown.stderr  # fmt: skip

    os.kill(server.pid, signal.SIGKILL)  # as the OOM killer would; then the same requests right after the restart
    wait_until(lambda: (s := local.find(home)) is not None and s.pid != server.pid and local.serves_home(s),
               "the supervisor restarted the server", within_s=240)  # fmt: skip
    restarted = local.find(home)
    assert restarted is not None
    survives(restarted)
    assert f"the Prefect server (pid {server.pid}) died: killed by SIGKILL (signal 9) after " in log.read_text()

    # Beyond loopback only when told, and never by surprise under a running server.
    def start(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(POSTGRES_SCRIPT), "start", "--dir", str(root), "--port", str(server.port), *extra],
            env=prefect_env(postgres_api.api_url, home), capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    refused_host = start("--host", "0.0.0.0")
    assert refused_host.returncode == 2
    assert refused_host.stderr == (
        f"error: the server of {home} already listens on 127.0.0.1:{server.port}: "
        f"`python deployments/postgres_server.py stop --dir {root}` first, to have it listen on 0.0.0.0\n"
    )
    local.stop(home)  # the Prefect server only: PostgreSQL stays up
    try:
        wide = start("--host", "0.0.0.0")
        assert wide.returncode == 0, wide.stderr
        assert wide.stdout == f"PREFECT_API_URL=http://{socket.getfqdn()}:{server.port}/api\n"
        assert listening_addresses(server.port) == {"0.0.0.0"}
        assert f"  export PREFECT_API_URL=http://{socket.getfqdn()}:{server.port}/api\n" in wide.stderr
    finally:
        local.stop(home)
        again = start()  # loopback again, for the tests after this one
        assert again.returncode == 0 and listening_addresses(server.port) == {"127.0.0.1"}, again.stderr
