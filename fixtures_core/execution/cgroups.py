"""A cgroup v2 per sample, where this machine lets assay create one.

A cgroup holds every process a sample starts, whatever it does to leave its
process group or session (``setsid``, double forks, ``nohup &``), and the
kernel kills them all at once (``cgroup.kill``). assay creates its cgroups
below the one it runs in::

    <its own cgroup>/assay-<pid>-<token>/        one per run (Containment)
    <its own cgroup>/assay-<pid>-<token>/s<N>/   one per sample

That needs a writable cgroup v2 hierarchy: root, or a cgroup delegated to the
user (a systemd user service or ``systemd-run --user --scope``). Elsewhere
(read-only ``/sys/fs/cgroup``, cgroup v1 only, containers) ``cgroup_base``
answers None and containment falls back to process groups, the subreaper and
an environment token (see ``containment``). ``ASSAY_CGROUPS=off`` forces
that fallback.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path

from fixtures_core.execution import procfs

SWITCH = "ASSAY_CGROUPS"
_probe_lock = threading.Lock()
_probed: dict[str, tuple[Path, str] | None] = {}


def cgroup_base() -> tuple[Path, str] | None:
    """Where assay may create cgroups: (directory, its path as ``/proc/PID/cgroup`` shows it), or None."""
    if os.environ.get(SWITCH, "").strip().lower() in ("0", "off", "no", "false"):
        return None
    with _probe_lock:
        key = str(os.getpid())  # a forked child probes again
        if key not in _probed:
            _probed[key] = _probe()
        return _probed[key]


def _probe() -> tuple[Path, str] | None:
    mount = _cgroup2_mount()
    own = procfs.cgroup_of(os.getpid())
    if mount is None or own is None:
        return None
    base = Path(mount + own.rstrip("/")) if own != "/" else Path(mount)
    # Moving a process between two cgroups needs write access to their common ancestor's cgroup.procs.
    if not (base / "cgroup.procs").is_file() or not os.access(base / "cgroup.procs", os.W_OK):
        return None
    probe = base / f"assay-probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return None
    try:
        usable = os.access(probe / "cgroup.procs", os.W_OK)
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()
    return (base, own.rstrip("/") or "/") if usable else None


def _cgroup2_mount() -> str | None:
    """The mount point of the cgroup v2 hierarchy (``/sys/fs/cgroup`` or, on hybrid systems, ``.../unified``)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if after.split()[:1] == ["cgroup2"] and len(fields) >= 5 and fields[3] == "/":
            return fields[4].replace("\\040", " ")
    return None


class Cgroup:
    """One cgroup directory assay created: add processes, list, signal, kill, remove."""

    def __init__(self, path: Path, shown: str) -> None:
        self.path = path
        self.shown = shown  # as /proc/PID/cgroup names it, to recognise its zombies

    @classmethod
    def create(cls, parent: Path, parent_shown: str, name: str) -> Cgroup:
        """Make ``parent/name``; raises OSError when the kernel refuses."""
        path = parent / name
        path.mkdir()
        return cls(path, f"{parent_shown.rstrip('/')}/{name}")

    def child(self, name: str) -> Cgroup:
        return Cgroup.create(self.path, self.shown, name)

    def add(self, pid: int) -> bool:
        """Move a process in; False when it is gone or the kernel refuses."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except OSError:
            return False
        return True

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def populated(self) -> bool:
        """True while a live process is in it or below it (zombies do not count)."""
        try:
            events = (self.path / "cgroup.events").read_text()
        except OSError:
            return False
        return "populated 1" in events

    def signal(self, signum: int) -> list[int]:
        """Send ``signum`` to every process in it; return the pids signalled."""
        pids = self.pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        return pids

    def kill(self) -> None:
        """SIGKILL everything in it and below it, new forks included (``cgroup.kill``, Linux 5.14+)."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            for _ in range(100):  # an older kernel: kill what is listed until nothing is
                if not self.signal(signal.SIGKILL):
                    break

    def remove(self, wait_s: float = 2.0) -> bool:
        """Remove the directory once it is empty (cgroups made inside it first); False when it stays."""
        give_up = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                for child in self._children():  # a sample (or a run) may have made cgroups of its own
                    child.remove(max(give_up - time.monotonic(), 0.0))
                if time.monotonic() >= give_up:
                    return False
                time.sleep(0.005)

    def _children(self) -> list[Cgroup]:
        try:
            entries = [e for e in self.path.iterdir() if e.is_dir()]
        except OSError:
            return []
        return [Cgroup(e, f"{self.shown}/{e.name}") for e in entries]
