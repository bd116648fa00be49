"""``assay server start|stop|status``: the local Prefect server of this Prefect home."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from flows.cli.session import Exit, out, say

server_app = typer.Typer(
    no_args_is_help=True,
    help="The local Prefect server ad-hoc runs use (Prefect's own background server of PREFECT_HOME).",
)


@server_app.command("start")
def server_start_command(
    port: Annotated[
        Optional[int], typer.Option("--port", help="Port (default: 4200 when free, else a free one).")
    ] = None,
) -> None:
    """Start this Prefect home's background server (or find it running) and wait until it answers."""
    from flows.server.local import ensure_started, prefect_home

    found = ensure_started(prefect_home(), port, say=say)
    out.print(f"local Prefect server: pid {found.pid}, API {found.api_url}, UI {found.ui_url}", soft_wrap=True)


@server_app.command("stop")
def server_stop_command() -> None:
    """Stop this Prefect home's background server and wait until it is gone."""
    from flows.server.local import prefect_home, stop

    stopped = stop(prefect_home())
    out.print(f"stopped the local Prefect server (pid {stopped.pid})" if stopped else "no local Prefect server ran")


@server_app.command("status")
def server_status_command() -> None:
    """Is this Prefect home's background server running, where, and does it answer (exit 1 if not running)."""
    from flows.server.local import find, prefect_home, status

    home = prefect_home()
    out.print(status(home))
    raise Exit(0 if find(home) is not None else 1)
