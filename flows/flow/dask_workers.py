"""Samples on Dask workers: prefect-dask's ``DaskTaskRunner``, a cluster address or a LocalCluster.

``--dask-address ADDRESS`` connects to a running Dask scheduler;
``--dask-address local`` starts a LocalCluster of worker processes on this
machine for the run. Rows stay in the flow's process: a row is bookkeeping
(its slots, budget, board, evidence, progress) over its samples, and the
samples are the work; each sample task runs on a worker, in a containment
of its own there (cgroup, process group, parent-death signal, watchdog).

Stopping crosses the process boundary through Dask events, which the flow
sets and every sample on a worker watches: ``assay-RUN-cancel`` (the run was
interrupted: stop gracefully), ``assay-RUN-kill`` (a second interrupt: kill
at once) and ``assay-RUN-row-ID`` (a row stopped after an ERR). A worker
that dies takes its samples along (its watchdog). Deadlines travel as wall
clock time, since another machine's monotonic clock is its own.

Workers need the Prefect API of the run (``PREFECT_API_URL``: a LocalCluster
gets it from the run; a remote worker must have it set), assay installed,
and the fixture files (and ``--out``, for A/B attempts) at the same paths.

The cluster is ready before any row starts: its workers are up (a
LocalCluster's processes started) and have each imported what a sample
needs (assay and Prefect's task engine, seconds per worker on a busy
machine), so the first samples do not pay for it out of their rows' budgets;
how long the run waited is ``waited_s``, which the run document keeps. A
row's budget starts again when its first sample reaches a worker
(``execution.row_clock``): the worker says so through a Dask topic the flow
listens to, and until then the row's other samples do not set off.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from prefect.client.schemas.objects import State
from prefect.settings import PREFECT_API_URL, get_current_settings
from prefect.tasks import Task

from fixtures_core.errors import UsageError
from fixtures_core.execution import row_clock
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.row_clock import RowClock
from fixtures_core.execution.rows import RunSettings, run_sample
from fixtures_core.records.rundoc import DaskCluster
from fixtures_core.results import SampleResult
from fixtures_core.spec import RowSpec

LOCAL = "local"
_WATCH_S = 0.2  # how often a worker's sample looks at the stop events, and the flow at its scopes
_ARRIVAL_S = 2.0  # after its first sample ended, how long a row waits for the news of its arrival


def event_names(run_id: str, row_id: str) -> tuple[str, str, str]:
    """The Dask events a sample of ``row_id`` obeys: the run's cancel and kill, and its row's stop."""
    row = hashlib.sha256(row_id.encode()).hexdigest()[:16]
    return f"assay-{run_id}-cancel", f"assay-{run_id}-kill", f"assay-{run_id}-row-{row}"


def arrival_topic(run_id: str) -> str:
    """The Dask topic on which a row's first sample says it reached its worker."""
    return f"assay-{run_id}-arrived"


def run_on_worker(
    row: RowSpec, index: int, wall_deadline: float, settings: RunSettings, starts_budget: bool = False
) -> SampleResult:
    """One sample on a Dask worker: contained in this process, stopped by the flow's events. The row's first
    sample (``starts_budget``) has the row's whole budget from now, and tells the flow when now was."""
    if starts_budget:
        from distributed import get_worker

        arrived = time.time()
        deadline = time.monotonic() + row.timeout_s
        get_worker().log_event(arrival_topic(settings.run_id), {"row": row.id, "at": arrived})
    else:
        deadline = time.monotonic() + (wall_deadline - time.time())
    with Containment() as containment, _obeying(settings.run_id, row.id, containment):
        return run_sample(row, index, deadline, settings, containment)


def warm() -> int:
    """Import on a worker what a sample needs (what unpickling the first sample task would), before any row waits."""
    importlib.import_module("prefect.task_engine")
    importlib.import_module("flows.flow.matrix")
    return os.getpid()


@contextlib.contextmanager
def _obeying(run_id: str, row_id: str, containment: Containment) -> Iterator[None]:
    from distributed import get_worker

    client = get_worker().client  # in the task's thread: the watcher's thread is no worker context
    cancel, kill, row = (_event(name, client) for name in event_names(run_id, row_id))
    done = threading.Event()

    def watch() -> None:
        cancelled = False
        while not done.wait(_WATCH_S):
            with contextlib.suppress(Exception):  # the scheduler went away: the worker goes too
                if kill.is_set():
                    containment.cancel(at_once=True)
                    return
                if not cancelled and (cancel.is_set() or row.is_set()):
                    containment.cancel()
                    cancelled = True

    watcher = threading.Thread(target=watch, name="assay-dask-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()


class DaskError(RuntimeError):
    """A sample task that Dask could not run (a lost worker or scheduler, a failure before the task began)."""


class DaskSamples:
    """The flow's side: submit sample tasks to Dask and set the stop events for its scopes. ``cluster``: the
    cluster the run used and how long it waited for it, once it is ready. ``on_wait`` hears what the run
    waits for (the cluster), and None once it is ready."""

    def __init__(
        self,
        address: str,
        run_id: str,
        containment: Containment,
        slots: int,
        on_wait: Callable[[object, str | None], None] | None = None,
    ) -> None:
        from prefect_dask.task_runners import DaskTaskRunner

        self.run_id = run_id
        self.cluster: DaskCluster | None = None
        self._address = address
        self._on_wait = on_wait
        self._containment = containment
        self._arriving: dict[str, RowClock] = {}  # the clock of each row whose first sample is on its way
        if address == LOCAL:
            workers = max(1, min(slots, os.cpu_count() or 1))
            env = {"PREFECT_API_URL": str(PREFECT_API_URL.value() or "")}  # else each worker starts its own server
            if (credentials := get_current_settings().api.auth_string) is not None:  # API authentication
                env["PREFECT_API_AUTH_STRING"] = credentials.get_secret_value()
            kwargs: dict[str, Any] = dict(
                n_workers=workers, threads_per_worker=math.ceil(slots / workers), processes=True,
                dashboard_address=None, env=env,
            )  # fmt: skip
            runner = DaskTaskRunner(cluster_class="distributed.LocalCluster", cluster_kwargs=kwargs)
        else:
            runner = DaskTaskRunner(address=address)
        self._runner: Any = runner  # prefect-dask is untyped
        self._scopes: dict[str, Containment] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="assay-dask-stops", daemon=True)

    def __enter__(self) -> DaskSamples:
        began = time.monotonic()
        what = "a local Dask cluster to start" if self._address == LOCAL else f"the Dask cluster at {self._address}"
        if self._on_wait is not None:
            self._on_wait(self, f"waiting for {what}")
        try:
            self._runner.__enter__()
            client = self._runner.client  # connect (or start the LocalCluster) now, not with the first sample
            workers = list(client.scheduler_info().get("workers", {}))
            # One warm-up per worker, on its task threads (a function Dask runs in its event loop would stall it).
            warming = [client.submit(warm, workers=[w], allow_other_workers=False, pure=False) for w in workers]
            try:
                client.gather(warming)
            except ImportError as exc:
                raise UsageError(f"--dask-address {self._address}: a worker cannot run samples: {exc}") from None
            client.subscribe_topic(arrival_topic(self.run_id), self._arrived)
        except OSError as exc:  # an unreachable scheduler: Dask's connect timeout
            raise UsageError(f"--dask-address {self._address}: {exc}") from None
        finally:
            if self._on_wait is not None:
                self._on_wait(self, None)
        self.cluster = DaskCluster(self._address, len(workers), round(time.monotonic() - began, 3))
        self._watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._watcher.join()
        self._runner.__exit__(*exc)

    def run(self, task: Task[Any, Any], parameters: dict[str, Any], row_id: str, scope: Containment) -> State[Any]:
        """Run ``task`` on a worker and wait for its final state; ``scope`` cancelled stops it there.

        The row's first sample carries ``starts_budget``: its arrival on the worker restarts the row's clock.
        Another sample of the row waits for that before it sets off, with the row's deadline from there."""
        with self._lock:
            self._scopes[row_id] = scope
        clock = row_clock.current()
        first = clock is not None and not clock.restarted and clock.claim_restart()
        if clock is not None and first:
            with self._lock:
                self._arriving[row_id] = clock
            parameters = {**parameters, "starts_budget": True}
        elif clock is not None and not clock.restarted:
            self._wait_for_arrival(clock, scope)
            parameters = {**parameters, "wall_deadline": time.time() + (clock.deadline - time.monotonic())}
        future = self._runner.submit(task, parameters)
        try:
            outcome = future.wrapped_future.result()
        except Exception as exc:  # the worker could not run the task at all (it died, or Prefect failed there)
            raise DaskError(f"the Dask worker could not run the sample: {type(exc).__name__}: {exc}") from None
        finally:
            if clock is not None and first:  # the news of its arrival comes before its result, or just after
                clock.wait_restarted(_ARRIVAL_S)
                with self._lock:
                    self._arriving.pop(row_id, None)
        if not isinstance(outcome, State):
            raise DaskError(f"the Dask worker returned {type(outcome).__name__}, not the sample's state")
        return outcome

    def _wait_for_arrival(self, clock: RowClock, scope: Containment) -> None:
        """Until the row's first sample reached its worker (or the row stopped, or its first deadline passed)."""
        while not clock.wait_restarted(_WATCH_S):
            if scope.cancelled.is_set() or time.monotonic() >= clock.deadline:
                return

    def _arrived(self, event: tuple[float, dict[str, Any]]) -> None:
        """A row's first sample reached its worker (Dask's event loop calls this: it only moves a clock)."""
        _when, message = event
        with self._lock:
            clock = self._arriving.get(str(message.get("row")))
        if clock is not None:
            clock.restart(time.monotonic() - (time.time() - float(message["at"])))

    def _watch(self) -> None:
        told: set[str] = set()
        while not self._done.wait(_WATCH_S):
            with contextlib.suppress(Exception):  # a lost scheduler fails the samples themselves
                cancel, kill, _ = event_names(self.run_id, "")
                if self._containment.stopped_at_once.is_set() and kill not in told:
                    self._set(kill, told)
                if self._containment.cancelled.is_set() and cancel not in told:
                    self._set(cancel, told)
                with self._lock:
                    scopes = list(self._scopes.items())
                for row_id, scope in scopes:
                    row = event_names(self.run_id, row_id)[2]
                    if row not in told and scope.cancelled.is_set():
                        self._set(row, told)

    def _set(self, name: str, told: set[str]) -> None:
        _event(name, self._runner.client).set()
        told.add(name)


def _event(name: str, client: object | None = None) -> Any:
    """A Dask event of the cluster (``distributed`` is untyped)."""
    from distributed import Event

    event: Any = Event
    return event(name, client=client)
