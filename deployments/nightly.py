"""Serve the matrix flow on a schedule: ``python deployments/nightly.py PATH... [options]``.

    python deployments/nightly.py examples/matrix.md --cron "0 2 * * *" --timezone Europe/Paris \\
        --baseline shipped --tag team-a

The process stays up, through outages of its server of any length (each said
once on stderr), and runs the matrix on schedule, and on demand from the
UI ("Run" on the ``assay-matrix/nightly-serve`` deployment; ``deployments/prefect.yaml``'s
is ``assay-matrix/nightly``, and serving never takes over a deployment of a work pool). It uses the same
Prefect API as ``assay run``: ``PREFECT_API_URL`` when set, else this Prefect
home's local server (started if needed). Runs of the deployment never overlap
(``--concurrency-limit``, default 1): a run due while another runs waits.
A FAIL or ERR verdict marks the flow run Failed; every run's document lands
in ``--out`` as usual. For a work pool and ``prefect worker start``, see
``deployments/prefect.yaml``.

Custom runs of the deployment may use fixtures and state folders only under
this process's working folder and the paths it serves (``flows.flow.confinement``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fixtures_core.errors import AssayError
from flows.server.api_watch import probe_health

if TYPE_CHECKING:
    from prefect.schedules import Schedule

    from flows.flow.parameters import MatrixParameters
    from flows.server.sweeper import KeepAutomation


class ServingStopped(AssayError):
    """Serving failed for a reason other than an unreachable API; one line says it."""


def parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Serve the assay matrix flow on a cron schedule.")
    parser.add_argument("paths", nargs="+", help="fixture files or folders")
    parser.add_argument("--cron", default="0 2 * * *", help="cron schedule (default: 02:00 every day)")
    parser.add_argument("--timezone", default="UTC", help="IANA time zone of the cron schedule (default: UTC)")
    parser.add_argument("--name", default="nightly-serve", help="deployment name (default: nightly-serve)")
    parser.add_argument("--out", default=os.path.abspath(".assay"), help="state folder (absolute by default)")
    parser.add_argument("--baseline", help="baseline run file or blessed name to gate against")
    parser.add_argument("--regression-tolerance", type=float, default=0.0, dest="tolerance")
    parser.add_argument("--repeat", type=int, help="samples per row for every row")
    parser.add_argument("--k", type=int, help="k of pass@k and pass^k")
    parser.add_argument(
        "--filter", action="append", default=[], help="only rows whose name matches this glob (repeatable: any)"
    )
    parser.add_argument("--group-by", action="append", default=[], help="suite figures per value of this property")
    parser.add_argument("--parallel", type=int, help="rows at once (default: as many as sample slots)")
    parser.add_argument(
        "--parallel-samples", action="store_true", help="samples of a row that does not say serial run at once"
    )
    parser.add_argument(
        "--adaptive", action="store_true", help="rows stop sampling once more samples could not change their verdict"
    )
    parser.add_argument("--sample-budget", help="adaptive rows share this many samples, or fixed: what fixed k spends")
    parser.add_argument(
        "--rows-as-tasks", action="store_true", help="each row a task run of the matrix run, not a subflow run"
    )
    parser.add_argument("--concurrency", type=int, help="samples in flight across the run (default: the fixtures')")
    parser.add_argument(
        "--limit", action="append", default=[], dest="limits", help="PROPERTY=CAP or PROPERTY=COUNT/UNIT (repeatable)"
    )
    parser.add_argument("--budget", help="a summed metric and its cap for each run: 'cost_usd <= 5'")
    parser.add_argument("--label", default="nightly", help="label of every run (default: nightly)")
    parser.add_argument("--tag", action="append", default=[], dest="tags", help="a Prefect tag (repeatable)")
    parser.add_argument(
        "--concurrency-limit", type=int, default=1, help="runs of this deployment at once (default 1: never overlap)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    from flows.server.prefect_env import quiet_prefect

    quiet_prefect()
    from fixtures_core.errors import AssayError, ValidationFailed

    try:
        return serve(args)
    except ValidationFailed as exc:
        print("\n".join(f"error: {e}" for e in exc.errors), file=sys.stderr)
    except AssayError as exc:
        print(f"error: {exc}", file=sys.stderr)
    return 2


def serve(args: argparse.Namespace) -> int:
    """Check everything a 02:00 run would trip on, then serve the deployment until stopped."""
    from fixtures_core.errors import UsageError
    from fixtures_core.runs.plan import plan
    from flows.flow.naming import run_tags
    from flows.server.local import TEMPORARY, ServerError, resolve_backend

    # Not a run option (RunOptions.check checks those, through plan below): the deployment's own.
    if args.concurrency_limit < 1:
        raise UsageError(f"--concurrency-limit must be >= 1, got {args.concurrency_limit}")
    parameters = parameters_of(args)
    options = parameters.to_options()
    planned = plan(options)  # a typo must fail now, not at 02:00
    schedule = cron_schedule(args.cron, args.timezone)
    backend = resolve_backend(say=lambda message: print(f"assay: {message}", file=sys.stderr))
    if backend.source == TEMPORARY:
        raise ServerError("schedules need a Prefect server that stays up: unset ASSAY_PREFECT_SERVER")

    from prefect.settings import temporary_settings

    with temporary_settings(updates=backend.prefect_settings()):
        refuse_a_work_pool_deployment(args.name)
        allow_what_is_served(parameters)
        served = Served(
            name=args.name,
            schedule=schedule,
            parameters=parameters.model_dump(),
            tags=tuple(run_tags(options, planned.matrix, parameters.tags)),  # the tags each of its runs gets
            concurrency_limit=args.concurrency_limit,
            heartbeat_s=served_heartbeat(),
        )
        return serve_through_outages(served, str(backend.api_url))


DEFAULT_HEARTBEAT_S = 180  # Prefect's own default (flows.heartbeat_frequency)


@dataclass(frozen=True)
class Served:
    """What one ``nightly.py`` serves: the deployment ``assay-matrix/NAME`` and its runs' heartbeat."""

    name: str
    schedule: Schedule
    parameters: dict[str, Any]
    tags: tuple[str, ...]
    concurrency_limit: int
    heartbeat_s: int


def served_heartbeat() -> int:
    """Seconds between the served runs' heartbeats: Prefect's setting, never off (the automation that
    marks silent runs Crashed counts on them)."""
    from prefect.settings import get_current_settings

    from flows.server.silent_runs import heartbeat_seconds

    return heartbeat_seconds(get_current_settings().flows.heartbeat_frequency or DEFAULT_HEARTBEAT_S) or 0


def serve_through_outages(served: Served, api_url: str) -> int:
    """Serve until stopped (SIGTERM, Ctrl-C: 0). Prefect's runner gives up after three failed polls of an
    unreachable API (``critical_service_loop``: "Failed the last 3 attempts"): then the deployment is
    registered and served again once the API answers, however long that takes. The schedule lives on
    the server, so nothing of it is lost; the deployment's concurrency limit keeps runs from overlapping."""
    from flows.server.outages import OutageLog
    from flows.server.sweeper import Sweeper

    with OutageLog(api_url, _say) as outages, Sweeper(_finder(served.name), _automation_of(served), outages):
        restarts = 0
        try:
            while True:
                outages.wait_up()
                began = time.monotonic()
                try:
                    _prepare(served)
                    _serve_once(served)
                    return 0
                except Exception as exc:  # noqa: BLE001 - an outage is waited out; anything else is one line
                    if not _is_outage(exc) and not outages.lost and probe_health(api_url) == "up":
                        raise ServingStopped(f"serving assay-matrix/{served.name} stopped: {_one_line(exc)}") from None
                    outages.lost_now(_one_line(exc))
                restarts = 0 if time.monotonic() - began > 60 else restarts + 1
                time.sleep(min(2.0**restarts, 30.0))  # an API that answers but keeps failing is not hammered
        except KeyboardInterrupt:  # Ctrl-C, while serving or waiting for the API: stopped, as SIGTERM
            return 0


def _automation_of(served: Served) -> KeepAutomation:
    from flows.server import silent_runs

    return lambda client: silent_runs.ensure(client, served.heartbeat_s).window_s


def _prepare(served: Served) -> None:
    """Before (re)serving: the automation that marks silent runs Crashed, and runs of this host whose process
    is gone (e.g. served runs the runner killed as it gave up) marked Crashed now."""
    from prefect.client.orchestration import get_client

    from flows.server import silent_runs
    from flows.server.abandoned import sweep

    with get_client(sync_client=True) as client:
        silent_runs.ensure(client, served.heartbeat_s)
        sweep(client, finder=_finder(served.name))


def _serve_once(served: Served) -> None:
    """Register ``assay-matrix/NAME`` with its schedule and serve it until stopped (returns) or until
    Prefect's runner gives up on the API (raises)."""
    from prefect.runner import Runner

    from flows.flow.matrix import matrix_flow

    runner = Runner(name=served.name, heartbeat_seconds=served.heartbeat_s)
    runner.add_flow(
        matrix_flow,
        name=served.name,
        schedules=[served.schedule],
        parameters=served.parameters,
        tags=list(served.tags),
        concurrency_limit=served.concurrency_limit,
        description="assay fixture matrix on a schedule (deployments/nightly.py)",
    )
    # Prefect's poll loop prints its failures and tracebacks with print(); outages are said once, on stderr.
    with open(os.devnull, "w") as nowhere, contextlib.redirect_stdout(nowhere):
        asyncio.run(runner.start())


def _is_outage(exc: BaseException) -> bool:
    """True when ``exc`` (or what it groups or was raised from) says the API could not be reached or failed
    on its side: a transport error, an HTTP 5xx, or Prefect's runner giving up after failed polls."""
    import httpx

    pending, seen = [exc], set()
    while pending:
        found = pending.pop()
        if id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, httpx.TransportError):
            return True
        if isinstance(found, httpx.HTTPStatusError) and found.response.status_code >= 500:
            return True
        if isinstance(found, RuntimeError) and "exceeded error threshold" in str(found):
            return True
        if isinstance(found, BaseExceptionGroup):
            pending.extend(found.exceptions)
        pending.extend(linked for linked in (found.__cause__, found.__context__) if linked is not None)
    return False


def _one_line(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _finder(name: str) -> str:
    return f"deployments/nightly.py serving assay-matrix/{name}"


def _say(message: str) -> None:
    print(f"nightly: {message}", file=sys.stderr, flush=True)


def refuse_a_work_pool_deployment(name: str) -> None:
    """UsageError when ``assay-matrix/NAME`` exists on a work pool: serving would replace its pool,
    pull steps, schedule and parameters."""
    from prefect.client.orchestration import get_client
    from prefect.exceptions import ObjectNotFound

    from fixtures_core.errors import UsageError

    with get_client(sync_client=True) as client:
        try:
            found = client.read_deployment_by_name(f"assay-matrix/{name}")
        except ObjectNotFound:
            return
    if found.work_pool_name:
        raise UsageError(
            f"deployment assay-matrix/{name} runs on work pool {found.work_pool_name!r} (prefect deploy); "
            "serving it would take it over: choose another --name"
        )


def allow_what_is_served(parameters: MatrixParameters) -> None:
    """Let the served runs use the folders given here (and nothing else outside the working folder)."""
    from flows.flow.confinement import ALLOWED_ROOTS

    given = [*parameters.paths, parameters.out]
    if parameters.baseline and os.path.exists(parameters.baseline):
        given.append(os.path.dirname(os.path.abspath(parameters.baseline)))
    listed = [p for p in os.environ.get(ALLOWED_ROOTS, "").split(os.pathsep) if p]
    os.environ[ALLOWED_ROOTS] = os.pathsep.join(dict.fromkeys([*listed, *(os.path.abspath(p) for p in given)]))


def parameters_of(args: argparse.Namespace) -> MatrixParameters:
    """The parameters every scheduled run gets: the command line's options, paths made absolute."""
    from flows.flow.parameters import MatrixParameters

    return MatrixParameters.parse(
        {
            "paths": [os.path.abspath(p) for p in args.paths],
            "out": args.out,
            "repeat": args.repeat,
            "k": args.k,
            "group_by": args.group_by,
            "filter": args.filter,
            "parallel": args.parallel,
            "parallel_samples": args.parallel_samples,
            "adaptive": args.adaptive,
            "sample_budget": args.sample_budget,
            "concurrency": args.concurrency,
            "limit": args.limits,
            "budget": args.budget,
            "label": args.label,
            "baseline": args.baseline,
            "tolerance": args.tolerance,
            "tags": args.tags,
            "rows_as_tasks": args.rows_as_tasks,
        }  # fmt: skip
    )


def cron_schedule(cron: str, timezone: str) -> Schedule:
    """Prefect's cron schedule; UsageError (one line) for a bad cron string or time zone."""
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.schedules import Cron

    from fixtures_core.errors import UsageError

    try:
        CronSchedule(cron=cron, timezone=timezone)
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"].removeprefix("Value error, ")
        raise UsageError(f"--cron {cron!r} --timezone {timezone!r}: {reason}") from None
    return Cron(cron, timezone=timezone)


if __name__ == "__main__":
    sys.exit(main())
