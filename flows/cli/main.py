"""``main(argv) -> int``: the assay command line on one argument list, and its exit code.

Every AssayError becomes one line on stderr and exit code 2, never a
traceback. A usage error prints the usage line and the problem, exit 2.
Interrupts follow ``flows.cli.interrupts``: any of them ends in exit 2.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

import click
import typer

from fixtures_core.errors import AssayError, ValidationFailed
from fixtures_core.execution.containment import leave_quietly
from fixtures_core.runs.options import store_for
from flows.cli.app import SUBCOMMANDS, app
from flows.cli.interrupts import Interrupted, InterruptGuard, exit_now
from flows.cli.session import Exit, closing, err, guards, recorded_as_interrupted
from flows.cli.streams import GuardedStream, failure_line, guarded

_CLICK_ERRORS: tuple[type[Exception], ...] = (
    click.ClickException,
    getattr(typer, "TyperException", click.ClickException),
)
_ABORTS: tuple[type[Exception], ...] = (click.exceptions.Abort, getattr(typer, "Abort", click.exceptions.Abort))


def main(argv: Sequence[str] | None = None, *, last: bool = False) -> int:
    """Run the CLI on ``argv`` and return the exit code.

    SIGINT, SIGTERM and SIGHUP are assay's while it runs; inside another
    program they are given back afterwards, while ``last`` (the process ends
    after this) keeps them so that a signal during shutdown still exits 2.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    guard = InterruptGuard(on_exit=_interrupted_while_exiting)
    guard.install()
    guards.append(guard)
    closing.clear()
    # A closed, full or broken stdout or stderr never changes the exit code (``flows.cli.streams``).
    with guarded(keep=last) as (stdout, _stderr):
        try:
            try:
                code = _invoke(lambda: app(args=args, prog_name="assay", standalone_mode=False), args)
                guard.returned()  # a signal from here on is recorded, not raised: nothing would catch it
            except Interrupted as interrupt:  # raised past every handler of the command: after its report
                guard.returned()
                code = _ended_by(interrupt)
            _say_what_output_lost(stdout)
            if last and guard.stopped_at_once:
                # Stopped at once: the run's threads may still be inside C extensions, and interpreter
                # shutdown would tear them down mid-call (an abort, not exit 2). Every sample is dead;
                # the watchdog stops what assay started besides (a temporary Prefect server).
                exit_now(code=2)
        finally:
            guards.remove(guard)
            if last:
                guard.exiting()
            else:
                guard.restore()
    # Read after the guard changed hands: a signal until then is counted here, one after it exits 2 at once.
    return 2 if guard.interrupted else code


def _say_what_output_lost(stdout: GuardedStream) -> None:
    """One line on stderr when the report could not be written whole (and where the run's is)."""
    stdout.flush()
    lost = failure_line(stdout)
    if lost is None:
        return
    recorded = f"; the report is in {store_for(closing[0][1]).run_file(closing[0][0].run_id)}" if closing else ""
    err.print(f"assay: {lost}{recorded}", soft_wrap=True)


def module_main(argv: Sequence[str] | None = None, *, last: bool = False) -> int:
    """``python -m flows.run PATH...`` means ``assay run PATH...``."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SUBCOMMANDS and args[0] not in ("-h", "--help"):
        args = ["run", *args]
    return main(args, last=last)


def _invoke(call: Callable[[], object], args: Sequence[str] = ()) -> int:
    try:
        returned = call()
    except Exit as done:
        return done.code
    except Interrupted as interrupt:
        return _ended_by(interrupt)
    except ValidationFailed as exc:
        for error in exc.errors:
            err.print(f"error: {error}")
        return 2
    except AssayError as exc:
        err.print(f"error: {exc}")
        return 2
    except _CLICK_ERRORS as exc:
        _usage_error(exc, args)
        return 2
    except _ABORTS:  # end of input where a prompt wanted an answer
        err.print("error: aborted")
        return 2
    except KeyboardInterrupt:
        err.print("error: interrupted")
        return 2
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        err.print(f"error: {where}{exc.strerror or exc}")
        return 2
    except Exception as exc:  # a bug: one line, exit 2 (an error, never "fail"); ASSAY_DEBUG=1 shows the traceback
        if os.environ.get("ASSAY_DEBUG"):
            raise
        err.print(f"error: internal error: {type(exc).__name__}: {exc} (ASSAY_DEBUG=1 shows where)")
        return 2
    # typer returns an exit code instead of raising: 0 after --help, 130 for a KeyboardInterrupt
    if isinstance(returned, int) and not isinstance(returned, bool) and returned != 0:
        return 2
    return 0


def _ended_by(interrupt: Interrupted) -> int:
    """One line for an interrupt that ended the command; a run it had recorded is recorded again as
    ERR (the signal came after its report began: the exit code is 2, and so is run.json's answer)."""
    if closing:
        closing[:] = [(recorded_as_interrupted(*closing[0], interrupt.signal_name), closing[0][1])]
    err.print(f"error: {interrupt.message}")
    return 2


def _interrupted_while_exiting(signal_name: str) -> str | None:
    """The line for a signal after the command returned, when its run had to be recorded again as ERR."""
    if not closing or closing[0][0].stopped == "cancelled":  # no run, or one recorded as interrupted
        return None
    closing[:] = [(recorded_as_interrupted(*closing[0], signal_name), closing[0][1])]
    return f"error: interrupted by {signal_name} while exiting; the run is recorded as ERR"


def _usage_error(exc: Exception, args: Sequence[str]) -> None:
    """The usage line of the command concerned, then the problem: two lines, exit 2."""
    context = getattr(exc, "ctx", None)
    usage = context.get_usage() if context is not None else _usage_of(args)
    err.print("usage: " + usage.removeprefix("Usage: ").strip())
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    err.print(f"error: {message or 'give a command: ' + ', '.join(_commands_of(context))}")


def _commands_of(context: object) -> Sequence[str]:
    """The subcommands of the group a usage error is about (``assay server``'s, or assay's own)."""
    group = getattr(context, "command", None)
    lister = getattr(group, "list_commands", None)
    return list(lister(context)) if callable(lister) else SUBCOMMANDS


def _usage_of(args: Sequence[str]) -> str:
    """The usage line of the subcommand named first in ``args`` (or of assay itself)."""
    group = typer.main.get_command(app)
    root = group.make_context("assay", [], resilient_parsing=True)
    name = args[0] if args and args[0] in SUBCOMMANDS else None
    lookup = getattr(group, "get_command", None)  # a group (of typer's click copy, or click's)
    command = lookup(root, name) if name is not None and lookup is not None else None
    if command is None:
        return root.get_usage()
    return str(command.make_context(name, [], parent=root, resilient_parsing=True).get_usage())


def cli() -> None:
    """Console-script entry point (``flows.cli.launch`` guards the imports before it)."""
    leave(main(last=True))


def leave(code: int) -> None:
    """Exit with ``code`` without the interpreter's shutdown once Prefect's logs and events are
    delivered: nothing is left to write (the run document is on disk), and during shutdown Python
    gives the signals back to their defaults, so a Ctrl-C there would end the process by the signal.

    A signal from here on exits 2 at once (``main(last=True)`` left its guard in place).
    """
    matrix = sys.modules.get("flows.flow.matrix")
    if matrix is None or matrix.deliver_before_exit():
        leave_quietly()
        exit_now(code=code)
    sys.exit(code)  # a temporary Prefect server of this process: Prefect's exit hook stops it
