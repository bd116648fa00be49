"""The ``assay`` console script: hold interrupts first, then import the command line (slow)."""

from __future__ import annotations


def cli() -> None:
    """``assay ...``: an interrupt while the imports run exits 2 with one line, never a traceback."""
    from flows.cli.start_up import hold

    hold()
    from flows.cli.streams import fill_closed

    fill_closed()  # a closed stdout or stderr gets /dev/null before any file is opened
    from flows.cli.main import cli as run_cli

    run_cli()
