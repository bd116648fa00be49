"""The command line (``flows.cli``, ``python -m flows.run``): what starting it costs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_the_command_line_starts_without_pandas_or_prefect() -> None:
    """Each costs a quarter of a second or more to import: a command that needs neither (validate,
    history, --engine local before it finalizes) never pays for it. Finalize and ``--frame`` import
    pandas where they use it, the Prefect engine imports Prefect when it runs."""
    code = "import sys, flows.run; print(sorted(m for m in ('pandas', 'prefect') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_run_says_when_the_fixtures_hold_what_it_does_not_run(tmp_path: Path) -> None:
    """validate lists each construct; run names their count, so nothing disappears silently."""
    fixture = tmp_path / "doc.md"
    fixture.write_text("| Title | Value |\n|---|---|\n| a | b |\n\n| Name | Command |\n|---|---|\n| ok | `true` |\n")
    args = [sys.executable, "-m", "flows.run", str(fixture), "--engine", "local", "--out", str(tmp_path / "state")]

    done = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)

    assert done.returncode == 0
    assert done.stderr == (
        "warning: 1 fixture construct assay reads but does not run or check: `assay validate` lists them\n"
    )
