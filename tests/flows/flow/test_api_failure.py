"""What a failed Prefect API becomes: one line that says where and what to do, never an internal error."""

from __future__ import annotations

import httpx

from flows.flow.matrix import api_failure
from flows.server.local import Backend, ServerError

BACKEND = Backend("http://127.0.0.1:4321/api", "http://127.0.0.1:4321", "local")


def test_prefects_version_check_finding_no_server_is_a_lost_api() -> None:
    """Prefect checks the server's version as a flow starts, and wraps what failed in a RuntimeError."""
    try:
        try:
            raise httpx.ConnectError("All connection attempts failed")
        except httpx.ConnectError as refused:
            raise RuntimeError("Failed to reach API at http://127.0.0.1:4321/api/") from refused
    except RuntimeError as wrapped:
        failure = api_failure(wrapped, BACKEND)
    assert isinstance(failure, ServerError)
    assert str(failure) == (
        "lost the Prefect API at http://127.0.0.1:4321/api (ConnectError: All connection attempts failed); "
        "check it (`assay server status`) and run again"
    )


def test_another_runtime_error_is_not_the_apis() -> None:
    assert api_failure(RuntimeError("something else"), BACKEND) is None


def test_the_watch_asks_for_the_flow_run_with_what_prefects_client_sends() -> None:
    """Its credentials (the auth string, else the key) and its custom headers, which may override them."""
    from prefect.settings import temporary_settings

    from flows.flow.matrix import _client_headers

    with temporary_settings(updates={"api.auth_string": "admin:secret", "client.custom_headers": {"X-Team": "a"}}):
        assert _client_headers() == {"Authorization": "Basic YWRtaW46c2VjcmV0", "X-Team": "a"}  # base64 of admin:secret
    with temporary_settings(updates={"api.key": "k", "client.custom_headers": {"Authorization": "Bearer proxy"}}):
        assert _client_headers() == {"Authorization": "Bearer proxy"}
