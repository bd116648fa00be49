"""Test helpers about processes: is a PID gone, wait (bounded) until it is."""

from __future__ import annotations

import time

from fixtures_core.execution import procfs


def is_gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie nobody reaped yet)."""
    return not procfs.alive(pid)


def gone_soon(pid: int) -> bool:
    """Poll (bounded, not a timing assertion) until ``pid`` is gone; SIGKILL delivery is asynchronous."""
    for _ in range(250):
        if is_gone(pid):
            return True
        time.sleep(0.02)
    return False


def processes_with(marker: str) -> list[int]:
    """Live processes whose environment holds ``ASSAY_TEST_MARK=marker`` (children inherit it)."""
    entry = f"ASSAY_TEST_MARK={marker}".encode()
    return [pid for pid in procfs.pids() if procfs.environ_has(pid, entry) and procfs.alive(pid)]
