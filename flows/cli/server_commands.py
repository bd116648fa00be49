"""``assay server start|stop|status``: the local Prefect server of this Prefect home."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from flows.cli.session import Exit, out, say

server_app = typer.Typer(
    no_args_is_help=True,
    help="The local Prefect server ad-hoc runs use (Prefect's server of PREFECT_HOME, under assay's supervisor).",
)


@server_app.command("start")
def server_start_command(
    port: Annotated[
        Optional[int], typer.Option("--port", help="Port (default: 4200 when free, else a free one).")
    ] = None,
    auth: Annotated[
        bool,
        typer.Option(
            "--auth",
            help="Require Prefect's API authentication: give this home a secret (assay-api-auth, owner-only) "
            "if it has none. The UI then asks for it as its password.",
        ),
    ] = False,
) -> None:
    """Start this Prefect home's server (or find it running) and wait until it answers."""
    from flows.server import supervisor
    from flows.server.credentials import create_secret, read_secret, secret_path
    from flows.server.local import ServerError, ensure_started, find, prefect_home

    home = prefect_home()
    if auth and read_secret(home) is None:
        running = find(home)
        if running is not None:
            raise ServerError(
                f"the local Prefect server of {home} (pid {running.pid}) runs without API authentication: "
                "`assay server stop` first, then `assay server start --auth`"
            )
        create_secret(home)
    found = ensure_started(home, port, say=say)
    secured = f", API authentication on (the secret: {secret_path(home)})" if read_secret(home) else ""
    out.print(
        f"local Prefect server: pid {found.pid}, API {found.api_url}, UI {found.ui_url}, "
        f"log {supervisor.log_of(home).path}{secured}",
        soft_wrap=True,
    )


@server_app.command("stop")
def server_stop_command() -> None:
    """Stop this Prefect home's server (and its supervisor) and wait until it is gone."""
    from flows.server.local import prefect_home, stop

    stopped = stop(prefect_home())
    out.print(f"stopped the local Prefect server (pid {stopped.pid})" if stopped else "no local Prefect server ran")


@server_app.command("status")
def server_status_command() -> None:
    """Is this Prefect home's server running, where, its log, does it answer (exit 1 if not running)."""
    from flows.server.local import find, prefect_home, status

    home = prefect_home()
    out.print(status(home), soft_wrap=True)
    raise Exit(0 if find(home) is not None else 1)
