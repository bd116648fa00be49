"""The ``assay`` console script: guard interrupts first, then import the command line (slow)."""

from __future__ import annotations


def cli() -> None:
    """``assay ...``: an interrupt while the imports run exits 2 with one line, never a traceback."""
    from flows.cli.interrupts import guard_start_up
    from flows.cli.streams import fill_closed

    guard_start_up()
    fill_closed()  # a closed stdout or stderr gets /dev/null before any file is opened
    from flows.cli.main import cli as run_cli

    run_cli()
