"""An interrupt in the first instants of an assay command: how long before assay's guard holds it?

    python bench/start_up_signals.py [--trials 20] [--upto 200] [--step 5] [--out bench/results/start_up_signals.json]

From exec until assay's first module runs (``flows.cli.start_up.hold``), the
interpreter starts and runs ``site``: no code of assay's can catch a signal
then, and SIGINT, SIGTERM or SIGHUP end the process their own way (killed by
the signal, or Python's ``KeyboardInterrupt`` traceback, exit 1). This script
measures that window two ways, for ``python -m flows.run`` and the ``assay``
console script (the venv's, next to this Python):

* **hold**: the time from spawning the command until its SIGTERM handler is
  installed (``SigCgt`` in ``/proc/PID/status``, polled), beside the same for
  a bare interpreter that installs a handler as its first line, with and
  without ``site`` (``-S``): the part no Python code can shorten.
* **sweep**: a signal sent at each delay from 0 ms to ``--upto`` in steps of
  ``--step`` (one process each), as is, behind ``env --block-signal=INT,TERM,HUP``
  (env's own start is the window left), and with the three blocked by the
  parent before exec (no window): how each ended. ``ok`` is exit 2 with one
  line on stderr and no traceback.

Each command is ``validate`` of an empty folder: it imports what every
command imports, and does nothing else.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common as c  # noqa: E402

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
BARE = "import signal, time; signal.signal(signal.SIGTERM, lambda *a: None); time.sleep(30)"


def entries(folder: Path) -> dict[str, list[str]]:
    """The commands measured: assay's two entries, and a bare interpreter with and without site."""
    found = {"python -m flows.run": [c.python(), "-m", "flows.run", "validate", str(folder)]}
    script = Path(c.python()).parent / "assay"
    if script.exists():
        found["assay (console script)"] = [str(script), "validate", str(folder)]
    return found


def hold_time(argv: Sequence[str], env: dict[str, str]) -> float | None:
    """Seconds from spawning ``argv`` until it catches SIGTERM (None if it exited first)."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_default_signals
    )
    try:
        while process.poll() is None:
            try:
                status = Path(f"/proc/{process.pid}/status").read_text()
            except OSError:
                continue
            caught = next((line for line in status.splitlines() if line.startswith("SigCgt:")), None)
            if caught is not None and int(caught.split()[1], 16) & (1 << (signal.SIGTERM - 1)):
                return time.monotonic() - started
        return None
    finally:
        process.kill()
        process.wait()


def _default_signals() -> None:
    """In the child before exec: the three at their default actions (this script may run under nohup, or
    in the background of a shell, which ignore SIGHUP or SIGINT: an ignored signal is discarded)."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def _blocked_at_exec() -> None:
    _default_signals()
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


def outcome(argv: Sequence[str], env: dict[str, str], sig: signal.Signals, delay_s: float, how: str) -> str:
    """How a command sent ``sig`` ``delay_s`` after its spawn ended."""
    command = ["env", "--block-signal=INT,TERM,HUP", *argv] if how == "env --block-signal" else list(argv)
    preexec = _blocked_at_exec if how == "blocked at exec" else _default_signals  # one thread here: safe
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=preexec
    )
    time.sleep(delay_s)
    process.send_signal(sig)
    _out, err = process.communicate(timeout=120)
    lines = err.strip().splitlines()
    if "Traceback" in err:
        return f"traceback, exit {process.returncode}"
    if process.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: interrupted by"):
        return "ok"
    if process.returncode < 0:
        return f"killed by {signal.Signals(-process.returncode).name}"
    return f"exit {process.returncode}, {len(lines)} lines"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=20, help="spawns per command for the hold time (20)")
    parser.add_argument("--upto", type=int, default=200, help="last delay of the sweep, ms (200)")
    parser.add_argument("--step", type=int, default=5, help="step of the sweep, ms (5)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "start_up_signals.json"))
    args = parser.parse_args(argv)
    if args.trials < 1 or args.step < 1 or args.upto < 0:
        parser.error("--trials and --step must be >= 1, --upto >= 0")
    c.raise_on_sigterm()
    folder = Path(tempfile.mkdtemp(prefix="assay-bench-start-up-"))
    env = c.child_env(prefect_home=folder / "home")
    document: dict[str, object] = {"machine": c.machine(), "trials": args.trials}
    try:
        commands = entries(folder / "empty")
        (folder / "empty").mkdir()
        references = {"bare python, first line a handler": [c.python(), "-c", BARE],
                      "bare python -S (no site)": [c.python(), "-S", "-c", BARE]}  # fmt: skip
        hold: dict[str, dict[str, float]] = {}
        for name, command in {**references, **commands}.items():
            times = [t for t in (hold_time(command, env) for _ in range(args.trials)) if t is not None]
            hold[name] = {k: v * 1000 for k, v in c.spread(times).items()}
        document["hold_ms"] = hold
        sweep: dict[str, dict[str, dict[str, list[int]]]] = {}
        for name, command in commands.items():
            for how in ("as is", "env --block-signal", "blocked at exec"):
                for sig in SIGNALS:
                    seen: dict[str, list[int]] = collections.defaultdict(list)
                    for delay in range(0, args.upto + 1, args.step):
                        seen[outcome(command, env, sig, delay / 1000, how)].append(delay)
                    sweep[f"{name} | {how} | {sig.name}"] = dict(seen)
        document["sweep_ms"] = sweep
    finally:
        document["leftover_processes"] = c.kill_leftovers()
        shutil.rmtree(folder, ignore_errors=True)
    return c.close(args.out, document, report)


def report(document: dict[str, object]) -> None:
    hold: dict[str, dict[str, float]] = document["hold_ms"]  # type: ignore[assignment]
    print(f"\nspawn to a SIGTERM handler, ms ({document['trials']} spawns each; load {document['machine']['loadavg']})")  # type: ignore[index]
    print(c.table(["command", "median", "min", "max"],
                  [[name, f.get("median"), f.get("min"), f.get("max")] for name, f in hold.items()]))  # fmt: skip
    sweep: dict[str, dict[str, list[int]]] = document["sweep_ms"]  # type: ignore[assignment]
    print("\nsignal sent N ms after spawn: how the command ended (delays, ms)")
    rows = []
    for key, seen in sweep.items():
        bad = [delay for name, delays in seen.items() if name != "ok" for delay in delays]
        kinds = "; ".join(f"{name}: {len(delays)}" for name, delays in sorted(seen.items()))
        rows.append([*key.split(" | "), kinds, max(bad) if bad else "-"])
    print(c.table(["command", "started", "signal", "outcomes", "last delay not ok"], rows))


if __name__ == "__main__":
    c.run_script(main)
