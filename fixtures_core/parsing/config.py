"""Typed reading of configuration values (frontmatter, block yaml, table cells).

Each reader raises FixtureError naming the file, line and field.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from typing import cast

from fixtures_core.durations import parse_duration
from fixtures_core.errors import FixtureError
from fixtures_core.limits import MAX_REPEAT
from fixtures_core.redaction import pattern_problem
from fixtures_core.spec import AGGREGATES, DIRECTIONS, Aggregate, Daemon, Direction, MetricSpec, Redaction, Threshold
from fixtures_core.text import excerpt


class Where:
    """A position in a fixture file, used to build errors."""

    def __init__(self, path: str, line: int) -> None:
        self.path = path
        self.line = line

    def error(self, field: str | None, message: str) -> FixtureError:
        return FixtureError(self.path, self.line, message, field)


def read_repeat(value: object, where: Where, field: str = "repeat") -> int:
    """A repeat count: a whole number from 1 to ``MAX_REPEAT``."""
    number = _whole_number(value)
    if number is None or number < 1:
        raise where.error(field, f"must be a whole number >= 1, got {value!r}")
    if number > MAX_REPEAT:
        raise where.error(field, f"must be at most {MAX_REPEAT:,} samples, got {excerpt(repr(value), 40)}")
    return number


def read_timeout(value: object, where: Where, field: str = "timeout") -> float:
    """A row's total time budget in seconds."""
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise where.error(field, str(exc)) from None


def read_exit_code(value: object, where: Where, field: str = "exitCode") -> int:
    """An expected exit code (an integer)."""
    number = _whole_number(value, allow_negative=True)
    if number is None:
        raise where.error(field, f"must be an integer, got {value!r}")
    return number


DAEMON_KEYS = ("command", "ready")


def read_daemon(value: object, where: Where, field: str = "daemon") -> Daemon:
    """``daemon: COMMAND`` or ``daemon: {command: COMMAND, ready: 30s}`` (how long to wait for its port)."""
    place = f"{where.path}:{where.line}"
    if isinstance(value, str):
        command, ready = value, None
    elif isinstance(value, dict):
        unknown = sorted(str(k) for k in value if k not in DAEMON_KEYS)
        if unknown:
            raise where.error(f"{field}.{unknown[0]}", f"unknown key (known: {', '.join(DAEMON_KEYS)})")
        if "command" not in value:
            raise where.error(field, "needs command: the service to start (it gets its port as {{ .port }})")
        command, ready = read_string(value["command"], where, f"{field}.command"), value.get("ready")
    else:
        raise where.error(field, f"must be a command, or a map with command and ready, got {value!r}")
    if not command.strip():
        raise where.error(field, "the command is empty")
    if ready is None:
        return Daemon(command, place)
    return Daemon(command, place, read_timeout(ready, where, f"{field}.ready"))


def read_string(value: object, where: Where, field: str) -> str:
    """A scalar rendered as text (YAML numbers and booleans are accepted)."""
    if isinstance(value, (dict, list)) or value is None:
        raise where.error(field, f"must be a string, got {value!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_string_list(value: object, where: Where, field: str) -> tuple[str, ...]:
    """A list of scalars as text; a single scalar is a one-item list."""
    if isinstance(value, list):
        return tuple(read_string(item, where, field) for item in value)
    return (read_string(value, where, field),)


def read_env(value: object, where: Where, field: str = "env") -> dict[str, str]:
    """An environment map of names to text values."""
    if not isinstance(value, dict):
        raise where.error(field, f"must be a map of NAME: value, got {value!r}")
    return {str(k): read_string(v, where, f"{field}.{k}") for k, v in value.items()}


def read_skip(value: object) -> tuple[str | None, str | None]:
    """Gavel's ``skip``: (a reason to skip now, or a shell command that skips the row when it exits 0).

    ``true`` and ``false`` decide at once (they are what the shell commands of
    those names would answer); any other text is a command, as in Gavel.
    """
    if value is None or value is False:
        return None, None
    if value is True:
        return "skip: true", None
    text = str(value).strip()
    if text in ("", "false"):
        return None, None
    if text == "true":
        return "skip: true", None
    return None, text


def read_redaction(value: object, where: Where, item_lines: list[int], field: str = "redact") -> Redaction:
    """``redact:``: true/false (built-in masking on or off), or regexes masked on top of the built-in set."""
    if isinstance(value, bool):
        return Redaction(enabled=value)
    patterns = read_string_list(value, where, field)
    for index, pattern in enumerate(patterns):
        problem = pattern_problem(pattern)
        if problem is not None:
            line = item_lines[index] if index < len(item_lines) else where.line
            raise FixtureError(where.path, line, problem, f"{field}[{index}]" if isinstance(value, list) else field)
    return Redaction(patterns=patterns)


def reject_near_misses(keys: Mapping[str, int], known: tuple[str, ...], path: str) -> None:
    """A key one typo (or only letter case) away from a known key is almost surely a mistake, not a property."""
    by_lower = {k.lower(): k for k in known}
    for key, line in keys.items():
        if key in known:
            continue
        if key.lower() in by_lower:
            raise FixtureError(path, line, f"unknown key '{key}': the key is spelled '{by_lower[key.lower()]}'", key)
        close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.8)
        if close:
            raise FixtureError(path, line, f"unknown key '{key}' (did you mean '{by_lower[close[0]]}'?)", key)


METRIC_KEYS = ("name", "extract", "unit", "aggregate", "direction", "baseline", "threshold", "gate")
THRESHOLD_KEYS = ("min", "max", "regressionPercent", "regressionPoints")


def read_metrics(value: object, where: Where, item_lines: list[int], field: str = "metrics") -> tuple[MetricSpec, ...]:
    """A list of metric specs, each checked on its own (cross-row checks come later)."""
    if not isinstance(value, list):
        raise where.error(field, "must be a list of metric specs")
    specs = []
    for index, item in enumerate(value):
        line = item_lines[index] if index < len(item_lines) else where.line
        specs.append(_read_metric(item, Where(where.path, line), f"{field}[{index}]"))
    return tuple(specs)


def _read_metric(item: object, where: Where, field: str) -> MetricSpec:
    if not isinstance(item, dict):
        raise where.error(field, f"must be a map with name, extract and unit, got {item!r}")
    unknown = sorted(set(map(str, item)) - set(METRIC_KEYS))
    if unknown:
        raise where.error(f"{field}.{unknown[0]}", f"unknown metric key (known: {', '.join(METRIC_KEYS)})")
    for required in ("name", "extract", "unit"):
        if not item.get(required) and item.get(required) != 0:
            raise where.error(f"{field}.{required}", "is required")
    name = read_string(item["name"], where, f"{field}.name")
    label = f"metrics[{name}]"
    aggregate = item.get("aggregate", "mean")
    if aggregate not in AGGREGATES:
        raise where.error(f"{label}.aggregate", f"unknown aggregate {aggregate!r} (known: {', '.join(AGGREGATES)})")
    direction = item.get("direction", "none")
    if direction not in DIRECTIONS:
        raise where.error(f"{label}.direction", f"unknown direction {direction!r} (known: {', '.join(DIRECTIONS)})")
    gate = item.get("gate", True)
    if not isinstance(gate, bool):
        raise where.error(f"{label}.gate", f"must be true or false, got {gate!r}")
    baseline = item.get("baseline")
    threshold = read_threshold(item.get("threshold"), where, f"{label}.threshold")
    for key, limit in (
        ("regressionPercent", threshold.regression_percent),
        ("regressionPoints", threshold.regression_points),
    ):
        if limit is not None and direction == "none":
            raise where.error(
                f"{label}.threshold.{key}", "needs a direction (lower or higher) to know what worse means"
            )
    return MetricSpec(
        name=name,
        extract=read_string(item["extract"], where, f"{label}.extract"),
        unit=read_string(item["unit"], where, f"{label}.unit"),
        file=where.path,
        line=where.line,
        aggregate=cast(Aggregate, aggregate),
        direction=cast(Direction, direction),
        baseline=None if baseline is None else read_string(baseline, where, f"{label}.baseline"),
        threshold=threshold,
        gate=gate,
    )


def read_threshold(value: object, where: Where, field: str) -> Threshold:
    """A metric's limits: ``min``, ``max``, ``regressionPercent``, ``regressionPoints``."""
    if value is None:
        return Threshold()
    if not isinstance(value, dict):
        raise where.error(field, f"must be a map with min, max, regressionPercent or regressionPoints, got {value!r}")
    unknown = sorted(set(map(str, value)) - set(THRESHOLD_KEYS))
    if unknown:
        raise where.error(f"{field}.{unknown[0]}", f"unknown threshold key (known: {', '.join(THRESHOLD_KEYS)})")
    numbers = {key: _finite(value[key], where, f"{field}.{key}") for key in THRESHOLD_KEYS if key in value}
    low, high = numbers.get("min"), numbers.get("max")
    percent, points = numbers.get("regressionPercent"), numbers.get("regressionPoints")
    if low is not None and high is not None and low > high:
        raise where.error(field, f"min {low:g} is greater than max {high:g}")
    for key, limit in (("regressionPercent", percent), ("regressionPoints", points)):
        if limit is not None and limit < 0:
            raise where.error(f"{field}.{key}", f"must be >= 0, got {limit:g}")
    return Threshold(min=low, max=high, regression_percent=percent, regression_points=points)


def _finite(value: object, where: Where, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise where.error(field, f"must be a finite number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond a double's range
        raise where.error(field, "must be a finite number, got an integer too large for a double") from None
    if not math.isfinite(number):
        raise where.error(field, f"must be a finite number, got {value!r}")
    return number


_INTEGER = re.compile(r"-?[0-9]+")


def _whole_number(value: object, allow_negative: bool = False) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        number = int(value.strip())
    else:
        return None
    return number if allow_negative or number >= 0 else None
