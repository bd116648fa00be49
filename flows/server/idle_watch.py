"""The idle stop's companion process: ``python -m flows.server.idle_watch HOME SECONDS``.

It watches one Prefect home's server and stops it once nobody has used it for
SECONDS (the rules are ``flows.server.idle_stop``'s). It sits above both the
idle stop and the server, which start it and never import it.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from flows.server.credentials import CredentialsError, read_secret
from flows.server.idle_stop import PID_FILE, STAMP, companion_pid, in_use
from flows.server.local import find, serves_home, stop


def watch(home: Path, after: float) -> None:
    """Stop the home's server once it has been unused for ``after`` seconds; return when it is gone.

    Idle time counts from the last run's use, and never from before the server first answered: the run
    that started it waits for that answer before it can use it.
    """
    every = max(1.0, min(60.0, after / 3))
    answered_at: float | None = None
    while True:
        time.sleep(every)
        server = find(home)
        if server is None:
            return
        if answered_at is None:
            if not serves_home(server):
                continue  # still starting
            answered_at = time.time()
        try:
            used_at = max((home / STAMP).stat().st_mtime, answered_at)
        except OSError:
            used_at = answered_at
        unused = time.time() - used_at
        if unused >= after and not in_use(server.api_url, _secret(home)):
            stop(home)
            return


def _secret(home: Path) -> str | None:
    """The home's API secret; None when it cannot be read (the server then answers 401: not known to be idle)."""
    try:
        return read_secret(home)
    except CredentialsError:
        return None


def main(argv: list[str]) -> int:
    """Watch ``HOME`` for ``SECONDS``; the pid file goes with this process."""
    home, after = Path(argv[0]), float(argv[1])
    try:
        watch(home, after)
    finally:
        if companion_pid(home) == os.getpid():
            (home / PID_FILE).unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
