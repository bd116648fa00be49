"""Containment through a whole run, on both engines: no process a sample starts outlives the run.

The Prefect engine starts samples from Prefect's task threads, the local
engine from a plain pool: both go through the same containment, and both
must leave nothing behind, whatever the samples do to escape.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.records.rundoc import load_run
from flows.cli.main import main
from tests.core.execution.test_containment import ESCAPES
from tests.integration.test_interrupts import described
from tests.processes import processes_with


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "prefect":
        request.getfixturevalue("prefect_backend")
    return str(request.param)


@pytest.mark.parametrize("engine", ["local", "prefect"], indirect=True)
def test_every_kind_of_daemon_dies_with_its_sample(engine: str, tmp_path: Path, marker: str) -> None:
    blocks = "".join(
        f"### command: {name}\n\n```bash\n{script}\necho ok\n```\n\n- contains: ok\n\n"
        for name, script in ESCAPES.items()
    )
    timed_out = "### command: out of budget\n\n```yaml\ntimeout: 1s\n```\n\n```bash\nsetsid sleep 60 &\nsleep 60\n```\n"
    fixture = tmp_path / "daemons.md"
    fixture.write_text("---\nrepeat: 2\n---\n\n" + blocks + timed_out)
    code = main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state")])
    assert code == 2  # the last row runs out of its budget; every other row passes
    run = load_run(tmp_path / "state" / "latest.json")
    assert {row.name: row.status for row in run.rows} == {**dict.fromkeys(ESCAPES, "PASS"), "out of budget": "ERR"}
    assert described(processes_with(marker)) == []


@pytest.mark.parametrize("engine", ["local", "prefect"], indirect=True)
def test_a_sample_starts_inside_its_cgroup_so_a_daemon_started_at_once_cannot_escape(
    engine: str, tmp_path: Path
) -> None:
    """The race of issue 20: daemons that leave the session and drop the token, started at the
    sample's first instant. Only the cgroup can hold them, and only if the command starts in it."""
    from fixtures_core.execution.cgroups import cgroup_base

    if cgroup_base() is None:
        pytest.skip("no writable cgroup v2: the documented fallback cannot hold a daemon without the token")
    unique = f"7{os.getpid() % 1000:03d}.5"  # a sleep duration only this test uses
    script = (
        f"setsid env -i sleep {unique} >/dev/null 2>&1 </dev/null & "
        f"( ( setsid env -i sleep {unique} >/dev/null 2>&1 </dev/null & ) & ); grep '^0::' /proc/self/cgroup"
    )
    fixture = tmp_path / "race.md"
    fixture.write_text(
        f"---\nrepeat: 24\nserial: false\n---\n\n### command: race\n\n```bash\n{script}\n```\n\n"
        '- cel: stdout != "0::/\\n"\n'
    )
    code = main(["run", str(fixture), "--engine", engine, "--out", str(tmp_path / "state"), "--concurrency", "8"])
    run = load_run(tmp_path / "state" / "latest.json")
    outside = [s.index for s in run.rows[0].samples if s.status != "PASS"]
    left = [pid for pid in procfs.pids() if _argv(pid)[:2] == [b"sleep", unique.encode()]]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert (code, outside, left) == (0, [], []), "samples started outside their cgroup, or daemons outlived them"


def _argv(pid: int) -> list[bytes]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []
