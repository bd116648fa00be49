"""Bounded polling for tests: wait until a condition holds; only a hang fails, not a slow machine."""

from __future__ import annotations

import time
from collections.abc import Callable


def until(condition: Callable[[], bool], within_s: float = 10.0) -> bool:
    """Whether ``condition()`` holds within ``within_s`` seconds, polled every 10 ms."""
    deadline = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
