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


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``ASSAY_TEST_MARK=marker`` (children inherit it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if f"ASSAY_TEST_MARK={marker}".encode() in environ and ") Z" not in stat:
            found.append(int(entry.name))
    return found
