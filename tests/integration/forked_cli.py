"""Test helper: many real ``assay`` processes at the cost of one start-up.

A table test runs the command line a couple of hundred times with its
standard streams closed, broken or full. Starting Python and importing assay
and Prefect costs seconds per process on 2 cores; a fork costs milliseconds.
So one helper process (``python -m tests.integration.forked_cli``) imports
them once and forks a child per command. Each child sets up descriptors 0-2
as the shell would (``>&-``, ``2>&-``, a pipe whose reader is gone,
``>/dev/full``, a file), makes ``sys.stdout``/``sys.stderr`` what a fresh
interpreter makes of them (None for a closed descriptor), and then runs the
console script's own entry point, ``flows.cli.launch.cli``, up to its own exit:
the exit code read is the process's.

The test sends a JSON list of commands on one line and reads one line back:
each command's exit code and, where the stream was a file, what it printed.
"""

from __future__ import annotations

import gc
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
Stream = str  # "file", "closed" (>&-), "broken" (a pipe nobody reads), "full" (/dev/full)


@dataclass(frozen=True)
class Command:
    """One ``assay`` command: its arguments, folder, extra environment, and what stdout and stderr are."""

    args: Sequence[str]
    cwd: str
    stdout: Stream = "file"
    stderr: Stream = "file"
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ended:
    """How a command ended: its exit code, and what it wrote where its streams were files."""

    code: int
    stdout: str
    stderr: str
    seconds: float  # wall time, fork to exit
    cpu_seconds: float  # the child's own CPU time (user and system), its children's not included


class ForkedCli:
    """The helper process (started once); ``run`` runs commands in forked children, ``at_once`` at a time."""

    def __init__(self, env: dict[str, str] | None = None, preload_prefect: bool = False) -> None:
        full_env = dict(os.environ, PYTHONPATH=str(REPO), **(env or {}))
        full_env.pop("PREFECT_API_URL", None)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.forked_cli", *(["prefect"] if preload_prefect else [])],
            cwd=REPO, env=full_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def run(self, commands: Sequence[Command], at_once: int = 2) -> list[Ended]:
        assert self._process.stdin is not None and self._process.stdout is not None
        request = {"at_once": at_once, "commands": [asdict(c) for c in commands]}
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        line = self._process.stdout.readline()
        assert line, f"the helper process ended ({self._process.poll()})"
        return [Ended(**ended) for ended in json.loads(line)]

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def __enter__(self) -> ForkedCli:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the helper process ---------------------------------------------------------------------------


def _serve(preload_prefect: bool) -> None:
    _preload(preload_prefect)
    gc.freeze()  # a child's collections leave the inherited objects (and their pages) alone
    channel = os.fdopen(os.dup(1), "w")  # the children's descriptor 1 is theirs
    for line in sys.stdin:
        request = json.loads(line)
        commands = [Command(**c) for c in request["commands"]]
        ended = list(_run_all(commands, request["at_once"]))
        channel.write(json.dumps([asdict(e) for e in ended]) + "\n")
        channel.flush()


def _preload(prefect: bool) -> None:
    """Import every module of assay once (what a command imports when it needs it, too), so that a
    child pays for none of it; with ``prefect``, the Prefect engine's too. No thread is started."""
    import importlib
    import pkgutil
    import threading

    import fixtures_core
    import flows

    for package in (fixtures_core, flows):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if prefect or module.name.startswith(_WITHOUT_PREFECT):
                importlib.import_module(module.name)
    importlib.import_module("pandas")  # the rows' frame: imported when a run finalizes
    importlib.import_module("pydantic")  # the options' model
    _warm_up()
    assert threading.active_count() == 1, threading.enumerate()  # fork copies no thread


def _warm_up() -> None:
    """Two commands that start no thread (history of an empty folder, validate of a small file), so that
    the command line's own lazy imports and tables are built once here."""
    import contextlib

    import flows.cli.main

    with tempfile.TemporaryDirectory() as folder, contextlib.redirect_stdout(io.StringIO()):
        fixture = Path(folder) / "warm.md"
        fixture.write_text("| Name | Command | CEL |\n|---|---|---|\n| ok | `true` | `exitCode == 0` |\n")
        for args in (["history", "--out", folder], ["validate", str(fixture)]):
            flows.cli.main.main(args)


_WITHOUT_PREFECT = ("flows.run", "flows.cli.")  # the command line imports Prefect only when a run needs it


def _run_all(commands: Sequence[Command], at_once: int) -> Iterator[Ended]:
    """Each command in a child, ``at_once`` children at a time; results in the commands' order."""
    results: dict[int, Ended] = {}
    running: dict[int, tuple[int, str, float]] = {}  # pid -> (index, folder of its captured streams, start)
    pending = list(enumerate(commands))
    while pending or running:
        while pending and len(running) < at_once:
            index, command = pending.pop(0)
            folder = tempfile.mkdtemp(prefix="assay-forked-")
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(command, folder)  # never returns
            running[pid] = (index, folder, time.monotonic())
        pid, status, usage = os.wait4(-1, 0)
        index, folder, start = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        took, cpu = time.monotonic() - start, usage.ru_utime + usage.ru_stime
        results[index] = Ended(code, _read(folder, "stdout"), _read(folder, "stderr"), took, cpu)
        os.rmdir(folder)
    for index in range(len(commands)):
        yield results[index]


def _read(folder: str, name: str) -> str:
    path = Path(folder) / name
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    path.unlink(missing_ok=True)
    return text


def _child(command: Command, folder: str) -> None:
    code = 71
    try:
        os.chdir(command.cwd)
        os.environ.update(command.env)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        for fd, how in ((1, command.stdout), (2, command.stderr)):
            _descriptor(fd, how, os.path.join(folder, "stdout" if fd == 1 else "stderr"))
        # What a fresh interpreter makes of descriptors 1 and 2: None for a closed one.
        sys.stdout = _text(1, "strict", line_buffering=False) if command.stdout != "closed" else None  # type: ignore[assignment]
        sys.stderr = _text(2, "backslashreplace", line_buffering=True) if command.stderr != "closed" else None  # type: ignore[assignment]
        sys.argv = ["assay", *command.args]
        from flows.cli.launch import cli

        cli()  # exits the process (os._exit), or raises SystemExit
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
        try:  # the interpreter's own last flush: a failure there is exit 120
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        except Exception:  # noqa: BLE001
            code = 120
    finally:
        os._exit(code)


def _descriptor(fd: int, how: Stream, path: str) -> None:
    if how == "closed":
        os.close(fd)
        return
    if how == "broken":
        read, write = os.pipe()
        os.close(read)
        opened = write
    elif how == "full":
        opened = os.open("/dev/full", os.O_WRONLY)
    else:
        opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(opened, fd)
    os.close(opened)


def _text(fd: int, errors: str, line_buffering: bool) -> Any:
    raw = io.FileIO(fd, "w", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors=errors, line_buffering=line_buffering)


if __name__ == "__main__":
    from flows.server.prefect_env import quiet_prefect

    quiet_prefect()
    _serve("prefect" in sys.argv[1:])
