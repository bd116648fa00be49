"""Every command README's devlyn section shows, run exactly as printed (issue 44).

The commands run in order in a folder holding ``benchmark/auto-resolve`` and
``examples/devlyn`` (both copies of the example benchmark), with stand-ins
for devlyn's ``claude`` and ``codex`` first on PATH, on the default engine
(the session's Prefect server).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.integration.conftest import REPO, WIDE

STUBS = REPO / "tests" / "devlyn" / "stubs"
SECTION = "## devlyn benchmarks: fixture folders as they are"


def section_commands() -> list[str]:
    """The command lines of the section's ``bash`` blocks, in order, comments left out."""
    readme = (REPO / "README.md").read_text()
    start = readme.index(SECTION)
    text = readme[start : readme.index("\n## ", start + len(SECTION))]
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in lines]


def test_every_command_of_the_devlyn_section_runs_as_printed(tmp_path: Path, prefect_server: Any) -> None:
    commands = section_commands()
    assert commands[:2] == ["assay run benchmark/auto-resolve/", "assay run examples/devlyn/suite.md"]
    assert all(command.startswith("assay ") for command in commands)
    shutil.copytree(REPO / "examples" / "devlyn", tmp_path / "benchmark" / "auto-resolve")
    shutil.copytree(REPO / "examples" / "devlyn", tmp_path / "examples" / "devlyn")
    (tmp_path / "scenario.json").write_text(json.dumps({"fixtures": {}}))
    env = {**os.environ, **WIDE, "STUB_SCENARIO": str(tmp_path / "scenario.json"), "PYTHONPATH": str(REPO)}
    env["PATH"] = os.pathsep.join([str(STUBS), str(Path(sys.executable).parent), env["PATH"]])
    env.pop("PREFECT_API_URL", None)

    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )
        said = f"{command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr and "error:" not in done.stderr, said
        if command.startswith("assay retire"):
            assert done.returncode == 0 and done.stdout.startswith("retired F1-loud-flag: "), said
            continue
        # the stand-in arms keep no pipeline state, so devlyn's default gates may fail: exit 1, never 2
        assert done.returncode in (0, 1) and "SHIP-GATE VERDICT: " in done.stdout, said
        if command.endswith("suite.md"):
            assert done.returncode == 0, said  # the example's own fake agents and judge pass its gates
        if command.endswith(" F1"):
            assert "F1-loud-flag: a retired fixture (fixtures/retired/), replayed as its id was given" in done.stdout
    records = list((tmp_path / "benchmark" / "auto-resolve" / "history" / "runs").glob("*-fixture-rotation.json"))
    assert [json.loads(r.read_text())["replacement"] for r in records] == ["F2-count-words"]
