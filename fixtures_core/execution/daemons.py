"""Daemons: the services a fixture file's rows talk to (Gavel's frontmatter ``daemon:``).

Before the rows run, each file's daemon starts inside the run's containment (so it is reaped like
any sample) on a free TCP port of the loopback interface, given as ``{{ .port }}`` in its command
and as ``$PORT`` in its environment; assay waits until the port accepts a connection. The rows see
the same port as ``{{ .port }}``. A daemon that exits or never listens within its ``ready`` time
makes its file's rows ERR with why (its last output), and the other files run. Every daemon is
stopped (SIGTERM, then SIGKILL) when the run's rows are done.

Guarantee: the port is free when chosen and handed to one daemon; another program could take it
in between (the window every tool that picks a port this way has), and the daemon then fails to
listen, which assay reports. With Dask workers on other machines, the daemon runs beside the flow,
not beside the samples.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fixtures_core.execution.containment import ContainedSample, Containment
from fixtures_core.parsing.template import TemplateError, render
from fixtures_core.spec import Daemon, RowSpec
from fixtures_core.text import excerpt

_TAIL_BYTES = 2000  # of the daemon's output, kept to say why it did not start
_POLL_S = 0.05


@dataclass(frozen=True)
class DaemonPort:
    """A started daemon's port, or why it is not serving (its rows are ERR with it)."""

    port: int | None
    error: str | None = None


@contextmanager
def running_daemons(rows: Iterable[RowSpec], containment: Containment) -> Iterator[Mapping[str, DaemonPort]]:
    """Start the daemon of every file among ``rows``; yield each one's port by ``Daemon.where``; stop them."""
    wanted: dict[str, tuple[Daemon, str]] = {}
    for row in rows:
        if row.daemon is not None and row.error is None:
            folder = row.source_dir or str(Path(row.file).resolve().parent)
            wanted.setdefault(row.daemon.where, (row.daemon, folder))
    started: list[_Running] = []
    ports: dict[str, DaemonPort] = {}
    try:
        for where, (daemon, folder) in wanted.items():
            running, ports[where] = _start(daemon, folder, containment)
            if running is not None:
                started.append(running)
        yield ports
    finally:
        for running in started:
            running.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port of ``host`` that the kernel says nothing uses now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _start(daemon: Daemon, folder: str, containment: Containment) -> tuple[_Running | None, DaemonPort]:
    port = free_port()
    what = f"daemon ({daemon.where})"
    try:
        command = render(daemon.command, {"port": port, "sourceDir": folder})
    except TemplateError as exc:
        return None, DaemonPort(None, f"{what}: template: {exc}")
    env = {**os.environ, "PORT": str(port)}
    try:
        process = containment.start(["bash", "-c", command], cwd=folder, env=env)
    except OSError as exc:
        return None, DaemonPort(None, f"{what} cannot start: {exc.strerror or exc}")
    running = _Running(process)
    problem = running.wait_listening(port, daemon.ready_s)
    if problem is None:
        return running, DaemonPort(port)
    running.stop()
    tail = running.tail()
    return None, DaemonPort(None, f"{what} {problem}" + (f"; its output ended: {tail}" if tail else ""))


class _Running:
    """A started daemon: its process, and the last of its output (drained so it never blocks on a pipe)."""

    def __init__(self, process: ContainedSample) -> None:
        self.process = process
        self._tail = bytearray()
        self._lock = threading.Lock()
        self._drains = [
            threading.Thread(target=self._drain, args=(stream,), name="assay-daemon-output", daemon=True)
            for stream in (process.popen.stdout, process.popen.stderr)
            if stream is not None
        ]
        for drain in self._drains:
            drain.start()

    def _drain(self, stream: IO[bytes]) -> None:
        for chunk in iter(lambda: stream.read1(4096), b""):  # type: ignore[attr-defined]
            with self._lock:
                self._tail += chunk
                del self._tail[:-_TAIL_BYTES]

    def wait_listening(self, port: int, ready_s: float) -> str | None:
        """None once ``port`` accepts a connection; else why not (the daemon exited, or time ran out)."""
        give_up = time.monotonic() + ready_s
        while True:
            code = self.process.popen.poll()
            if code is not None:
                return f"exited with code {code} before port {port} accepted connections"
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=_POLL_S):
                    return None
            except OSError:
                pass
            if time.monotonic() >= give_up:
                return f"did not accept connections on port {port} within {ready_s:g}s"
            time.sleep(_POLL_S)

    def tail(self) -> str:
        for drain in self._drains:
            drain.join(timeout=1)
        with self._lock:
            return excerpt(self._tail.decode("utf-8", "replace"), 300)

    def stop(self) -> None:
        self.process.stop()
        self.process.finish()
