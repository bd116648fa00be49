"""The first thing an assay command does: hold SIGINT, SIGTERM and SIGHUP until its own handlers take over.

From ``hold`` until ``main`` installs its ``InterruptGuard`` (through the slow
imports: typer, rich, Prefect), any of the three ends the process at once with
exit 2 and one line: nothing has started. Only ``os`` and ``signal`` are
imported here (the interpreter has loaded ``os`` already), so the guard holds
as soon as assay's first module runs: ``flows.run`` (``python -m flows.run``)
and ``flows.cli.launch`` (the ``assay`` script) call ``hold`` before importing
anything else.

Before that, the interpreter starts and runs ``site`` (its ``.pth`` files):
no code of assay's runs yet, and a signal ends the process its own way (SIGTERM
and SIGHUP by the signal, exit 143 and 129 in a shell; SIGINT by the signal, or
with Python's ``KeyboardInterrupt`` once Python handles it). That window is
measured by ``bench/start_up_signals.py``. Whoever starts assay can close it:
a signal blocked when assay starts (``env --block-signal=INT,TERM,HUP assay
...``) waits, and ``hold`` unblocks the three once its handlers are in place,
so a signal sent at any moment reaches them.
"""

from __future__ import annotations

import os
import signal

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupted(signum: int, _frame: object) -> None:
    """One line on stderr, written directly (nothing else is set up yet), and exit 2 at once."""
    line = f"error: interrupted by {signal.Signals(signum).name} while starting; nothing ran\n"
    try:  # noqa: SIM105 - not contextlib: one import fewer before the guard holds
        os.write(2, line.encode())
    except OSError:
        pass  # a closed stderr: the exit code still says it
    os._exit(2)


def hold() -> None:
    """Until ``main`` takes over, SIGINT, SIGTERM and SIGHUP exit 2 with one line; a blocked one arrives now."""
    for signum in SIGNALS:
        try:
            signal.signal(signum, _interrupted)
        except (ValueError, OSError):  # not the main thread, or an embedding that forbids it
            return
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
