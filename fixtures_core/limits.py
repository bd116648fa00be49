"""Limits on what assay reads, so hostile input meets a clear error instead of Python's limits.

Python's own limits (the recursion limit, memory, the 4300-digit integer
rule) surface as RecursionError, MemoryError or a hang: nothing a user can
act on. Every input assay reads has a bound here instead, and crossing it is
an error that names the input and the bound.

* a fixture file: a regular file (not a FIFO or a device) of ``MAX_FIXTURE_BYTES``;
* fixture YAML (frontmatter, block yaml): ``MAX_YAML_DEPTH`` levels and
  ``MAX_YAML_NODES`` values with aliases expanded, no alias that refers to itself;
* a sample's stdout parsed as JSON: ``MAX_STDOUT_JSON_DEPTH`` levels;
* a run document (a baseline, a saved run): a regular file of ``MAX_RUN_BYTES``,
  ``MAX_RUN_JSON_DEPTH`` levels.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

MAX_FIXTURE_BYTES = 16 * 1024 * 1024
MAX_YAML_DEPTH = 32
MAX_YAML_NODES = 100_000
MAX_STDOUT_JSON_DEPTH = 256
MAX_RUN_BYTES = 512 * 1024 * 1024
MAX_RUN_JSON_DEPTH = 64  # a run document is ~8 levels deep, plus properties of at most MAX_YAML_DEPTH
MAX_REPEAT = 100_000  # samples of one row (repeat, --repeat, k): a paid agent CLI never runs anywhere near
MAX_INT_DIGITS = 4300  # Python's own limit on reading an int from text (sys.get_int_max_str_digits)
MAX_SLOTS = 1000  # rows or samples in flight (--parallel, --concurrency): each is a thread, and a process
MAX_CAPTURE_BYTES = 64 * 1024 * 1024  # of one stream of one sample kept in memory (the capture cap's bound)
MAX_SEED = 2**63 - 1  # a judge's seed: what every consumer of a run document can hold in a signed 64-bit integer


class LimitExceeded(ValueError):
    """An input beyond one of assay's limits; the message names the limit."""


def loads_json(text: str, max_depth: int, parse_int: Callable[[str], object] | None = None) -> object:
    """``json.loads`` that refuses nesting beyond ``max_depth`` levels and integers of more than
    ``MAX_INT_DIGITS`` digits (raises LimitExceeded, a ValueError)."""
    try:
        value = json.loads(text, parse_int=parse_int or read_int)
    except RecursionError:
        raise LimitExceeded(f"JSON nested deeper than {max_depth} levels") from None
    if json_depth(value) > max_depth:
        raise LimitExceeded(f"JSON nested deeper than {max_depth} levels")
    return value


def read_int(digits: str) -> int:
    """An integer from its digits; LimitExceeded beyond ``MAX_INT_DIGITS`` digits."""
    if len(digits) > MAX_INT_DIGITS:  # Python counts a sign as a digit too
        raise LimitExceeded(f"an integer of more than {MAX_INT_DIGITS} digits")
    return int(digits)


def json_depth(value: object) -> int:
    """How many levels of arrays and objects ``value`` nests (a scalar is 0); no recursion."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def read_regular_file(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, checked before reading.

    A FIFO would block forever and a device (``/dev/zero``) never ends:
    both are refused without reading. Raises LimitExceeded, or OSError.
    """
    # O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting for one.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise LimitExceeded(f"{_kind(info.st_mode)}, not a regular file: refused without reading it")
        if info.st_size > max_bytes:
            raise LimitExceeded(f"{what} is {info.st_size:,} bytes, more than the limit of {max_bytes:,}")
        chunks = []
        remaining = max_bytes + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    finally:
        os.close(descriptor)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise LimitExceeded(f"{what} grew past the limit of {max_bytes:,} bytes while it was read")
    return data


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a special file"
