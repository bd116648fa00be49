"""The command line module (``flows.run``): what starting it costs."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_line_starts_without_pandas_or_prefect() -> None:
    """Each costs a quarter of a second or more to import: a command that needs neither (validate,
    history, --engine local before it finalizes) never pays for it. Finalize and ``--frame`` import
    pandas where they use it, the Prefect engine imports Prefect when it runs."""
    code = "import sys, flows.run; print(sorted(m for m in ('pandas', 'prefect') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
