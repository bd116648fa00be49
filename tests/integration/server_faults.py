"""The requests that used to end a Prefect server assay started, sent through Prefect's own client.

- A ``PATCH /flow_runs/{id}`` whose parameters hold a NUL byte: PostgreSQL refuses it ("unsupported
  Unicode escape sequence"), Prefect answers 503; SQLite stores it (204).
- Several runs creating one global concurrency limit at the same moment: one 201, the others 409
  (``uq_concurrency_limit_v2__name``, or SQLite's UNIQUE constraint).

Each made the server log an error; a server whose output went to a pipe nobody read died of it.
"""

from __future__ import annotations

import contextvars
import threading
import uuid

from prefect.client.orchestration import get_client
from prefect.client.schemas.actions import GlobalConcurrencyLimitCreate
from prefect.exceptions import ObjectAlreadyExists, PrefectHTTPStatusError
from prefect.settings import temporary_settings


def create_one_limit_at_once(count: int) -> list[int]:
    """HTTP status of each of ``count`` simultaneous creations of one new global concurrency limit, sorted.

    Each from a client of its own, in a thread of its own (the caller's Prefect settings go with it)."""
    name = f"race-{uuid.uuid4().hex[:8]}"
    barrier = threading.Barrier(count)
    codes: list[int] = []

    def create() -> None:
        with temporary_settings(updates={"client.max_retries": 0}), get_client(sync_client=True) as client:
            barrier.wait()
            try:
                client.create_global_concurrency_limit(GlobalConcurrencyLimitCreate(name=name, limit=1))
                codes.append(201)
            except ObjectAlreadyExists:
                codes.append(409)
            except PrefectHTTPStatusError as exc:
                codes.append(exc.response.status_code)
            except Exception:  # no answer at all: the server died or hung
                codes.append(0)

    threads = [threading.Thread(target=contextvars.copy_context().run, args=(create,)) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return sorted(codes)


def patch_parameters_with_nul() -> int:
    """HTTP status of a ``PATCH /flow_runs/{id}`` that sets a parameter holding a NUL byte (no client retries)."""
    with temporary_settings(updates={"client.max_retries": 0}), get_client(sync_client=True) as client:
        flow_id = client.create_flow_from_name(f"nul-{uuid.uuid4().hex[:8]}")
        created = client.request("POST", "/flow_runs/", json={"flow_id": str(flow_id)})  # a bare run, no flow
        try:
            return client.update_flow_run(created.json()["id"], parameters={"prompt": "before\x00after"}).status_code
        except PrefectHTTPStatusError as exc:
            return exc.response.status_code
