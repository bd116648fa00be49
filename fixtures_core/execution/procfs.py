"""Reading Linux's process table (``/proc``): children, state, groups, environment.

Every reader answers for a process that may vanish while it is read: a gone
process gives None or an empty answer, never an exception.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` that containment needs.

    ``starttime`` (clock ticks since boot) makes ``(pid, starttime)`` a
    process's identity: a pid can be reused, the pair cannot.
    """

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    starttime: int

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def pids() -> list[int]:
    """Every process this one can see."""
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def stat(pid: int) -> ProcStat | None:
    """The process's stat line, or None when it is gone."""
    fields = stat_fields(pid)
    if fields is None:
        return None
    try:
        return ProcStat(pid, fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]))
    except (IndexError, ValueError):
        return None


def stat_fields(pid: int) -> list[bytes] | None:
    """Every field of ``/proc/PID/stat`` after the command name, or None when it is gone.

    Index 0 is field 3 (``state``) of proc(5), so field N is at index N - 3.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name is in parentheses and may itself hold spaces or ')'.
    return raw[raw.rfind(b")") + 2 :].split()


def children(pid: int) -> list[int]:
    """Direct children of every thread of ``pid`` (an orphan is adopted by one thread of its reaper)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/children", "rb") as handle:
                found.extend(int(p) for p in handle.read().split())
        except OSError:
            continue
    return found


def adopted(pid: int) -> list[int]:
    """Children of the main thread of ``pid``: where the kernel puts the orphans a subreaper adopts.

    An orphan goes to the first live thread of its reaper, which for a
    Python process is the main thread; reading one file instead of one per
    thread keeps the per-sample cost of containment low.
    """
    try:
        with open(f"/proc/{pid}/task/{pid}/children", "rb") as handle:
            return [int(p) for p in handle.read().split()]
    except OSError:
        return children(pid)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` in the process tree, parents before their children."""
    found: list[int] = []
    frontier = children(pid)
    while frontier:
        found.extend(frontier)
        frontier = [child for parent in frontier for child in children(parent)]
    return found


def ticks_now() -> int:
    """The time since boot in clock ticks: comparable with ``ProcStat.starttime``."""
    with open("/proc/uptime", "rb") as handle:
        return int(float(handle.read().split()[0]) * os.sysconf("SC_CLK_TCK"))


def environ_has(pid: int, entry: bytes) -> bool:
    """True when the process's initial environment holds ``entry`` (``b"NAME=value"``), or a prefix of one."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data.startswith(entry) or b"\0" + entry in data


def environ_value(pid: int, name: bytes) -> bytes | None:
    """The value of ``name`` in the process's initial environment (the first one), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    prefix = name + b"="
    for entry in data.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :]
    return None


def cgroup_of(pid: int) -> str | None:
    """The process's cgroup v2 path (``/a/b``), also for a zombie; None when unknown."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            return line[3:].removesuffix(" (deleted)")
    return None


def alive(pid: int, starttime: int | None = None) -> bool:
    """True while ``pid`` runs (not a zombie) and, when given, is still the process started at ``starttime``."""
    found = stat(pid)
    return found is not None and not found.zombie and (starttime is None or found.starttime == starttime)


def started_at(pid: int) -> float | None:
    """When the process started (seconds since the epoch), or None when it is gone or a zombie."""
    found = stat(pid)
    if found is None or found.zombie:
        return None
    try:
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
    except (OSError, StopIteration, ValueError):
        return None
    return boot + found.starttime / os.sysconf("SC_CLK_TCK")


def argv(pid: int) -> list[str] | None:
    """The process's command line, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    return raw.decode(errors="replace").split("\0")
