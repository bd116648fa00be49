"""What a user sees in the Prefect UI after ``assay run``, read through the Prefect client.

The command line runs as a user runs it (a subprocess, no PREFECT_API_URL:
the local server of the session's Prefect home); the checks read the same
API the UI reads: states and their messages, names, tags, logs, artifacts, events.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.filters import FlowRunFilter

from tests.integration.conftest import REPO, WIDE, run_cli
from tests.integration.prefect_views import events_named, settled_view, view

pytestmark = pytest.mark.usefixtures("prefect_backend")

TIMEOUTS = """---
timeout: 20s
---

| Name | Command | Repeat | Timeout | CEL |
|---|---|---:|---|---|
| fine | `echo '{"ok": true}'` | 2 | | `json.ok` |
| missing-key | `echo '{"ok": true}'` | 1 | | `json.zz == 1` |
| slow | `sleep 30` | 1 | 1s | |
"""


WEBHOOK_PAYLOAD = (
    '{"verdict": "{{ event.resource["assay.verdict"] }}", "rows": "{{ event.payload.failing_rows | join(", ") }}"}'
)


@pytest.fixture
def client() -> Iterator[SyncPrefectClient]:
    with get_client(sync_client=True) as found:
        yield found


def flow_run_id(stdout: str) -> UUID:
    """The flow run the command line linked to (``Prefect flow run: URL``)."""
    match = re.search(r"^Prefect flow run: http://\S+/runs/flow-run/([0-9a-f-]{36})$", stdout, re.MULTILINE)
    assert match, stdout[-500:]
    return UUID(match.group(1))


def test_a_failing_run_looks_failed_with_its_reasons(tmp_path: Path, client: SyncPrefectClient) -> None:
    done = run_cli(
        [
            str(REPO / "examples" / "matrix.md"),
            "--out",
            str(tmp_path / "state"),
            "--label",
            "nightly eu",
            "--tag",
            "team-a",
            "--json",
            str(tmp_path / "run.json"),
        ],  # fmt: skip
        cwd=tmp_path,
        env=WIDE,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""
    run_id = json.loads((tmp_path / "run.json").read_text())["run_id"]
    seen = settled_view(client, flow_run_id(done.stdout), tasks=4 + 20 + 1)

    # The flow run: named after the run, tagged, Failed with the verdict and the failing rows.
    assert seen.flow_run.name == f"{run_id} nightly eu"
    assert set(seen.flow_run.tags) == {"assay", "nightly eu", "team-a", "examples/matrix.md"}
    assert seen.flow_run.state is not None and seen.flow_run.state.is_failed()
    assert seen.flow_run.state.message == (
        f"assay verdict FAIL · exit 1 (run {run_id}): 3 rows failed: 'CLI high', 'API low', 'API flaky'"
    )

    # Rows: PASS Completed; every FAIL row Failed with its reason (the metric regression is
    # only known after every row finished: its task gets its final state afterwards).
    assert seen.state("API high") == ("Completed", "PASS: 5/5 samples passed")
    assert seen.state("CLI high") == (
        "Failed", "FAIL: 5/5 samples passed; metric duration_ms: +41.5% vs 'API high' exceeds the allowed 25%"
    )  # fmt: skip
    name, message = seen.state("API low")
    assert name == "Failed" and message.startswith("FAIL: 0/5 samples passed; CEL json.execution.state")
    assert message.endswith("false on samples 0, 1, 2, 3, 4")
    assert seen.state("API flaky")[0] == "Failed" and seen.state("API flaky")[1].startswith("FAIL (flaky): 4/5")

    # Samples: failing ones Failed with the false CEL; passing ones stay Completed (never rolled back).
    for index in range(5):
        name, message = seen.state(f"API low #{index}")
        assert name == "Failed" and message.startswith(
            "FAIL: CEL assertion false (clause 3 of 3 is false: json.controls.reasoningEffort.observed.value"
            ' == "low"; json.controls.reasoningEffort.observed.value was "medium")'
        )  # the clause, and what its side was
        assert message.endswith("(exit code 0)")
    assert [seen.state(f"API flaky #{i}")[0] for i in range(5)] == ["Completed"] * 3 + ["Failed", "Completed"]
    assert {seen.state(f"CLI high #{i}")[0] for i in range(5)} == {"Completed"}

    # Logs: one line per row, one per failing sample, the verdict with the run document.
    logs = seen.log_text()
    for row in ("API high", "CLI high", "API low", "API flaky"):
        assert f"row '{row}' (examples/matrix.md:" in logs
    assert "sample 3 of 'API flaky' FAIL: CEL assertion false" in logs
    document = (tmp_path / "state" / "runs" / run_id / "run.json").resolve()
    assert f"assay verdict FAIL · exit 1 (run {run_id}): 3 rows failed" in logs and f"run document {document}" in logs
    # ... and nothing of the task engine's: no line per passing sample, no "NoneType: None" tracebacks.
    assert "NoneType: None" not in logs
    assert not [log.message for log in seen.logs if log.task_run_id is not None and "Finished in state" in log.message]
    assert not [log.message for log in seen.logs if "Task run failed with" in log.message]

    # Artifacts keyed by the suite (the label): the report with reasons, rows and metrics tables.
    assert set(seen.artifacts) == {"assay-report-nightly-eu", "assay-rows-nightly-eu", "assay-metrics-nightly-eu"}
    report = str(seen.artifacts["assay-report-nightly-eu"].data)
    for expected in ("### FAIL API low (`examples/matrix.md:68`)", "- failing samples: 0, 1, 2, 3, 4",
                     "| API flaky | **FAIL (flaky)** | 4/5 |", "- suite: pass@k 0.75 (rows 3/4)",
                     "exceeds the allowed 25%", f"Run document: `{document}`"):  # fmt: skip
        assert expected in report, expected
    # ... on the flow run itself (the UI's "Flow run" column), not on a task run.
    assert {(a.flow_run_id, a.task_run_id) for a in seen.artifacts.values()} == {(seen.flow_run.id, None)}
    rows = {line["row"]: line for line in json.loads(str(seen.artifacts["assay-rows-nightly-eu"].data))}
    assert rows["API high"]["reason"] == ""
    assert rows["CLI high"]["reason"] == "metric duration_ms: +41.5% vs 'API high' exceeds the allowed 25%"
    assert rows["API low"]["reason"].startswith("CEL json.execution.state")
    metrics = json.loads(str(seen.artifacts["assay-metrics-nightly-eu"].data))
    regressed = next(m for m in metrics if m["row"] == "CLI high" and m["metric"] == "duration_ms")
    assert regressed["baseline"] == "API high" and regressed["delta_percent"] == pytest.approx(41.5, abs=0.1)

    # The event automations can act on: the suite is the resource, the verdict a label.
    [event] = events_named(client, "assay.run.finished", "assay.suite.nightly-eu")
    assert event.resource["assay.verdict"] == "FAIL" and event.resource["assay.run-id"] == run_id
    assert event.payload["failing_rows"] == ["CLI high", "API low", "API flaky"]
    assert any(r.id == f"prefect.flow-run.{seen.flow_run.id}" for r in event.related)
    # ... tagged like its flow run, so an automation matching a tag sees an ad-hoc run's events too.
    assert {"prefect.tag.team-a", "prefect.tag.nightly eu"} <= {r.id for r in event.related if r.role == "tag"}

    # Finalize waits on every row: the UI draws it after them (its wait_for inputs are the row tasks).
    finalize = seen.task("finalize")
    waited = {str(i.id) for i in finalize.task_inputs.get("wait_for", [])}
    assert waited == {str(seen.task(row).id) for row in ("API high", "CLI high", "API low", "API flaky")}


def test_errors_and_budgets_are_failed_and_timed_out(tmp_path: Path, client: SyncPrefectClient) -> None:
    fixture = tmp_path / "budgets.md"
    fixture.write_text(TIMEOUTS)
    done = run_cli([str(fixture), "--out", str(tmp_path / "state")], cwd=tmp_path, env=WIDE)
    assert done.returncode == 2, done.stdout + done.stderr
    seen = settled_view(client, flow_run_id(done.stdout), tasks=3 + 4 + 1)

    assert seen.flow_run.state is not None and seen.flow_run.state.is_failed()
    message = seen.flow_run.state.message or ""
    assert message.startswith("assay verdict ERR · exit 2") and message.endswith(
        "2 rows errored: 'missing-key', 'slow'"
    )
    assert seen.state("fine") == ("Completed", "PASS: 2/2 samples passed")
    assert seen.state("missing-key") == ("Failed", "ERR: 0/1 samples passed; sample 0: no such key: zz")
    assert seen.state("missing-key #0")[0] == "Failed" and "no such key: zz" in seen.state("missing-key #0")[1]
    assert seen.state("slow")[0] == "TimedOut" and "1s budget ran out" in seen.state("slow")[1]
    assert seen.state("slow #0")[0] == "TimedOut"
    # Each row's subflow run ends in its row's state: the one past its budget TimedOut with assay's reason
    # (its Prefect timeout is the same 1 s), the others as their rows, run to the end.
    ended = {name: run.state for name, run in seen.subflows.items() if run.state is not None}
    assert {name: state.name for name, state in ended.items()} == {
        "fine": "Completed", "missing-key": "Failed", "slow": "TimedOut"
    }  # fmt: skip
    assert "1s budget ran out" in (ended["slow"].message or "")
    assert seen.subflows["slow"].parameters["timeout_seconds"] == 1.0
    # No label: the artifacts are keyed by the fixture file.
    assert "assay-report-budgets" in seen.artifacts


def test_an_automation_on_the_finished_event_notifies_on_fail(tmp_path: Path, client: SyncPrefectClient) -> None:
    """The README's automation, with a webhook (to a local listener) instead of Slack."""
    from prefect.automations import Automation
    from prefect.blocks.webhook import Webhook
    from prefect.events.actions import CallWebhook
    from prefect.events.schemas.automations import EventTrigger

    label = f"notify-{uuid.uuid4().hex[:8]}"
    received: list[bytes] = []
    with webhook_listener(received) as url:
        block_id = Webhook(method="POST", url=url).save(label)
        automation = Automation(
            name=f"assay: {label} failed",
            trigger=EventTrigger(
                expect={"assay.run.finished"}, match={"assay.verdict": ["FAIL", "ERR"], "prefect.resource.name": label},
                posture="Reactive", threshold=1,  # type: ignore[arg-type]
            ),
            actions=[CallWebhook(block_document_id=block_id, payload=WEBHOOK_PAYLOAD)],
        ).create()  # fmt: skip
        try:
            fixture = tmp_path / "bad.md"
            fixture.write_text("| Name | Command |\n|---|---|\n| good | `true` |\n| bad | `false` |\n")
            done = run_cli([str(fixture), "--out", str(tmp_path / "state"), "--label", label], cwd=tmp_path)
            assert done.returncode == 1, done.stderr
            for _ in range(240):  # bounded wait for the server's triggers and actions services
                if received:
                    break
                time.sleep(0.25)
        finally:
            automation.delete()
    assert received, "the automation never called the webhook"
    assert json.loads(received[0]) == {"verdict": "FAIL", "rows": "bad"}


@contextlib.contextmanager
def webhook_listener(received: list[bytes]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            received.append(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's name
            pass

    listener = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=listener.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.server_address[1]}/hook"
    finally:
        listener.shutdown()
        listener.server_close()


def test_tags_belong_to_the_prefect_engine(tmp_path: Path) -> None:
    fixture = tmp_path / "quick.md"
    fixture.write_text("| Name | Command |\n|---|---|\n| ok | `true` |\n")
    done = run_cli([str(fixture), "--engine", "local", "--tag", "team-a"], cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "error: --tag tags the Prefect flow run: --engine local has none\n"


def test_a_killed_run_is_marked_crashed_by_the_next_run_which_resumes_it(
    tmp_path: Path, client: SyncPrefectClient
) -> None:
    """SIGKILL leaves its flow run Running (no heartbeats); the next assay run on this host marks it
    Crashed, saying whose process is gone, and a --resume says that it resumes it."""
    import os
    import subprocess
    import sys

    from prefect.client.schemas.filters import FlowRunFilterName

    started, again = tmp_path / "started", tmp_path / "again"
    fixture = tmp_path / "resumable.md"
    fixture.write_text(
        "| Name | Command |\n|---|---|\n| quick | `true` |\n"
        f"| slow | `test -e {again} \\|\\| {{ touch {started}; sleep 60; }}` |\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PREFECT_API_URL", None)
    state = tmp_path / "state"
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--out", str(state)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(3000):  # bounded wait for the slow sample to start (not a timing assertion)
            if started.exists() or process.poll() is not None:
                break
            time.sleep(0.02)
        assert started.exists()
        [run_id] = [folder.name for folder in (state / "runs").iterdir()]
        [killed] = client.read_flow_runs(flow_run_filter=FlowRunFilter(name=FlowRunFilterName(any_=[run_id])))
        # Until the API shows the quick row ended and the slow one running, its subflow run and its sample's
        # task run (a wait for the server to record them, bounded).
        for _ in range(600):
            before = view(client, killed.id)
            quick_ended = "quick" in before.subflows and _state_type(before.subflows["quick"]) == "COMPLETED"
            if quick_ended and "slow #0" in before.tasks and _state_type(before.tasks["slow #0"]) == "RUNNING":
                break
            time.sleep(0.1)
    finally:
        process.kill()
        process.wait()
    assert killed.state is not None and killed.state.type.value == "RUNNING"
    assert killed.infrastructure_pid is not None and killed.infrastructure_pid.endswith(f":{process.pid}")
    assert _state_type(before.subflows["slow"]) == "RUNNING" and _state_type(before.tasks["slow #0"]) == "RUNNING"

    again.touch()
    done = run_cli(["--resume", run_id, "--out", str(state)], cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    message = (
        f"its process ({killed.infrastructure_pid}) is gone: killed, or lost; found by flow run {run_id!r}, "
        "which resumes it"
    )
    seen = view(client, killed.id)
    assert seen.flow_run.state is not None and seen.flow_run.state.type.value == "CRASHED"
    assert seen.flow_run.state.message == message
    # ... and with it what the killed run left unfinished: the slow row's subflow run, its sample's task
    # run, the task run that stands for the row; the quick row had ended as it was.
    for name, part in (
        ("slow", seen.subflows["slow"]),
        ("slow #0", seen.tasks["slow #0"]),
        ("slow", seen.tasks["slow"]),
    ):
        assert part.state is not None and (part.state.type.value, part.state.message) == ("CRASHED", message), name
    assert _state_type(seen.subflows["quick"]) == "COMPLETED"
    assert not [name for name, task in seen.tasks.items() if _state_type(task) in ("PENDING", "RUNNING")]


def _state_type(run: Any) -> str | None:
    """The state type of a flow or task run (``RUNNING``, ``CRASHED``, ...), None before it has one."""
    return run.state.type.value if run.state is not None else None


SECRET = "sk-" + "proj0123456789abcdefghijklmnop"  # an OpenAI-shaped key, built so no scanner flags this file
BUDGETS = f"""---
timeout: 2m
env:
  OPENAI_API_KEY: {SECRET}
---

| Name | Command | Timeout | CEL |
|---|---|---|---|
| seven | `echo '{{"ok": true}}'` | 7s | `json.ok` |
| thirteen | `echo '{{"ok": false}}'` | 13s | `json.ok` |
| inherited | `sh -c 'test -n "$OPENAI_API_KEY"'` | | |
"""


def test_every_row_is_a_subflow_run_of_the_matrix_with_its_own_budget_and_no_secret(
    tmp_path: Path, client: SyncPrefectClient
) -> None:
    """The design card's shape by default: each row a subflow run nested under the matrix's flow run,
    named after the row, tagged like the run, with the run id, the row's own budget as its timeout, no
    retries and no secret in its parameters; finalize waits on every row; --rows-as-tasks gives the
    same answers with rows as task runs."""
    fixture = tmp_path / "budgets.md"
    fixture.write_text(BUDGETS)
    state = tmp_path / "state"
    done = run_cli([str(fixture), "--out", str(state), "--tag", "team-b", "--json", str(tmp_path / "s.json")],
                   cwd=tmp_path, env=WIDE)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr == ""
    run_id = json.loads((tmp_path / "s.json").read_text())["run_id"]
    seen = settled_view(client, flow_run_id(done.stdout), tasks=3 + 1 + 3)

    assert set(seen.subflows) == {"seven", "thirteen", "inherited"}
    standing_for = {name: task.id for name, task in seen.tasks.items() if task.flow_run_id == seen.flow_run.id}
    assert set(standing_for) == {"seven", "thirteen", "inherited", "finalize"}
    for name, budget in (("seven", 7.0), ("thirteen", 13.0), ("inherited", 120.0)):
        row = seen.subflows[name]
        assert row.parent_task_run_id == standing_for[name], "each row's flow run hangs under the matrix"
        assert row.parameters["timeout_seconds"] == budget and row.parameters["run_id"] == run_id
        assert row.parameters["row"] == name and row.parameters["file"] == "budgets.md"
        assert row.empirical_policy.retries == 0
        assert set(row.tags) == set(seen.flow_run.tags) == {"assay", "team-b", "budgets.md"}
        assert seen.task(f"{name} #0").flow_run_id == row.id, "its sample is its task run"
    assert [seen.subflows[n].state.name for n in ("seven", "thirteen", "inherited")] == [  # type: ignore[union-attr]
        "Completed", "Failed", "Completed"
    ]  # fmt: skip
    failed = seen.subflows["thirteen"].state
    assert failed is not None and (failed.message or "").startswith("FAIL: 0/1 samples passed")
    assert seen.state("thirteen") == (failed.name, failed.message), "the stand-in task run mirrors its flow run"
    waited = {i.id for i in seen.task("finalize").task_inputs.get("wait_for", [])}
    assert waited == {standing_for[name] for name in ("seven", "thirteen", "inherited")}
    # The rows' subflow runs end while the artifacts are published, but before the matrix's flow run ends.
    ended = seen.flow_run.end_time
    assert ended is not None and all(r.end_time is not None and r.end_time <= ended for r in seen.subflows.values())
    # Created before any row starts: no row waits for its subflow run while others' samples keep the server busy.
    first_sample = min(seen.task(f"{name} #0").start_time for name in ("seven", "thirteen", "inherited"))  # type: ignore[type-var]
    assert all(row.created is not None and row.created < first_sample for row in seen.subflows.values())

    # No flow run keeps the fixture's secret in its parameters (the subflows' describe their row).
    for flow_run in [seen.flow_run, *seen.subflows.values()]:
        assert SECRET not in json.dumps(flow_run.parameters), flow_run.name

    tasks = run_cli([str(fixture), "--out", str(state), "--rows-as-tasks", "--json", str(tmp_path / "t.json")],
                    cwd=tmp_path, env=WIDE)  # fmt: skip
    assert tasks.returncode == done.returncode, tasks.stdout + tasks.stderr
    as_tasks = settled_view(client, flow_run_id(tasks.stdout), tasks=3 + 3 + 1)
    assert as_tasks.subflows == {}
    assert {n: as_tasks.state(n)[0] for n in ("seven", "thirteen", "inherited")} == {
        "seven": "Completed", "thirteen": "Failed", "inherited": "Completed"
    }  # fmt: skip
    statuses = [
        {row["name"]: row["status"] for row in json.loads((tmp_path / f).read_text())["fixtures"][0]["rows"]}
        for f in ("s.json", "t.json")
    ]
    assert statuses[0] == statuses[1] == {"seven": "PASS", "thirteen": "FAIL", "inherited": "PASS"}
