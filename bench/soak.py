"""A bad night: a served schedule and two workers on a PostgreSQL server, with the server, a worker, the
serving process and flow-run processes killed at random (seeded) moments.

    python bench/soak.py [--runs 20] [--every 60] [--fault-every 40] [--seed 7] [--out bench/results/soak.json]
    python bench/soak.py --give-up     # ~25 min: how long Prefect's own worker and serve outlive an outage

The team setup of the README, for real: ``deployments/postgres_server.py start`` (``--server direct``
runs Prefect's server as a child of this script instead, on the same PostgreSQL setup, when its
background start is the thing that fails), a pool from ``deployments/process-pool.json``,
``deployments/prefect.yaml``'s deployment on it every ``--every`` seconds, worked by two
``prefect worker start``, and ``deployments/nightly.py`` serving the same fixture every minute.
Flow runs send heartbeats every 30 s, so the automation that marks silent runs Crashed waits 180 s (its floor).
A worker or ``nightly.py`` that exits on its own (``nightly.py`` refuses to start while its server is down) is
started again, as a supervisor would (counted).

Faults, one every ``--fault-every`` seconds on average (the first four: one of each kind), until at
least ``--runs`` scheduled runs have come due:

* ``server``: SIGKILL Prefect's server; started again 5 to 40 s later;
* ``worker``: SIGKILL a worker, alone or with its flow-run processes; started again 3 to 15 s later;
* ``serve``: SIGKILL ``nightly.py``, alone or with its flow-run processes; started again 3 to 15 s later;
* ``flow-run``: SIGKILL one flow-run process of a worker or of ``nightly.py``.

Then the faults stop, the schedules run on for a while, and are paused. Printed, as counts: the
scheduled runs that came due, by final state; those with a verdict and those with a one-line reason
instead; any run not final (Running, Pending, Scheduled and due); how long after the faults stopped
the last run that came due before then ended (against the period and the 90 s window); the run
documents (``run.json``) that parse, are corrupt, or are missing for a flow run that states a
verdict; the deployments' concurrency slots still held.

``--give-up`` measures instead how long Prefect's own processes, with Prefect's default settings, outlive
a server that went away for good: ``prefect worker start`` and a plain ``Flow.serve`` (what
``nightly.py`` called before it learnt to wait), each started on the team server, which is then killed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

HEARTBEAT_S = 30
SECRET_VARIABLE = "PREFECT_API_AUTH_STRING"
WINDOW_S = 180  # flows.server.silent_runs.window_for(30): three heartbeats, at least 3 minutes
SERVE_PERIOD_S = 60
FIXTURE = (
    "| Name | Command | CEL |\n|---|---|---|\n"
    "| slow | `sleep 2; echo '{\"ok\": true}'` | `json.ok` |\n"
    "| quick | `echo '{\"ok\": true}'` | `json.ok` |\n"
)
VERDICT = re.compile(r"^assay verdict (PASS|FAIL|ERR)\b.*\(run (\S+)\)")
KINDS = ("server", "worker", "serve", "flow-run")
POOL_DEPLOYMENT = "assay-matrix/nightly"
SERVE_DEPLOYMENT = "assay-matrix/soak-serve"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="scheduled runs to come due under faults (default 20)")
    parser.add_argument("--every", type=int, default=60, help="the pool deployment's interval, seconds (default 60)")
    parser.add_argument("--fault-every", type=float, default=40.0, help="mean seconds between faults (default 40)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--server", choices=("script", "direct"), default="script",
        help="start Prefect's server with postgres_server.py (default) or as a child of this script (direct)",
    )  # fmt: skip
    parser.add_argument("--after", type=int, default=120, help="seconds the schedules run on after the faults")
    parser.add_argument("--out", help="JSON file (default bench/results/soak.json, or soak-give-up.json)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (logs, state) and print it")
    parser.add_argument("--give-up", action="store_true", help="measure how long Prefect's worker and serve last")
    return parser.parse_args(argv)


@dataclass
class Fault:
    at: float  # seconds since the soak started
    kind: str
    what: str


@dataclass
class Night:
    """Everything the soak started, and how to start it again."""

    root: Path
    args: argparse.Namespace
    port: int = field(default_factory=c.free_port)
    workers: list[subprocess.Popen[bytes] | None] = field(default_factory=lambda: [None, None])
    serve: subprocess.Popen[bytes] | None = None
    server: subprocess.Popen[bytes] | None = None  # --server direct only
    server_starts_failed: int = 0

    @property
    def team(self) -> Path:
        return self.root / "team"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def env(self, **extra: str) -> dict[str, str]:
        from flows.server.credentials import read_secret

        # postgres_server.py switches Prefect's API authentication on: every client passes the team home's secret.
        secret = read_secret(self.team.resolve() / "prefect-home") if self.args.server == "script" else None
        return c.child_env(
            prefect_home=self.root / "client-home", api_url=self.api_url, PYTHONPATH=str(c.REPO),
            PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(HEARTBEAT_S), PREFECT_WORKER_QUERY_SECONDS="2",
            PREFECT_RUNNER_POLL_FREQUENCY="2", **({SECRET_VARIABLE: secret} if secret else {}), **extra,
        )  # fmt: skip

    def log(self, name: str) -> Any:
        (self.root / "logs").mkdir(exist_ok=True)
        return (self.root / "logs" / f"{name}.log").open("ab")

    # --- the server ---------------------------------------------------------------------

    def start_server(self) -> None:
        """Start Prefect's server (PostgreSQL too, the first time); retried until it answers."""
        for _attempt in range(10):
            if self._start_server_once():
                secret = self.env().get(SECRET_VARIABLE)
                if secret:
                    os.environ[SECRET_VARIABLE] = secret  # this script's own clients (client_of)
                return
            self.server_starts_failed += 1
            time.sleep(5)
        raise RuntimeError(f"the team server did not start in 10 attempts (see {self.root / 'logs'})")

    def _start_server_once(self) -> bool:
        server_env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
        server_env.update(
            c.QUIET_PREFECT, PYTHONPATH=str(c.REPO), PREFECT_SERVER_DEPLOYMENTS_CONCURRENCY_SLOT_WAIT_SECONDS="2"
        )
        if self.args.server == "script":
            with self.log("postgres_server") as log:
                done = subprocess.run(
                    [c.python(), str(c.REPO / "deployments" / "postgres_server.py"), "start", "--dir", str(self.team),
                     "--port", str(self.port)], env=server_env, stdout=log, stderr=log, timeout=600, check=False,
                )  # fmt: skip
            return done.returncode == 0
        sys.path.insert(0, str(c.REPO))
        from deployments.postgres_server import _port_of, pin_database, start_cluster

        cluster = start_cluster(self.team, _port_of(self.team) or c.free_port())
        home = self.team.resolve() / "prefect-home"
        pin_database(home, cluster.url)
        server_env.update(PREFECT_HOME=str(home), PREFECT_SERVER_API_PORT=str(self.port),
                          PREFECT_API_DATABASE_CONNECTION_URL=cluster.url)  # fmt: skip
        with self.log("server") as log:
            self.server = c.spawn(
                [c.python(), "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
                env=server_env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
            )  # fmt: skip
        return _until(lambda: _answers(self.api_url), 300)

    def server_pid(self) -> int | None:
        if self.args.server == "direct":
            return self.server.pid if self.server is not None and self.server.poll() is None else None
        from flows.server.local import find

        found = find(self.team.resolve() / "prefect-home")
        return found.pid if found is not None else None

    def kill_server(self) -> str:
        pid = self.server_pid()
        if pid is None:
            return "no server running"
        if self.args.server == "direct":
            c.kill_group(pid)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _until(lambda: not _answers(self.api_url), 30)
        return f"server pid {pid}"

    def stop_server(self) -> None:
        if self.args.server == "direct":
            if self.server is not None:
                c.kill_group(self.server.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.server.wait(timeout=30)
            from deployments.postgres_server import stop_cluster

            stop_cluster(self.team)
            return
        subprocess.run([c.python(), str(c.REPO / "deployments" / "postgres_server.py"), "stop", "--dir",
                        str(self.team)], env=self.env(), capture_output=True, timeout=300, check=False)  # fmt: skip

    # --- workers and the serving process ----------------------------------------------------

    def start_worker(self, index: int) -> None:
        with self.log(f"worker-{index}") as log:
            self.workers[index] = c.spawn(
                [c.python(), "-m", "prefect", "worker", "start", "--pool", "assay", "--name", f"soak-{index}"],
                cwd=self.root, env=self.env(), stdout=log, stderr=log,
            )  # fmt: skip

    def start_serve(self) -> None:
        with self.log("serve") as log:
            self.serve = c.spawn(
                [c.python(), str(c.REPO / "deployments" / "nightly.py"), str(self.state / "soak.md"), "--name",
                 "soak-serve", "--cron", "* * * * *", "--out", str(self.state), "--label", "soak-serve"],
                cwd=self.root, env=self.env(), stdout=log, stderr=log,
            )  # fmt: skip

    def flow_run_processes(self) -> list[int]:
        parents = [p.pid for p in [*self.workers, self.serve] if p is not None and p.poll() is None]
        return [
            pid
            for parent in parents
            for pid in c.procfs.descendants(parent)
            if _is_flow_run(c.procfs.argv(pid) or []) and c.procfs.alive(pid)
        ]

    def stop_all(self) -> None:
        for process in [self.serve, *self.workers]:
            if process is not None and process.poll() is None:
                c.kill_group(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    c.kill_group(process.pid)
                    process.wait(timeout=20)


def _is_flow_run(argv: list[str]) -> bool:
    joined = " ".join(argv)
    return "prefect.engine" in joined or "spawn_main" in joined


def _answers(api_url: str) -> bool:
    from flows.server.api_watch import probe_health

    return probe_health(api_url) == "up"


def _until(condition: Any, within: float, every: float = 1.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if condition():
                return True
        time.sleep(every)
    return False


@contextlib.contextmanager
def client_of(api_url: str) -> Iterator[Any]:
    from prefect.client.orchestration import get_client
    from prefect.settings import temporary_settings

    secret = os.environ.get(SECRET_VARIABLE)  # the team server's, set by Night.start_server
    updates = {"api.url": api_url, "client.max_retries": 1} | ({"api.auth_string": secret} if secret else {})
    with (
        temporary_settings(updates=updates),
        get_client(sync_client=True) as client,
    ):
        yield client


def deploy(night: Night) -> None:
    """The pool from process-pool.json and prefect.yaml's deployment on it, every ``--every`` seconds."""
    env = night.env()

    def prefect(*args: str) -> None:
        done = subprocess.run([c.python(), "-m", "prefect", *args], cwd=c.REPO, env=env, capture_output=True,
                              text=True, timeout=300, check=False)  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"prefect {args[0]} failed: {(done.stdout + done.stderr)[-600:]}")

    prefect("work-pool", "create", "assay", "--type", "process", "--base-job-template", "deployments/process-pool.json")
    params = {"paths": [str(night.state / "soak.md")], "out": str(night.state), "label": "soak-pool"}
    allowed = {"assay_allowed_roots": str(night.state)}
    prefect("deploy", "--prefect-file", "deployments/prefect.yaml", "--all", "--interval", str(night.args.every),
            "--params", json.dumps(params), "--job-variable", json.dumps(allowed))  # fmt: skip


def deployment_ids(api_url: str) -> dict[str, Any]:
    found = {}
    with client_of(api_url) as client:
        for name in (POOL_DEPLOYMENT, SERVE_DEPLOYMENT):
            with contextlib.suppress(Exception):
                found[name] = client.read_deployment_by_name(name).id
    return found


def scheduled_runs(api_url: str, ids: dict[str, Any], due_before: datetime) -> list[Any]:
    """The flow runs of the two deployments that came due before ``due_before`` (their subflows excluded)."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterDeploymentId,
        FlowRunFilterExpectedStartTime,
    )

    runs: list[Any] = []
    with client_of(api_url) as client:
        while True:
            page = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(
                    deployment_id=FlowRunFilterDeploymentId(any_=list(ids.values())),
                    expected_start_time=FlowRunFilterExpectedStartTime.model_validate({"before_": due_before}),
                ),
                limit=200,
                offset=len(runs),
            )
            runs.extend(page)
            if len(page) < 200:
                return runs


def inject(night: Night, kind: str, rng: random.Random, restarts: list[tuple[float, str, int]]) -> str:
    """One fault of ``kind`` now; what was killed. Restarts are queued in ``restarts`` (due time, kind, index)."""
    now = time.monotonic()
    if kind == "server":
        what = night.kill_server()
        restarts.append((now + rng.uniform(5, 40), "server", 0))
        return what
    if kind == "worker":
        index = rng.randrange(2)
        worker = night.workers[index]
        if worker is None:
            return f"worker {index} already down"
        with_runs = rng.random() < 0.5
        _kill(worker, with_runs)
        night.workers[index] = None
        restarts.append((now + rng.uniform(3, 15), "worker", index))
        return f"worker {index} pid {worker.pid}" + (" with its flow runs" if with_runs else " alone")
    if kind == "serve":
        serve = night.serve
        if serve is None:
            return "nightly.py already down"
        with_runs = rng.random() < 0.5
        _kill(serve, with_runs)
        night.serve = None
        restarts.append((now + rng.uniform(3, 15), "serve", 0))
        return f"nightly.py pid {serve.pid}" + (" with its flow runs" if with_runs else " alone")
    running = night.flow_run_processes()
    if not running:
        return "no flow-run process running"
    pid = rng.choice(sorted(running))
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    return f"flow-run process pid {pid}"


def _kill(process: subprocess.Popen[bytes], with_runs: bool) -> None:
    """SIGKILL a worker or nightly.py: alone (its flow-run processes live on, orphaned), or its whole tree."""
    below = c.procfs.descendants(process.pid) if with_runs else []
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    process.wait(timeout=30)


def tend(night: Night, restarts: list[tuple[float, str, int]], exits: Counter[str]) -> None:
    """What a supervisor (systemd ``Restart=always``) does: a worker or nightly.py that exited on its own (e.g.
    started during an outage) is started again; and what is due to start again is started."""
    queued = {(kind, index) for _, kind, index in restarts}
    for index, worker in enumerate(night.workers):
        if worker is not None and worker.poll() is not None and ("worker", index) not in queued:
            exits["worker"] += 1
            night.workers[index] = None
            restarts.append((time.monotonic() + 3, "worker", index))
    if night.serve is not None and night.serve.poll() is not None and ("serve", 0) not in queued:
        exits["serve"] += 1
        night.serve = None
        restarts.append((time.monotonic() + 3, "serve", 0))
    restart_due(night, restarts)


def restart_due(night: Night, restarts: list[tuple[float, str, int]]) -> None:
    """Start again what is due. A worker or nightly.py waits for the server: started during an outage, either
    exits at once (nightly.py checks its server first, by design; a worker, PrefectHQ/prefect#22638)."""
    for item in sorted(restarts):
        due, kind, index = item
        if due > time.monotonic():
            continue
        restarts.remove(item)
        if kind != "server" and not _answers(night.api_url):
            restarts.append((time.monotonic() + 5, kind, index))
            continue
        if kind == "server":
            night.start_server()
        elif kind == "worker":
            night.start_worker(index)
        else:
            night.start_serve()


def soak(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    night = Night(root, args)
    night.state.mkdir(parents=True)
    (night.state / "soak.md").write_text(FIXTURE)
    rng = random.Random(args.seed)
    began = time.monotonic()
    night.start_server()
    deploy(night)
    for index in range(2):
        night.start_worker(index)
    night.start_serve()
    _until(lambda: len(deployment_ids(night.api_url)) == 2, 300)
    ids = deployment_ids(night.api_url)
    faults: list[Fault] = []
    restarts: list[tuple[float, str, int]] = []
    kinds = list(KINDS)
    rng.shuffle(kinds)
    next_fault = time.monotonic() + rng.uniform(10, args.fault_every)
    due = 0
    exits: Counter[str] = Counter()

    def tending(condition: Any) -> Any:
        def check() -> bool:
            tend(night, restarts, exits)
            return bool(condition())

        return check

    try:
        while due < args.runs or restarts:
            tend(night, restarts, exits)
            if due < args.runs and time.monotonic() >= next_fault:
                kind = kinds.pop() if kinds else rng.choice(KINDS)
                what = inject(night, kind, rng, restarts)
                faults.append(Fault(round(time.monotonic() - began, 1), kind, what))
                print(f"[{faults[-1].at:7.1f} s] {kind}: {what}", flush=True)
                next_fault = time.monotonic() + min(max(rng.expovariate(1 / args.fault_every), 5), 3 * args.fault_every)
            with contextlib.suppress(Exception):
                due = len(scheduled_runs(night.api_url, ids, datetime.now(UTC)))
            time.sleep(1)
        faults_stopped = datetime.now(UTC)
        print(f"faults stopped: {len(faults)} faults, {due} scheduled runs came due", flush=True)
        ended = tending(lambda: all(_final(run) for run in scheduled_runs(night.api_url, ids, faults_stopped)))
        settled = _until(ended, max(SERVE_PERIOD_S, WINDOW_S) * 6, every=2)
        _until(tending(lambda: (datetime.now(UTC) - faults_stopped).total_seconds() > args.after), args.after + 60)
        with client_of(night.api_url) as client:
            for deployment_id in ids.values():
                client.pause_deployment(deployment_id)
        paused = datetime.now(UTC)
        _until(tending(lambda: all(_final(run) for run in scheduled_runs(night.api_url, ids, paused))), 900, every=2)
        verdict = judge(night, ids, faults_stopped, paused)
        verdict["settled_within_bound"] = settled
    finally:
        night.stop_all()
        with contextlib.suppress(Exception):
            night.stop_server()
    verdict["faults"] = [vars(f) for f in faults]
    verdict["fault_counts"] = dict(Counter(f.kind for f in faults))
    verdict["server_starts_failed"] = night.server_starts_failed
    verdict["exited_on_their_own_and_started_again"] = dict(exits)
    verdict["minutes"] = round((time.monotonic() - began) / 60, 1)
    return verdict


def _final(run: Any) -> bool:
    return run.state is not None and run.state.is_final()


def judge(night: Night, ids: dict[str, Any], faults_stopped: datetime, paused: datetime) -> dict[str, Any]:
    """The night's counts (see the module docstring)."""
    runs = scheduled_runs(night.api_url, ids, paused)
    names = {value: key for key, value in ids.items()}
    by_state: Counter[str] = Counter()
    verdicts, reasons, unfinished, bad_reasons = 0, 0, [], []
    stated: dict[str, str] = {}
    last_end = None
    for run in runs:
        state = run.state
        name = state.name if state is not None else "None"
        by_state[f"{names[run.deployment_id]}: {name}"] += 1
        if not _final(run):
            unfinished.append(f"{run.name} {name}")
            continue
        message = (state.message or "").strip()
        found = VERDICT.match(message)
        if found:
            verdicts += 1
            stated[found.group(2)] = found.group(1)
        elif message and "\n" not in message:
            reasons += 1
        else:
            bad_reasons.append(f"{run.name} {name}: {message[:200]!r}")
        if run.expected_start_time is not None and run.expected_start_time <= faults_stopped and run.end_time:
            last_end = max(last_end or run.end_time, run.end_time)
    documents = {"parsed": 0, "corrupt": [], "missing_for_a_stated_verdict": [], "answer_differs": [],
                 "runs_without_run_json": 0}  # fmt: skip
    answers = {}
    for folder in sorted((night.state / "runs").glob("*")):
        path = folder / "run.json"
        if not path.exists():
            documents["runs_without_run_json"] += 1
            continue
        try:
            answers[folder.name] = json.loads(path.read_text())["status"]
            documents["parsed"] += 1
        except (ValueError, KeyError) as exc:
            documents["corrupt"].append(f"{path}: {exc}")
    for run_id, answer in stated.items():
        if run_id not in answers:
            documents["missing_for_a_stated_verdict"].append(run_id)
        elif answers[run_id] != answer:
            documents["answer_differs"].append(f"{run_id}: flow run {answer}, run.json {answers[run_id]}")
    slots = {}
    with client_of(night.api_url) as client:
        for name, deployment_id in ids.items():
            limit = client.read_deployment(deployment_id).global_concurrency_limit
            slots[name] = limit.active_slots if limit is not None else None
    settle = (last_end - faults_stopped).total_seconds() if last_end is not None else None
    return {
        "scheduled_runs": len(runs),
        "by_state": dict(sorted(by_state.items())),
        "with_verdict": verdicts,
        "with_one_line_reason": reasons,
        "without_verdict_or_reason": bad_reasons,
        "not_final": unfinished,
        "last_end_after_faults_stopped_s": round(max(settle, 0.0), 1) if settle is not None else None,
        "periods_s": {"pool": night.args.every, "serve": SERVE_PERIOD_S, "silent_run_window": WINDOW_S},
        "run_documents": documents,
        "slots_held_at_end": slots,
    }


def report(document: dict[str, Any]) -> None:
    if "seconds_until_exit" in document:
        print(f"\nwith Prefect's defaults, after the server was killed: {document['seconds_until_exit']} (seconds)")
        return
    print(f"\nsoak: {document['minutes']} min, seed {document['seed']}, faults {document['fault_counts']}"
          f" (server starts that failed and were retried: {document['server_starts_failed']}; exited on their own"
          f" and started again: {document['exited_on_their_own_and_started_again']})")  # fmt: skip
    documents = document["run_documents"]
    rows = [
        ["scheduled runs that came due", document["scheduled_runs"]],
        *[[f"  {state}", count] for state, count in document["by_state"].items()],
        ["with a verdict", document["with_verdict"]],
        ["with a one-line reason instead", document["with_one_line_reason"]],
        ["with neither", len(document["without_verdict_or_reason"])],
        ["not final at the end", len(document["not_final"])],
        ["last run due under faults ended (s after they stopped)", document["last_end_after_faults_stopped_s"]],
        ["periods and window (s)", document["periods_s"]],
        ["run.json parsed", documents["parsed"]],
        ["run.json corrupt", len(documents["corrupt"])],
        ["run.json missing for a stated verdict", len(documents["missing_for_a_stated_verdict"])],
        ["run.json whose answer differs from its flow run", len(documents["answer_differs"])],
        ["runs stopped before their run.json (evidence kept)", documents["runs_without_run_json"]],
        ["concurrency slots held at the end", document["slots_held_at_end"]],
    ]
    print(c.table(["figure", "value"], rows))
    for key in ("without_verdict_or_reason", "not_final"):
        for line in document[key][:20]:
            print(f"{key}: {line}")


PLAIN_SERVE = (
    "from flows.server.prefect_env import quiet_prefect; quiet_prefect()\n"
    "from flows.flow.matrix import matrix_flow\n"
    "matrix_flow.serve(name='plain-serve', cron='0 2 * * *')\n"
)


def give_up(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    """Seconds from the server's death until Prefect's worker and a plain ``Flow.serve`` exit (defaults)."""
    night = Night(root, args)
    night.state.mkdir(parents=True)
    night.start_server()
    env = c.child_env(prefect_home=root / "client-home", api_url=night.api_url, PYTHONPATH=str(c.REPO))
    subprocess.run([c.python(), "-m", "prefect", "work-pool", "create", "plain", "--type", "process"], env=env,
                   capture_output=True, timeout=300, check=True)  # fmt: skip
    with night.log("plain-worker") as log:
        worker = c.spawn([c.python(), "-m", "prefect", "worker", "start", "--pool", "plain"], cwd=root, env=env,
                         stdout=log, stderr=log)  # fmt: skip
    with night.log("plain-serve") as log:
        serve = c.spawn([c.python(), "-c", PLAIN_SERVE], cwd=root, env=env, stdout=log, stderr=log)
    try:
        _until(lambda: len(deployment_ids_named(night.api_url, "assay-matrix/plain-serve")) == 1, 300)
        time.sleep(30)  # both have polled the API successfully
        night.kill_server()
        killed = time.monotonic()
        lasted: dict[str, float | None] = {"worker": None, "serve": None}
        while time.monotonic() - killed < 3600 and None in lasted.values():
            for name, process in (("worker", worker), ("serve", serve)):
                if lasted[name] is None and process.poll() is not None:
                    lasted[name] = round(time.monotonic() - killed)
                    print(
                        f"{name} exited {lasted[name]} s after the server was killed (exit code {process.returncode})"
                    )
            time.sleep(2)
    finally:
        for process in (worker, serve):
            c.kill_group(process.pid)
        night.stop_server()
    return {"seconds_until_exit": lasted, "minutes": round((time.monotonic() - killed) / 60, 1)}


def deployment_ids_named(api_url: str, name: str) -> list[Any]:
    with client_of(api_url) as client, contextlib.suppress(Exception):
        return [client.read_deployment_by_name(name).id]
    return []


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    c.raise_on_sigterm()
    root = Path(tempfile.mkdtemp(prefix="assay-soak-"))
    root.chmod(0o755)  # as root, PostgreSQL runs as the postgres user, who must reach its folder below
    sys.path.insert(0, str(c.REPO))
    try:
        document: dict[str, Any] = {"machine": c.machine(), "seed": args.seed, "args": vars(args)}
        if args.give_up:
            document.update(give_up(args, root))
        else:
            document.update(soak(args, root))
    finally:
        document_leftovers = c.kill_leftovers()
        if args.keep:
            print(f"work folder kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    document["leftover_processes"] = document_leftovers
    default = "soak-give-up.json" if args.give_up else "soak.json"
    return c.close(args.out or c.REPO / "bench" / "results" / default, document, report)


if __name__ == "__main__":
    c.run_script(main)
