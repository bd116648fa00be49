"""The ``assay`` command group: every subcommand by its name, in one place."""

from __future__ import annotations

import typer

from flows.cli.offline_commands import (
    bless_command,
    compare_command,
    history_command,
    report_command,
    retire_command,
    show_command,
    trends_command,
    validate_command,
)
from flows.cli.run_commands import recheck_command, rejudge_command, run_command
from flows.cli.server_commands import server_app

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Run Markdown fixture matrices; one verdict.")
app.command("run")(run_command)
app.command("validate")(validate_command)
app.command("bless")(bless_command)
app.command("compare")(compare_command)
app.command("show")(show_command)
app.command("report")(report_command)
app.command("history")(history_command)
app.command("trends")(trends_command)
app.command("rejudge")(rejudge_command)
app.command("retire")(retire_command)
app.command("recheck")(recheck_command)
app.add_typer(server_app, name="server")

SUBCOMMANDS = (
    "run",
    "validate",
    "bless",
    "compare",
    "show",
    "report",
    "history",
    "trends",
    "rejudge",
    "recheck",
    "retire",
    "server",
)
