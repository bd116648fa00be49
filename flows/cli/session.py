"""The command running now: its consoles, its interrupt guard, and the run it recorded.

Every command module writes through ``out`` and ``err`` and reads the guard
here; ``flows.cli.main`` installs the guard and turns ``Exit`` into the code.
"""

from __future__ import annotations

import os
from dataclasses import replace

from rich.console import Console

from fixtures_core.records.rundoc import RunResult
from fixtures_core.runs.close import record
from fixtures_core.runs.options import RunOptions
from fixtures_core.verdicts.run import errored
from flows.cli.interrupts import InterruptGuard

out = Console(highlight=False, markup=False)  # names and labels are text, never markup
if not out.is_terminal and "COLUMNS" not in os.environ:
    # CI logs: wide enough for the table, never wrapped at 80
    out = Console(highlight=False, markup=False, width=120)
err = Console(stderr=True, highlight=False, markup=False, soft_wrap=True)
guards: list[InterruptGuard] = []  # the guard of the command running now (main() pushes, pops)
# The run this command recorded (and its options), from its report until the process exits: a
# signal in that span records it again as ERR, so that run.json and the exit code (2) agree.
closing: list[tuple[RunResult, RunOptions]] = []


class Exit(Exception):
    """Carry an exit code out of a command without click's own handling."""

    def __init__(self, code: int) -> None:
        self.code = code


def current_guard() -> InterruptGuard:
    """The guard of the running command; a fresh one (no handlers) when called outside ``main``."""
    return guards[-1] if guards else InterruptGuard()


def say_plain(line: str) -> None:
    """A line of its own on stderr, as it is."""
    err.print(line)


def say(message: str) -> None:
    """A progress line on stderr (e.g. while the local Prefect server starts)."""
    err.print(f"assay: {message}")


def recorded_as_interrupted(run: RunResult, options: RunOptions, signal_name: str) -> RunResult:
    """The run written again as ERR: an interrupt came after its samples had finished.

    Its report files are written again too; a GitHub step summary, which is
    appended to, is not.
    """
    if run.stopped == "cancelled":
        return run
    was = f" (it was {run.verdict.shown})" if run.status != "ERR" else ""
    marked = replace(errored(run, f"interrupted by {signal_name} while the run closed{was}"), stopped="cancelled")
    record(marked, options)
    return marked
