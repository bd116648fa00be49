"""Containment through a whole run, on both engines: no process a sample starts outlives the run.

The Prefect engine starts samples from Prefect's task threads, the local
engine from a plain pool: both go through the same containment, and both
must leave nothing behind, whatever the samples do to escape.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.records.rundoc import load_run
from flows.run import main
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
