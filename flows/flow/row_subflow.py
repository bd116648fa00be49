"""A row as a subflow run of the matrix's flow run: the design card's shape, and the default.

Calling a flow inside a flow, Prefect's own way, cost about 3 s per row on a
local SQLite server. Its first two API calls (the task run that stands for
the subflow in the parent flow run, then the subflow's flow run) read before
they write, so SQLite refuses them ("database is locked", HTTP 503) whenever
another write commits in between, such as the recorded events of other
rows' samples; Prefect's client then waits 2 s, then 4 s, before it tries
again (bench/README.md, "Row subflows", has the figures). So assay creates
both runs itself, with Prefect's client retries off and its own retry a few
milliseconds later (a refused write was rolled back; the task run is keyed
by the row, so creating it again finds it), and runs the created flow run
with Prefect's engine (``run_flow``).

The subflow run is created Pending before the rows start (``RowSubflows``),
and starts running with the row's first sample. So its
``timeout_seconds``, the row's own budget, counts from just after assay's
own deadline, which stops the row's processes and ends the row TimedOut
first. The subflow's body only waits: the row's samples run as its task
runs, in its context, on the run's sample slots, and the body ends the
subflow in the row's final state. Its parameters describe the row (name,
file, line, repeat, budget, run id), never its command, environment or
properties, where secrets live; its tags are the run's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from uuid import UUID

import httpx
from prefect import Flow, flow, get_run_logger, task
from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.client.schemas.actions import FlowRunCreate
from prefect.client.schemas.objects import FlowRun, FlowRunPolicy, State
from prefect.context import FlowRunContext, SettingsContext, get_settings_context
from prefect.flow_engine import run_flow
from prefect.states import Pending, to_state_create

from fixtures_core.spec import RowSpec
from flows.server.owners import OWNER_LABEL, Owner

T = TypeVar("T")

ROW_FLOW = "assay-row"
_RETRY_FIRST_S = 0.02  # SQLite's refusal lasts as long as another write's commit: milliseconds
_RETRY_MAX_S = 1.0
_RETRY_FOR_S = 60.0  # about what Prefect's own 5 retries (2 s, 4 s, ... 32 s) would wait
_POLL_S = 0.2  # how soon Prefect's timeout, raised into the waiting body, is seen
_TIMEOUT_GRACE_S = 10.0  # after Prefect's timeout: how long the row's own end (assay's deadline) is awaited


def _row_flow(row: str, file: str, line: int, repeat: int, timeout_seconds: float, run_id: str) -> State[Any]:
    """One row of an assay run: its samples are this flow run's task runs; it ends in the row's state."""
    context = FlowRunContext.get()
    assert context is not None and context.flow_run is not None
    with _REGISTRY_LOCK:
        subflow = _REGISTRY[context.flow_run.id]
    return subflow.body()


row_flow: Flow[..., State[Any]] = flow(
    name=ROW_FLOW, retries=0, log_prints=False, validate_parameters=False, persist_result=False
)(_row_flow)
# The task run that stands for a row's subflow run in the matrix's flow run (Prefect makes the same).
_STANDS_FOR = task(name=ROW_FLOW, retries=0, persist_result=False)(_row_flow)

_REGISTRY: dict[UUID, RowSubflow] = {}  # subflow runs whose body runs, or may run, in this process
_REGISTRY_LOCK = threading.Lock()


def describe(row: RowSpec, run_id: str) -> dict[str, Any]:
    """The subflow run's parameters: the row's identity and budget, never its command, environment or
    properties (the UI shows parameters, and Prefect's database keeps them)."""
    return {"row": row.name, "file": row.fixture_id or row.file, "line": row.line, "repeat": row.repeat,
            "timeout_seconds": row.timeout_s, "run_id": run_id}  # fmt: skip


Quick = Callable[[], SettingsContext]


def settings_with(**sections: dict[str, Any]) -> Quick:
    """A maker of contexts of the current Prefect settings with some values changed, e.g.
    ``settings_with(flows={"heartbeat_frequency": None})``: copies, not rebuilt (Prefect's
    ``temporary_settings`` validates every setting again: 0.1-0.3 s here; a copy takes microseconds)."""
    current = get_settings_context()
    changed = {name: getattr(current.settings, name).model_copy(update=values) for name, values in sections.items()}
    settings = current.settings.model_copy(update=changed)
    return functools.partial(SettingsContext, profile=current.profile, settings=settings)


class _Refused(Exception):
    """The server answered 503: SQLite refused the write ("database is locked"); nothing was written."""


def _refuse(response: httpx.Response) -> None:
    """An httpx response hook: a 503 raises at once. Prefect's client would wait 2 s, then 4 s, ... before
    trying again, and even after its last try (with ``client.max_retries`` at 0 it still waits 2 s)."""
    if response.status_code == 503:
        raise _Refused(f"{response.request.method} {response.request.url.path}: HTTP 503")


def creating_client() -> SyncPrefectClient:
    """A client of the current settings whose calls raise ``_Refused`` on HTTP 503 instead of waiting."""
    return get_client(sync_client=True, httpx_settings={"event_hooks": {"response": [_refuse]}})


def create(
    client: SyncPrefectClient, flow_id: UUID, parent: UUID, row: RowSpec, run_id: str, tags: Sequence[str]
) -> RowSubflow:
    """The row's subflow run, created Pending under the ``parent`` flow run, named after the row and tagged,
    with ``creating_client``: each call is tried again a few milliseconds after SQLite refused it.
    ``flow_id`` is ``row_flow``'s (``client.create_flow``, once per run: Prefect's ``create_flow_run``
    would register the flow again before every flow run)."""
    parameters = describe(row, run_id)
    standing = _created(lambda: client.create_task_run(
        _STANDS_FOR, flow_run_id=parent, dynamic_key=row.id, name=row.name, state=Pending()))  # fmt: skip
    shaped = _with_budget(row.timeout_s)  # named at creation: no flow_run_name to set
    wanted = FlowRunCreate(
        flow_id=flow_id, flow_version=shaped.version, name=row.name, parameters=parameters, tags=list(tags),
        parent_task_run_id=standing.id, state=to_state_create(Pending()),
        empirical_policy=FlowRunPolicy(retries=shaped.retries, retry_delay=0),
        labels={OWNER_LABEL: str(Owner.here())},  # a SIGKILLed run's subflows are then known abandoned too
    )  # fmt: skip
    body = wanted.model_dump(mode="json", exclude_unset=True)
    flow_run = FlowRun.model_validate(_created(lambda: client.request("POST", "/flow_runs/", json=body)).json())
    return RowSubflow(flow_run, standing.id, shaped, parameters)


@functools.lru_cache(maxsize=64)
def _with_budget(timeout_s: float) -> Flow[..., State[Any]]:
    """``row_flow`` with a row's budget as its ``timeout_seconds``, made once per budget: Prefect's
    ``with_options`` builds the parameters' schema again, 5 ms a row before its first sample."""
    return row_flow.with_options(timeout_seconds=timeout_s)


def _created(make: Callable[[], T]) -> T:
    """``make()``, tried again (after a short, growing, jittered pause) while SQLite refuses it, for up
    to a minute. A refused write was rolled back, and the task run is keyed by the row: trying again
    creates each run once."""
    pause, deadline = _RETRY_FIRST_S, time.monotonic() + _RETRY_FOR_S
    while True:
        try:
            return make()
        except _Refused:
            if time.monotonic() > deadline:
                raise
        time.sleep(pause * random.uniform(0.5, 1.5))  # noqa: S311 - jitter, not cryptography
        pause = min(pause * 2, _RETRY_MAX_S)


class RowSubflows:
    """The row subflow runs of one matrix flow run, created before their rows start.

    One thread, with a client of its own (``creating_client``), creates them in the rows' order: the
    first ``FIRST`` before any row starts, the rest while the first rows run. A creation takes about
    50 ms while no sample runs. While samples run the server is busy recording their events, and SQLite
    refuses a creation whenever another write commits between its read and its write: one took 0.1 to
    1.7 s, and rows of short samples, one by one, waited for theirs (bench/README.md, "Row subflows").
    So a row that finds its subflow run not yet created waits, with the rows after it, until every one
    is: the creations then have the server to themselves. Rows that take seconds never catch up with
    the creator. Creations never compete with one another.
    """

    FIRST = 32  # rows whose subflow runs exist before any row starts: about 1.6 s on a quiet local server
    _SHOW_S = 0.25  # how often the count of creations is shown while rows wait for them

    def __init__(
        self,
        parent: UUID,
        rows: Sequence[RowSpec],
        run_id: str,
        tags: Sequence[str],
        on_wait: Callable[[object, str | None], None] | None = None,
        stopped: Callable[[], bool] = lambda: False,
    ) -> None:
        """Start creating, and return once the first ``FIRST`` subflow runs exist; ``on_wait`` hears how
        many exist while a row waits for them (for the progress display), and None when it stops waiting.
        Once ``stopped()`` (the run was cancelled), a row waits for its own subflow run only."""
        self._made: dict[str, concurrent.futures.Future[RowSubflow]] = {
            row.id: concurrent.futures.Future() for row in rows
        }
        self._on_wait, self._stopped = on_wait, stopped
        self.taken: dict[str, RowSubflow] = {}  # by row id, as rows took them

        def make_all() -> None:
            try:
                with creating_client() as client:
                    flow_id = client.create_flow(row_flow)
                    for row in rows:
                        self._made[row.id].set_result(create(client, flow_id, parent, row, run_id, tags))
            except BaseException as exc:  # every row left raises it when it takes its subflow run
                for made in self._made.values():
                    if not made.done():
                        made.set_exception(exc)

        # In the run's context (its Prefect settings: the API's address). A daemon: a run that ends
        # early (its API lost) must not wait at exit for creations nobody takes.
        context = contextvars.copy_context()
        threading.Thread(target=context.run, args=(make_all,), name="assay-row-create", daemon=True).start()
        self._wait_for([self._made[row.id] for row in rows[: self.FIRST]])

    def take(self, row: RowSpec) -> RowSubflow:
        """The row's subflow run, once created (raises what kept it from being created). A row that
        would wait for it waits for every creation left: no further row starts samples beside them."""
        made = self._made[row.id]
        if not made.done():
            self._wait_for(list(self._made.values()))
        subflow = made.result()
        self.taken[row.id] = subflow
        return subflow

    def _wait_for(self, futures: Sequence[concurrent.futures.Future[RowSubflow]]) -> None:
        """Until ``futures`` are done (created, or failed) or the run stopped, showing how many of all
        are created."""
        if all(future.done() for future in futures):
            return  # nothing to show
        waiter = object()  # this row's wait: another's end must not clear what it shows
        try:
            while concurrent.futures.wait(futures, timeout=self._SHOW_S).not_done and not self._stopped():
                if self._on_wait is not None:
                    created = sum(made.done() for made in self._made.values())
                    self._on_wait(waiter, f"creating the rows' subflow runs in Prefect: {created} of {len(self._made)}")
        finally:
            if self._on_wait is not None:
                self._on_wait(waiter, None)


class RowSubflow:
    """One row's subflow run in this process: created Pending; running from the row's first sample on
    (or from its end, for a row that ran no sample); ended in the row's final state.

    Prefect's engine runs it on a thread of its own (``run_flow``: its states, its timeout, its logs)
    while the row's samples run as its task runs on the sample slots: they do not wait for the
    engine's API calls, which take place beside them.
    """

    def __init__(self, flow_run: FlowRun, standing_for: UUID, shaped: Flow[..., Any], parameters: dict[str, Any]):
        self.flow_run = flow_run
        self.task_run_id = standing_for  # the task run that stands for it in the matrix's flow run
        self.flow, self._parameters = shaped, parameters  # the row's flow: its budget is its timeout_seconds
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._sampled = threading.Event()  # the row's samples are done: it only waits for its final state
        self._ended = threading.Event()
        self._final: tuple[State[Any], str, bool] | None = None  # the row's state, its log line, whether it failed
        self._outcome: State[Any] | BaseException | None = None

    def run(self, call: Callable[[], T]) -> T:
        """``call()`` as part of the subflow run: a sample task called there is one of its task runs (the
        context of the matrix's flow run, naming this flow run instead). The first call starts it."""
        self._start()
        parent = FlowRunContext.get()
        assert parent is not None, "a row's samples run inside its run's flow"
        # A copy per call: a context is entered by one thread at a time.
        with parent.model_copy(update={"flow_run": self.flow_run, "flow": self.flow, "parameters": self._parameters}):
            return call()

    def sampled(self) -> None:
        """The row's samples are done; what is left is waiting for the rows it compares with."""
        self._sampled.set()

    def end(self, state: State[Any], log_line: str, failed: bool) -> None:
        """End the subflow run in the row's final ``state`` (its body logs ``log_line``), without waiting
        (``join`` waits). A row that ran no sample (skipped, broken, resumed as done) starts its subflow
        run here."""
        self._final = (state, log_line, failed)
        self._sampled.set()
        self._ended.set()
        self._start()

    def restate(self, state: State[Any]) -> None:
        """The row's final state changed after it ended (an A/B arm: the judge speaks once every row has
        ended); ``join`` ends the subflow run, and the task run standing for it, in ``state``."""
        assert self._final is not None, "restate follows end"
        self._final = (state, self._final[1], self._final[2])

    def join(self) -> State[Any]:
        """The subflow run's final state once it ended; raises what kept it from running.

        It is the row's state. On a busy machine Prefect's timeout (the row's budget, started a moment
        after assay's) may fire before the row's own TimedOut state, with its reason, is handed over;
        Prefect then ends the subflow run, and the task run standing for it, with its own message: both
        are set to the row's state here.
        """
        assert self._thread is not None, "join follows end"
        self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        assert self._outcome is not None and self._final is not None
        row_state = self._final[0]
        if (self._outcome.name, self._outcome.message) != (row_state.name, row_state.message):
            agreeing = State(type=row_state.type, name=row_state.name, message=row_state.message)
            with get_client(sync_client=True) as client:
                client.set_flow_run_state(self.flow_run.id, agreeing, force=True)
                client.set_task_run_state(self.task_run_id, agreeing, force=True)
            self._outcome = agreeing
        return self._outcome

    def body(self) -> State[Any]:
        """The subflow's body: wait for the row, log its line, end in its state."""
        try:
            final = self._wait(None)
        except asyncio.CancelledError:  # Prefect's timeout_seconds (the row's budget) ran out, after assay's
            # A row still sampling was stopped by assay's deadline a moment ago: its TimedOut state, with the
            # reason, is on its way. A row that only waits for its baseline rows has not run out of budget.
            final = self._wait(None if self._sampled.is_set() else _TIMEOUT_GRACE_S)
            if final is None:
                raise
        assert final is not None, "an untimed wait ends with the row's state"
        state, line, failed = final
        logger = get_run_logger()
        (logger.error if failed else logger.info)(line)
        return state

    def _wait(self, timeout: float | None) -> tuple[State[Any], str, bool] | None:
        """The row's final state once handed over; None after ``timeout`` seconds. Short waits: Prefect
        raises its timeout into this thread, and a blocking wait would hide it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._ended.wait(_POLL_S):
            if deadline is not None and time.monotonic() > deadline:
                return None
        return self._final

    def _start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            with _REGISTRY_LOCK:
                _REGISTRY[self.flow_run.id] = self
            # The caller's context: the matrix's flow run (the parent), the run's settings and transaction.
            context = contextvars.copy_context()
            self._thread = threading.Thread(
                target=context.run, args=(self._execute,), name="assay-row-flow", daemon=True
            )
            self._thread.start()

    def _execute(self) -> None:
        try:
            self._outcome = run_flow(self.flow, flow_run=self.flow_run, parameters=self._parameters,
                                     return_type="state")  # type: ignore[assignment]  # fmt: skip
        except BaseException as exc:  # handed to the row's thread, which raises it
            self._outcome = exc
        finally:
            with _REGISTRY_LOCK:
                _REGISTRY.pop(self.flow_run.id, None)
