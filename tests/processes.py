"""Test helpers about processes: is a PID gone, wait (bounded) until it is."""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def gone_soon(pid: int) -> bool:
    """Poll (bounded, not a timing assertion) until ``pid`` is gone; SIGKILL delivery is asynchronous."""
    for _ in range(250):
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return False
