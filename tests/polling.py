"""Bounded polling for tests: wait until a condition holds; only a hang fails, not a slow machine."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], object], within_s: float = 10.0, every_s: float = 0.01) -> bool:
    """Whether ``condition()`` holds within ``within_s`` seconds, looked at every ``every_s``."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(every_s)
    return True


def wait_until(condition: Callable[[], object], what: str, within_s: float = 60.0) -> None:
    """``until``, failing the test with ``what`` never happened; every 0.1 s, as conditions ask the API."""
    if not until(condition, within_s, every_s=0.1):
        raise AssertionError(f"never happened: {what}")
