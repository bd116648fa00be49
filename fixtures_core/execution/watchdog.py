"""The watchdog: a small process that kills what assay leaves behind when assay dies.

A SIGKILLed or OOM-killed assay runs no code, so something outside it must
act. ``containment`` starts one watchdog per assay process (its own session,
so a terminal's Ctrl-C or hang-up does not reach it) and tells it, over a
pipe, the scope of each run: an environment token every sample carries
(``ASSAY_SAMPLE_ID=<token>-<n>``) and the run's cgroup, if any. The watchdog
also notes assay's attached children (same session: the temporary Prefect
server, for one). When assay dies without saying goodbye (``bye`` at a normal
exit), the watchdog sends SIGTERM to all of that, waits a short grace, sends
SIGKILL, removes the cgroups, and exits. After ``bye`` it does the same for
the runs still open (none, normally), sparing the attached children.

Run as a program (``python -I -S watchdog.py OWNER_PID``) it imports only the
standard library and its sibling ``procfs``, so it starts in milliseconds.

Protocol, one line each: ``scope TOKEN [CGROUP_DIR]``, ``end TOKEN``, ``bye``.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

try:
    from fixtures_core.execution import procfs
except ImportError:  # run as a program: the package is not importable, its sibling module is
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import procfs  # type: ignore[no-redef]

TICK_S = 0.1  # how often the owner's liveness and children are checked
GRACE_S = 0.5  # SIGTERM, then this long, then SIGKILL: everything is gone well within 2 s
TOKEN_VARIABLE = b"ASSAY_SAMPLE_ID="


def serve(owner: int) -> None:
    """Watch ``owner`` until it says ``bye`` (return quietly) or dies (clean up after it).

    The owner may already be dead when this starts (killed a moment after it
    started the watchdog): what it wrote before is still in the pipe, so the
    pipe is always read to its end before cleaning up.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    first = procfs.stat(owner)
    scopes: dict[str, str] = {}  # token -> the run's cgroup directory ("" when it has none)
    attached: dict[int, int] = {}  # owner's children in its own session: pid -> starttime
    pending = b""
    while True:
        owner_alive = first is not None and procfs.alive(owner, first.starttime)
        if owner_alive and first is not None:
            _note_attached(owner, first.session, attached)
        ready, _, _ = select.select([0], [], [], TICK_S if owner_alive else 0)
        data = os.read(0, 65536) if ready else b""
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if _apply(line.decode("utf-8", "replace").split(), scopes):
                clean_up(scopes, {})  # a normal exit: only runs it never closed are left to stop
                return
        if ready and not data:
            break  # the owner's end of the pipe closed: it exited or was killed
        if not owner_alive and not ready:
            break  # gone, and nothing more to read (a forked child may still hold the pipe)
    clean_up(scopes, still_attached(attached, first.session) if first is not None else {})


def _apply(words: list[str], scopes: dict[str, str]) -> bool:
    """Apply one command; True on ``bye``."""
    if words[:1] == ["bye"]:
        return True
    if words[:1] == ["scope"] and len(words) >= 2:
        scopes[words[1]] = words[2] if len(words) > 2 else ""
    elif words[:1] == ["end"] and len(words) == 2:
        scopes.pop(words[1], None)
    return False


def _note_attached(owner: int, session: int, attached: dict[int, int]) -> None:
    for pid in procfs.children(owner):
        if pid == os.getpid() or pid in attached:
            continue
        found = procfs.stat(pid)
        if found is not None and found.session == session:
            attached[pid] = found.starttime
    kept = still_attached(attached, session)
    attached.clear()
    attached.update(kept)


def still_attached(attached: dict[int, int], session: int) -> dict[int, int]:
    """The noted children alive and still in the owner's session.

    A child started in a session of its own (the lease guard) is seen in the
    owner's between its fork and its ``setsid``; it is not the owner's to stop.
    """
    kept = {}
    for pid, start in attached.items():
        found = procfs.stat(pid)
        if found is not None and not found.zombie and (found.starttime, found.session) == (start, session):
            kept[pid] = start
    return kept


def clean_up(scopes: dict[str, str], attached: dict[int, int]) -> None:
    """SIGTERM everything left, a short grace, SIGKILL, then remove the cgroups."""
    tokens = [TOKEN_VARIABLE + token.encode() + b"-" for token in scopes]
    cgroups = [path for path in scopes.values() if path]
    _signal_all(tokens, cgroups, attached, signal.SIGTERM)
    give_up = time.monotonic() + GRACE_S
    while time.monotonic() < give_up and _anything_left(tokens, cgroups, attached):
        time.sleep(0.02)
    for _ in range(50):
        _signal_all(tokens, cgroups, attached, signal.SIGKILL)
        if not _anything_left(tokens, cgroups, attached):
            break
        time.sleep(0.02)
    for path in cgroups:
        _remove_tree(path)


def _signal_all(tokens: list[bytes], cgroups: list[str], attached: dict[int, int], signum: int) -> None:
    if signum == signal.SIGKILL:
        for path in cgroups:
            with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.kill"), "w") as handle:
                handle.write("1")
    targets = set(_cgroup_pids(cgroups)) | set(_carrying(tokens))
    targets |= {pid for pid, start in attached.items() if procfs.alive(pid, start)}
    targets.discard(os.getpid())
    for pid in targets:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)


def _anything_left(tokens: list[bytes], cgroups: list[str], attached: dict[int, int]) -> bool:
    if any(procfs.alive(pid) for pid in _cgroup_pids(cgroups)):
        return True
    if any(procfs.alive(pid, start) for pid, start in attached.items()):
        return True
    return any(procfs.alive(pid) for pid in _carrying(tokens))


def _carrying(tokens: list[bytes]) -> list[int]:
    """Every process whose environment holds one of the run tokens (a prefix of ``ASSAY_SAMPLE_ID``)."""
    if not tokens:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            pid = int(entry)
            if any(procfs.environ_has(pid, token) for token in tokens):
                found.append(pid)
    return found


def _cgroup_pids(cgroups: list[str]) -> list[int]:
    pids: list[int] = []
    for path in cgroups:
        for folder, _dirs, _files in os.walk(path):
            with contextlib.suppress(OSError, ValueError), open(os.path.join(folder, "cgroup.procs")) as handle:
                pids.extend(int(p) for p in handle.read().split())
    return pids


def _remove_tree(path: str) -> None:
    for folder, _dirs, _files in os.walk(path, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
