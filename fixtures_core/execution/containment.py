"""Contain every process a sample starts: it dies with the sample, and with assay.

What a sample's processes are, strongest evidence first:

1. **its cgroup** (cgroup v2, where assay may create one: ``cgroups``): the
   kernel tracks every descendant, daemons included, and kills them at once;
2. **its process group**: the leader starts a new session, so ``killpg``
   reaches everything that stayed in it;
3. **its token**: every sample's environment holds ``ASSAY_SAMPLE_ID``
   (unique per sample: a secret of 128 random bits per run, then the sample's
   number). assay is a child subreaper
   (``PR_SET_CHILD_SUBREAPER``) while a run is open, so a process that left
   the group (``setsid``, a double fork, ``nohup &``) becomes assay's own child
   when its parent dies, and is recognised there by the token.

Tokens and helper marks are claims a process makes about itself, so the
sweep at a run's close trusts them only when they are this process's own: a
token spares an adopted process only while a run of this process holds it,
and a helper mark (``helper_mark``) carries a secret drawn when assay
started. A process that forges either is swept like any other escapee.

All three are used together. Python cannot start a child inside a cgroup,
so with a cgroup the command waits behind a start gate (``StartGate``: a tiny
``sh`` reading a line from a pipe) until assay has moved the leader into the
sample's cgroup: everything the command starts, ``setsid`` daemons included,
starts inside it. (A judge, fed its payload on stdin, starts ungated and is
found by group and token.) Without a writable cgroup v2 (the documented
fallback), only a process that *both* leaves the session and clears its
environment can escape.

When assay itself dies: the leader gets a parent-death signal (``setpriv
--pdeathsig``, util-linux), and the watchdog process (``watchdog``) kills the
rest. The signal fires when the *thread* that forked the leader exits, not
the process, and samples run on pool threads that come and go; so one
long-lived spawner thread starts every leader.

Stopping is graceful: SIGTERM to everything, a short grace (agent CLIs flush
their transcripts), then SIGKILL. Orphans adopted by assay are reaped.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import errno
import itertools
import math
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, TypeVar

from fixtures_core.execution import procfs
from fixtures_core.execution.cgroups import Cgroup, cgroup_base

GRACE_S = 2.0  # SIGTERM, then this long for the sample's processes to exit, then SIGKILL
TOKEN_VARIABLE = "ASSAY_SAMPLE_ID"
# Set in the environment of assay's own long-lived helpers (the Prefect server, the watchdog, the lease
# guard, the idle stop): the sweep of escaped processes at a run's close never takes one for an escapee.
HELPER_VARIABLE = "ASSAY_HELPER"
_HELPER_SECRET = secrets.token_hex(16)  # a sample cannot read it: samples never get HELPER_VARIABLE
_TOKEN_BYTES = 16  # a run's token: 128 random bits, never guessed
_KILL_WAIT_S = 5.0  # after SIGKILL: how long to wait for the processes to be gone
_SWEEPS = 20  # rounds of killing escapees: each round's kills may hand assay their orphaned children
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
T = TypeVar("T")


class Containment:
    """Every process the samples of one run start: spawned, stopped, and killed with assay.

    A scheduler calls ``start`` for each sample and ``ContainedSample.stop`` or
    ``finish`` when it ends; ``cancel`` (a signal handler may call it) stops
    every live sample, gracefully or at once. Use as a context manager, or
    call ``close``. ``scope`` gives a part of the run (one row's samples)
    that can be stopped on its own.
    """

    def __init__(
        self,
        grace_s: float = GRACE_S,
        use_cgroups: bool = True,
        pdeathsig: bool = True,
        watchdog: bool = True,
        *,
        parent: Containment | None = None,
    ) -> None:
        self._parent = parent
        self.grace_s: float = grace_s
        self.cancelled: threading.Event = threading.Event()
        self.stopped_at_once: threading.Event = threading.Event()
        # Set once every row is done and the run's document is being written: an interrupt then kills
        # what still runs (a judge) but must not cut the writing short.
        self.closing: threading.Event = threading.Event()
        self.token: str = secrets.token_hex(_TOKEN_BYTES)
        self._lock = threading.RLock()  # RLock: cancel() may run in a signal handler on a thread holding it
        self._live: dict[int, ContainedSample] = {}
        self._numbers = itertools.count()
        self._want_cgroups, self._want_pdeathsig = use_cgroups, pdeathsig
        self._opened = self._closed = False
        self._opened_ticks = 0  # when the run's first sample started (clock ticks since boot)
        self._cgroup: Cgroup | None = None
        self._pdeathsig = False
        self._watchdog: _Watchdog | None = None
        if parent is not None:  # a scope: the parent's processes, cgroup and watchdog
            self.grace_s, self.token, self._opened = parent.grace_s, parent.token, True
            self.cancelled = _Cancellation(parent.cancelled)
            self.stopped_at_once = parent.stopped_at_once  # only the whole run is ever stopped at once
            self.closing = parent.closing
            return
        # Started now, not with the first sample: it must see assay's other children (the
        # temporary Prefect server) before assay could die, and its start-up is paid early.
        self._watchdog = _Watchdog.shared() if watchdog else None
        if self._watchdog is not None:
            self._watchdog.start()

    def _open(self) -> None:
        """Set up on the first sample: the run's cgroup, the subreaper, the watchdog."""
        with self._lock:
            if self._opened:
                return
            self._opened = True
            self._pdeathsig = self._want_pdeathsig and _setpriv() is not None
            base = cgroup_base() if self._want_cgroups else None
            if base is not None:
                with contextlib.suppress(OSError):
                    self._cgroup = Cgroup.create(base[0], base[1], f"assay-{os.getpid()}-{self.token}")
            _subreaper.acquire()
            _LIVE_TOKENS.add(self.token)
            self._opened_ticks = procfs.ticks_now()
            if self._watchdog is not None:
                self._watchdog.register(self.token, str(self._cgroup.path) if self._cgroup else "")

    def scope(self) -> Containment:
        """A part of this run (one row's samples) that ``cancel`` stops alone; cancelling the run
        stops it too. Its samples are the run's: the same cgroup, watchdog, and interrupts."""
        return Containment(parent=self)

    def __enter__(self) -> Containment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: int | IO[bytes] = subprocess.DEVNULL,
    ) -> ContainedSample:
        """Start one sample's leader in its own session (and cgroup); raise OSError when it cannot start.

        ``stdin`` is what the leader reads (a file or ``subprocess.DEVNULL``).
        """
        if self._parent is not None:
            started = self._parent.start(argv, cwd=cwd, env=env, stdin=stdin)
            with self._lock:
                self._live[started.pid] = started
            started.also_in(self)
            if self.cancelled.is_set():  # the scope was cancelled while the leader was starting
                started.terminate()
            return started
        self._open()
        number = next(self._numbers)
        token = f"{self.token}-{number}"
        environment = dict(os.environ if env is None else env)
        environment[TOKEN_VARIABLE] = token
        environment.pop(HELPER_VARIABLE, None)  # a sample is never one of assay's helpers
        command = list(argv)
        if self._pdeathsig or self._cgroup is not None:
            _check_executable(command[0], environment, cwd)
        # A command fed a file (a judge's payload) starts ungated: the file's descriptor could only reach
        # it through the gate by a path, and this process closes the file once the leader has started.
        gate = StartGate() if self._cgroup is not None and stdin == subprocess.DEVNULL else None
        if gate is not None:
            command, stdin = gate.wrap(command)
        if self._pdeathsig:
            command = [str(_setpriv()), "--pdeathsig", "KILL", "--", *command]

        def spawn() -> ContainedSample:
            popen = subprocess.Popen(
                command,
                cwd=cwd,
                env=environment,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
            sample = ContainedSample(popen, token, self)
            with self._lock:
                self._live[popen.pid] = sample  # before anything can interrupt the caller
            _LEADERS.add(popen.pid)
            return sample

        try:
            sample = _spawner.call(spawn) if self._pdeathsig else spawn()
        except BaseException:
            if gate is not None:
                gate.close()
            raise
        if self._cgroup is not None:
            sample.adopt_into(self._sample_cgroup(number))
        if gate is not None:
            gate.open()  # in its cgroup now (or found by group and token): the command may start
        if self.cancelled.is_set():  # cancel() ran while the leader was starting
            sample.kill() if self.stopped_at_once.is_set() else sample.terminate()
        return sample

    def cancel(self, at_once: bool = False) -> None:
        """Stop every live sample: SIGTERM now and SIGKILL after the grace, or (``at_once``) SIGKILL now.

        Only sends signals, so a signal handler may call it; each sample's
        runner notices ``cancelled`` and finishes the stop.
        """
        self.cancelled.set()
        if at_once and self._parent is None:
            self.stopped_at_once.set()
        with self._lock:
            live = list(self._live.values())
        for sample in live:
            sample.kill() if at_once else sample.terminate()

    def close(self) -> None:
        """Stop whatever still runs (nothing, normally), remove the cgroups, release the subreaper."""
        with self._lock:
            if self._closed or not self._opened:
                self._closed = True
                return
            self._closed = True
            live = list(self._live.values())
        for sample in live:
            sample.stop(0.0)
            sample.finish()
        if self._parent is not None:
            return
        self._sweep_escapees()
        _LIVE_TOKENS.discard(self.token)
        if self._cgroup is not None:
            self._cgroup.remove()
        if self._watchdog is not None:
            self._watchdog.release(self.token)
        _subreaper.release()

    def _sweep_escapees(self) -> None:
        """Kill, with their descendants, the processes that left their sample every way it is tracked
        (its session, its cgroup, its token): the subreaper still adopted them when their parents died."""
        for _ in range(_SWEEPS):
            found = self._escapees()
            if not found:
                return
            for pid in found:
                for one in [pid, *procfs.descendants(pid)]:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(one, signal.SIGKILL)
            give_up = time.monotonic() + _KILL_WAIT_S
            waiting = set(found)
            while waiting and time.monotonic() < give_up:  # reaped, a SIGKILLed escapee leaves no zombie
                for pid in list(waiting):
                    try:
                        done, _status = os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        done = pid
                    if done == pid:
                        waiting.discard(pid)
                if waiting:
                    time.sleep(0.005)

    def _escapees(self) -> list[int]:
        """Orphans assay adopted during this run that no live sample of any run claims."""
        found = []
        own_group = os.getpgrp()
        ours = f"{TOKEN_VARIABLE}={self.token}-".encode()
        for pid in procfs.adopted(os.getpid()):
            seen = procfs.stat(pid)
            if seen is None or pid in _LEADERS or seen.starttime < self._opened_ticks:
                continue  # a sample's leader, or a process of assay's from before the run (a server)
            if seen.pgrp == own_group or seen.pgrp in _LEADERS:
                continue  # assay's own helpers (they share its group), or a live sample's process
            if _claims_another_live_run(pid, ours):
                continue  # a process of another open run's sample: that run sweeps it at its close
            if is_helper(pid):
                continue  # one of assay's helpers, started (by this process or another run) while this run ran
            found.append(pid)
        return found

    def _sample_cgroup(self, number: int) -> Cgroup | None:
        assert self._cgroup is not None
        try:
            return self._cgroup.child(f"s{number}")
        except OSError:
            return None

    def _forget(self, sample: ContainedSample) -> None:
        with self._lock:
            self._live.pop(sample.pid, None)


def helper_mark(role: str) -> str:
    """The value of ``HELPER_VARIABLE`` for one of assay's helpers (``lease-guard``, ``prefect-server``):
    the role and this process's secret, so that no sample can pass for a helper."""
    return f"{role}:{_HELPER_SECRET}"


def is_helper(pid: int) -> bool:
    """Whether a process was started by this process as one of its helpers (its mark holds the secret)."""
    value = procfs.environ_value(pid, HELPER_VARIABLE.encode())
    return value is not None and value.endswith(f":{_HELPER_SECRET}".encode())


def _claims_another_live_run(pid: int, ours: bytes) -> bool:
    """Whether a process carries the token of another run open in this process (not a made-up one)."""
    value = procfs.environ_value(pid, TOKEN_VARIABLE.encode())
    if value is None or (TOKEN_VARIABLE.encode() + b"=" + value).startswith(ours):
        return False
    run, _, _number = value.decode("ascii", "replace").rpartition("-")
    return run in _LIVE_TOKENS


_LIVE_TOKENS: set[str] = set()  # the tokens of the runs open in this process (set operations hold the GIL)


class StartGate:
    """Holds a sample's command until assay has moved its leader into the sample's cgroup.

    Python cannot start a child inside a cgroup, so the leader is a tiny ``sh``
    (about 1 ms) that reads one line from a pipe on its stdin before it becomes
    the command (``exec``) with ``/dev/null`` as its stdin: nothing the command
    forks can start outside the cgroup, and the command inherits no descriptor
    of the gate. If assay dies before it opens the gate, the pipe's end makes
    ``read`` fail and the command never runs (exit 125).
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def wrap(self, argv: Sequence[str]) -> tuple[list[str], int]:
        """``argv`` behind the gate, and the gate's end of the pipe: the leader's stdin."""
        script = 'read _ || exit 125; exec "$@" </dev/null'
        return [_sh(), "-c", script, "assay-gate", *argv], self._read

    def open(self) -> None:
        """Let the command start."""
        with contextlib.suppress(OSError):  # the leader is gone already (killed while it started)
            os.write(self._write, b"\n")
        self.close()

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read = self._write = -1


def _sh() -> str:
    """The POSIX shell that runs the start gate (``/bin/sh``: dash on Debian, about 1 ms)."""
    return "/bin/sh" if os.path.exists("/bin/sh") else shutil.which("sh") or "sh"


class ContainedSample:
    """One sample's processes: its leader (``popen``) and everything it starts."""

    def __init__(self, popen: subprocess.Popen[bytes], token: str, containment: Containment) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.token = token
        self.cgroup: Cgroup | None = None
        self._containment = containment
        self._needle = f"{TOKEN_VARIABLE}={token}\0".encode()
        self._signalled: dict[tuple[int, int], int] = {}  # (pid, starttime) -> last signal sent
        self._leader_fd = _pidfd(self.pid)
        self._finished = False
        self._scopes: list[Containment] = []

    def also_in(self, scope: Containment) -> None:
        """The sample belongs to ``scope`` too (a row's part of the run), which forgets it when it finishes."""
        self._scopes.append(scope)

    @property
    def leader_fd(self) -> int | None:
        """A descriptor that becomes readable when the leader exits (a pidfd), for selectors."""
        return self._leader_fd

    def leader_exited(self) -> bool:
        """True once the leader has exited; it is not reaped, so its pid and group stay ours."""
        if self.popen.returncode is not None:
            return True
        try:
            found = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return found is not None

    def adopt_into(self, cgroup: Cgroup | None) -> None:
        """Move the leader, and anything it already forked, into the sample's cgroup."""
        if cgroup is None or not cgroup.add(self.pid):
            if cgroup is not None:
                cgroup.remove(0.0)
            return
        self.cgroup = cgroup
        early = procfs.descendants(self.pid) + self._carrying_token()
        for pid in early:
            cgroup.add(pid)

    def terminate(self) -> None:
        """SIGTERM every process of the sample (once each)."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL every process of the sample."""
        self._signal(signal.SIGKILL)

    def remaining(self) -> bool:
        """True while any process of the sample still runs."""
        if not self.leader_exited():
            return True
        if self.cgroup is not None and self.cgroup.populated():
            return True
        # A process leaves its cgroup before it hands its children to their new parent (assay):
        # until every process signalled has finished exiting, an orphan may still be on its way.
        # A snapshot: cancel() (a signal handler, another thread) may add to it while this looks.
        if any(procfs.alive(pid, start) for pid, start in list(self._signalled)):
            return True
        return any(procfs.alive(pid) for pid in self._carrying_token())

    def stop(self, grace_s: float | None = None) -> None:
        """SIGTERM everything, wait up to ``grace_s`` (default: the containment's), then SIGKILL; blocks until gone."""
        grace = self._containment.grace_s if grace_s is None else grace_s
        if grace > 0 and not self._containment.stopped_at_once.is_set():
            self.terminate()
            give_up = time.monotonic() + grace
            while self.remaining() and time.monotonic() < give_up and not self._containment.stopped_at_once.is_set():
                time.sleep(0.01)
                self.terminate()  # processes that appeared since (reparented orphans) get theirs
        self.kill_and_wait()

    def kill_and_wait(self) -> None:
        """SIGKILL everything and wait (bounded) until nothing runs."""
        give_up = time.monotonic() + _KILL_WAIT_S
        while self.remaining() and time.monotonic() < give_up:
            self.kill()
            time.sleep(0.001)
        self._sweep_group()

    def _sweep_group(self) -> None:
        """SIGKILL the leader's group once more: members that neither the cgroup nor the token shows."""
        if self.popen.returncode is None:  # the leader is unreaped, so its group id cannot have been reused
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)

    def finish(self) -> int:
        """Reap the adopted orphans and the leader, remove the cgroup; return the leader's exit code."""
        if not self._finished:
            self._finished = True
            self._reap_orphans()
            code = self.popen.wait()
            _LEADERS.discard(self.pid)
            if self._leader_fd is not None:
                os.close(self._leader_fd)
            if self.popen.stdout is not None:
                self.popen.stdout.close()
            if self.popen.stderr is not None:
                self.popen.stderr.close()
            if self.cgroup is not None:
                self.cgroup.remove()
            self._containment._forget(self)
            for scope in self._scopes:
                scope._forget(self)
            return code
        return self.popen.wait()

    def _signal(self, signum: int) -> None:
        if self.cgroup is not None:
            members = self.cgroup.pids()
            if signum == signal.SIGKILL:
                self._note(members, signum)  # remaining() waits for each of them to finish exiting
                self.cgroup.kill()
            else:
                for pid in members:
                    self._send(pid, signum)
        if self.popen.returncode is None:  # the leader is unreaped, so its group id cannot have been reused
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
        # Also with a cgroup: what the leader forked in the instant before it was moved into it.
        for pid in self._carrying_token():
            self._send(pid, signum)

    def _note(self, pids: list[int], signum: int) -> None:
        for pid in pids:
            found = procfs.stat(pid)
            if found is not None and not found.zombie:
                self._signalled[(pid, found.starttime)] = signum

    def _send(self, pid: int, signum: int) -> None:
        """Signal one process, once per signal (a repeated SIGTERM could cut short a clean exit)."""
        found = procfs.stat(pid)
        if found is None or found.zombie:
            return
        key = (pid, found.starttime)
        if self._signalled.get(key) == signum and signum != signal.SIGKILL:
            return
        self._signalled[key] = signum
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)

    def _carrying_token(self) -> list[int]:
        """Orphans assay adopted (as subreaper) whose environment holds this sample's token."""
        return [
            pid
            for pid in procfs.adopted(os.getpid())
            if pid != self.pid and pid not in _LEADERS and procfs.environ_has(pid, self._needle)
        ]

    def _reap_orphans(self) -> None:
        """Reap zombies assay adopted from this sample (its group, its cgroup, or signalled by it)."""
        for pid in procfs.adopted(os.getpid()):
            if pid == self.pid or pid in _LEADERS:
                continue  # a leader is reaped by its Popen: reaping it here would lose its exit code
            found = procfs.stat(pid)
            if found is None or not found.zombie:
                continue
            ours = found.pgrp == self.pid or (pid, found.starttime) in self._signalled
            if not ours and self.cgroup is not None:
                ours = procfs.cgroup_of(pid) == self.cgroup.shown
            if ours:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)


class _Cancellation(threading.Event):
    """A scope's cancellation: set by its own ``cancel``, or by its parent's."""

    def __init__(self, parent: threading.Event) -> None:
        super().__init__()
        self._parent = parent

    def is_set(self) -> bool:
        return super().is_set() or self._parent.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        give_up = math.inf if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = give_up - time.monotonic()
            if left <= 0:
                return False
            super().wait(min(left, 0.05))
        return True


# --- process-wide parts -----------------------------------------------------------


class _LeaderSet:
    """Pids of every live sample leader in this process (never reaped by anyone but their Popen)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pids: set[int] = set()

    def add(self, pid: int) -> None:
        with self._lock:
            self._pids.add(pid)

    def discard(self, pid: int) -> None:
        with self._lock:
            self._pids.discard(pid)

    def __contains__(self, pid: object) -> bool:
        return pid in self._pids


_LEADERS = _LeaderSet()


class _Subreaper:
    """``PR_SET_CHILD_SUBREAPER`` while any containment is open; the previous setting comes back after."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._previous = 0

    def acquire(self) -> None:
        with self._lock:
            if self._users == 0:
                self._previous = _prctl_get(_PR_GET_CHILD_SUBREAPER)
                _prctl(_PR_SET_CHILD_SUBREAPER, 1)
            self._users += 1

    def release(self) -> None:
        with self._lock:
            self._users -= 1
            if self._users == 0:
                _prctl(_PR_SET_CHILD_SUBREAPER, self._previous)


_subreaper = _Subreaper()


class _Spawner:
    """The one long-lived thread that starts sample leaders, so their parent-death signal
    fires when assay dies, not when the pool thread that asked for the sample ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[tuple[Callable[[], object], Future[object]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0

    def call(self, function: Callable[[], T]) -> T:
        """Run ``function`` on the spawner thread and return its result (or raise its exception)."""
        with self._lock:
            if self._thread is None or self._pid != os.getpid():  # a forked child needs its own thread
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._serve, name="assay-spawner", daemon=True)
                self._thread.start()
        future: Future[object] = Future()
        self._queue.put((function, future))
        return future.result()  # type: ignore[return-value]

    def _serve(self) -> None:
        while True:
            function, future = self._queue.get()
            try:
                future.set_result(function())
            except BaseException as exc:  # handed to the caller
                future.set_exception(exc)


_spawner = _Spawner()


def leave_quietly() -> None:
    """This process is about to exit normally (without interpreter shutdown): its watchdog leaves quietly."""
    watchdog = _Watchdog._instance
    if watchdog is not None:
        watchdog.goodbye()


class _Watchdog:
    """This process's watchdog (started on first use; see ``watchdog``), told each run's scope."""

    _instance: _Watchdog | None = None
    _class_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._scopes: dict[str, str] = {}
        atexit.register(self.goodbye)

    @classmethod
    def shared(cls) -> _Watchdog | None:
        with cls._class_lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Make sure the watchdog runs."""
        with self._lock:
            self._running()

    def register(self, token: str, cgroup: str) -> None:
        with self._lock:
            self._scopes[token] = cgroup
            self._send(f"scope {token} {cgroup}".rstrip())

    def release(self, token: str) -> None:
        with self._lock:
            self._scopes.pop(token, None)
            self._send(f"end {token}")

    def goodbye(self) -> None:
        """A normal exit: the watchdog leaves quietly."""
        with self._lock:
            if self._process is not None and self._process.poll() is None and self._process.stdin is not None:
                with contextlib.suppress(OSError):
                    self._process.stdin.write(b"bye\n")
                    self._process.stdin.close()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(timeout=2)
            self._process = None

    def _send(self, line: str) -> None:
        for _attempt in range(2):
            process = self._running()
            if process is None or process.stdin is None:
                return
            try:
                process.stdin.write(line.encode() + b"\n")
                process.stdin.flush()
                return
            except OSError:  # it died (someone killed it): start another, tell it every open scope
                self._process = None

    def _running(self) -> subprocess.Popen[bytes] | None:
        if self._process is not None and self._process.poll() is None:
            return self._process
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(Path(__file__).with_name("watchdog.py")), str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # a terminal's Ctrl-C or hang-up must not reach it
                env={"PATH": os.environ.get("PATH", ""), HELPER_VARIABLE: helper_mark("watchdog")},
            )
        except OSError:
            self._process = None
            return None
        assert self._process.stdin is not None
        for token, cgroup in self._scopes.items():
            self._process.stdin.write(f"scope {token} {cgroup}".rstrip().encode() + b"\n")
        return self._process


# --- Linux calls --------------------------------------------------------------------


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()


def _prctl(option: int, value: int) -> bool:
    if _LIBC is None:
        return False
    return int(_LIBC.prctl(option, ctypes.c_ulong(value), 0, 0, 0)) == 0


def _prctl_get(option: int) -> int:
    """A prctl getter that writes an int through its second argument."""
    if _LIBC is None:
        return 0
    value = ctypes.c_int(0)
    if int(_LIBC.prctl(option, ctypes.byref(value), 0, 0, 0)) != 0:
        return 0
    return value.value


_SETPRIV: list[str | None] = []


def _setpriv() -> str | None:
    """util-linux ``setpriv``, when it has ``--pdeathsig`` (2.33+); None elsewhere."""
    if not _SETPRIV:
        found = shutil.which("setpriv")
        if found is not None:
            try:
                check = subprocess.run([found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                found = None
            else:
                found = found if check.returncode == 0 else None
        _SETPRIV.append(found)
    return _SETPRIV[0]


def _check_executable(program: str, env: Mapping[str, str], cwd: str | None) -> None:
    """Raise the OSError that starting ``program`` directly would raise (a wrapper would hide it)."""
    if cwd is not None and not os.path.isdir(cwd):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), cwd)
    if "/" in program:
        path = program if os.path.isabs(program) or cwd is None else os.path.join(cwd, program)
        candidates = [path]
    else:
        folders = env.get("PATH", os.defpath).split(os.pathsep)
        candidates = [os.path.join(folder or ".", program) for folder in folders]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return
    exists = any(os.path.exists(c) for c in candidates)
    code = errno.EACCES if exists else errno.ENOENT
    raise OSError(code, os.strerror(code), program)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
