"""Go-style durations (``90s``, ``20m``, ``1h30m``, ``500ms``) or integer seconds."""

from __future__ import annotations

import math
import re

_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_SECONDS = re.compile(r"[0-9]+")
_EXPECTED = "expected a duration such as 90s, 20m or 1h30m"


def parse_duration(value: object) -> float:
    """Return seconds for a duration value; raise ValueError with the accepted forms."""
    if isinstance(value, bool):
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    if isinstance(value, int):
        seconds = float(value) if abs(value) < 2**63 else math.inf  # float() of a huge int overflows
    elif isinstance(value, float):
        seconds = value
    elif isinstance(value, str) and _SECONDS.fullmatch(value.strip()):
        seconds = float(value.strip())
    elif isinstance(value, str):
        seconds = _parse_go_duration(value.strip())
    else:
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"a duration must be positive and finite, got {value!r}")
    return seconds


def _parse_go_duration(text: str) -> float:
    pos, total = 0, 0.0
    while pos < len(text):
        match = _PART.match(text, pos)
        if match is None:
            raise ValueError(f"{_EXPECTED}, got {text!r}")
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not text:
        raise ValueError(f"{_EXPECTED}, got an empty value")
    return total


def format_duration(seconds: float) -> str:
    """Render seconds the way a fixture would write them (``2s``, ``1m30s``)."""
    if seconds < 1:
        return f"{seconds * 1000:g}ms"
    minutes, secs = divmod(seconds, 60)
    if minutes == 0:
        return f"{secs:g}s"
    return f"{int(minutes)}m{secs:g}s" if secs else f"{int(minutes)}m"
