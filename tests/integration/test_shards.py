"""The README's shards of one nightly matrix on two workers of one work pool, its commands run as printed.

A copy of the project (so that the deployments' working folder, where their runs write ``.assay``, is the
test's) deploys prefect.yaml twice with its own filter and label each, two ``prefect worker start --pool
assay --limit 1`` take the runs, and both shards, started together, run at the same time on different
workers. Everything runs against the session's real server; the checks read the API the UI reads.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.objects import FlowRun

from tests.integration.conftest import REPO
from tests.polling import wait_until

pytestmark = pytest.mark.usefixtures("prefect_backend")

SHARDS = {"nightly-api": ["API high", "API low", "API flaky"], "nightly-cli": ["CLI high", "API high"]}


def readme_block(heading: str) -> list[str]:
    """The lines of the first ```bash block after the paragraph that starts with ``heading``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    start = text.index(heading)
    block = re.search(r"```bash\n(.*?)```", text[start:], re.DOTALL)
    assert block is not None, f"no bash block after {heading!r}"
    return block.group(1).strip().splitlines()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """What a deployment needs of the project root, copied: the flow's code, prefect.yaml, the examples."""
    root = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("flows", "fixtures_core", "deployments", "examples"):
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    return root


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for worker in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(worker.pid, signal.SIGTERM)
    for worker in started:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)


def prefect_env(home: Path, api_url: str, **extra: str) -> dict[str, str]:
    env = dict(os.environ, PREFECT_API_URL=api_url, PREFECT_HOME=str(home), PYTHONPATH=str(REPO), **extra)
    env.pop("ASSAY_PREFECT_PORT", None)
    return env


def test_shards_deployed_as_the_readme_says_run_together_on_two_workers(
    prefect_server: Any, project: Path, tmp_path: Path, workers: list[subprocess.Popen[bytes]]
) -> None:
    deploy_api, deploy_cli, worker_line = readme_block("**Several workers, one nightly matrix.**")
    env = prefect_env(tmp_path / "home", prefect_server.api_url)

    def run(line: str) -> None:
        argv = shlex.split(line)
        assert argv[0] == "prefect", line
        done = subprocess.run([sys.executable, "-m", *argv], cwd=project, env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    with get_client(sync_client=True) as client:
        existing = {pool.name for pool in client.read_work_pools()}
    if "assay" not in existing:  # the README's pool, as its section creates it
        run("prefect work-pool create assay --type process")
    run(deploy_api)
    run(deploy_cli)
    with get_client(sync_client=True) as client:
        deployments = {name: client.read_deployment_by_name(f"assay-matrix/{name}") for name in SHARDS}
        for deployment in deployments.values():  # prefect.yaml's, under the shard's name, filter and label
            assert deployment.global_concurrency_limit is not None and deployment.global_concurrency_limit.limit == 1
            assert [s.schedule.cron for s in deployment.schedules] == ["0 2 * * *"]  # type: ignore[union-attr]
            for schedule in deployment.schedules:  # no 02:00 run on the session's server while the test runs
                client.update_deployment_schedule(deployment.id, schedule.id, active=False)
        assert deployments["nightly-api"].parameters["filter"] == ["API*"]
        assert deployments["nightly-cli"].parameters == {**deployments["nightly-api"].parameters,
                                                         "filter": ["CLI*"], "label": "nightly-cli"}  # fmt: skip
    for _ in range(2):
        workers.append(
            subprocess.Popen(
                [sys.executable, "-m", *shlex.split(worker_line)],
                cwd=tmp_path,
                env={**env, "PREFECT_WORKER_QUERY_SECONDS": "1"},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        )
    with get_client(sync_client=True) as client:
        runs = {name: client.create_flow_run_from_deployment(d.id).id for name, d in deployments.items()}
        wait_until(lambda: all(final(client, i) for i in runs.values()), "both shards' flow runs end", within_s=600)
        ended = {name: client.read_flow_run(i) for name, i in runs.items()}
    api, cli = ended["nightly-api"], ended["nightly-cli"]
    # Each shard on its own worker, at the same time.
    assert api.labels.get("prefect.worker.name") and cli.labels.get("prefect.worker.name")
    assert api.labels["prefect.worker.name"] != cli.labels["prefect.worker.name"], (api.labels, cli.labels)
    assert api.start_time and api.end_time and cli.start_time and cli.end_time
    assert api.start_time < cli.end_time and cli.start_time < api.end_time, "the shards did not run at once"
    # Each ran its own rows (a selected row's baseline row comes along) under its own label, with its verdict.
    for name, run_ in ended.items():
        assert run_.state is not None and run_.state.name == "Failed", run_.state  # the example matrix fails
        assert run_.name.endswith(f" {name}"), run_.name
        run_id = run_.name.removesuffix(f" {name}")
        assert (project / ".assay" / "runs" / run_id / "run.json").is_file()
    documents = {name: (project / ".assay" / "runs" / r.name.removesuffix(f" {name}") / "run.json").read_text()
                 for name, r in ended.items()}  # fmt: skip
    for name, rows in SHARDS.items():
        for row in rows:
            assert f'"name": "{row}"' in documents[name], (name, row)
    assert '"name": "CLI high"' not in documents["nightly-api"]


def final(client: SyncPrefectClient, flow_run_id: Any) -> bool:
    found: FlowRun = client.read_flow_run(flow_run_id)
    return found.state is not None and found.state.is_final()
