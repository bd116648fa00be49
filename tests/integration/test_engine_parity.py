"""Issues 20 and 21 on both engines: a broken row, a daemon and its port, a NUL byte in a sample's
output and in a templated argument get the same verdicts from the local engine and the Prefect flow,
and no daemon outlives the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import WIDE, run_cli
from tests.processes import gone_soon

SERVED = """---
daemon: echo $$ > daemon.pid; exec python3 -m http.server {{.port}} --bind 127.0.0.1
---

| Name | Command | CEL |
|---|---|---|
| reaches the daemon | {FETCH} http://127.0.0.1:{{.port}}/ | stdout.trim() == "200" |
| port in env | printenv PORT | stdout.trim() != "" |
""".replace("{FETCH}", 'python3 -c "import urllib.request, sys; print(urllib.request.urlopen(sys.argv[1]).status)"')

HOSTILE = """---
x: "a\\0b"
---

| Name | Command | Exit Code | CEL |
|---|---|---|---|
| good | true | 0 | |
| broken cell | true | zero | |
| templated NUL | echo {{.x}} | 0 | |

### command: a NUL hides nothing

```bash
printf 'ok\\0 sk-LEAKED error'
```

- cel: !stdout.contains("LEAKED")
"""

EXPECTED = {
    "reaches the daemon": "PASS",
    "port in env": "PASS",
    "good": "PASS",
    "broken cell": "ERR",
    "templated NUL": "ERR",
    "a NUL hides nothing": "FAIL",
}


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_both_engines_give_the_same_verdicts(tmp_path: Path, engine: str, request: pytest.FixtureRequest) -> None:
    if engine == "prefect":
        request.getfixturevalue("prefect_server")
    (tmp_path / "served.md").write_text(SERVED, encoding="utf-8")
    (tmp_path / "hostile.md").write_text(HOSTILE, encoding="utf-8")
    document = tmp_path / "run.json"
    engine_args = ["--engine", "local"] if engine == "local" else []
    done = run_cli([".", *engine_args, "--json", str(document)], cwd=tmp_path, env=WIDE)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    rows: dict[str, Any] = {r["name"]: r for f in json.loads(document.read_text())["fixtures"] for r in f["rows"]}
    assert {name: row["status"] for name, row in rows.items()} == EXPECTED
    assert rows["broken cell"]["stopped"] == "configuration"
    assert rows["broken cell"]["error"].endswith("hostile.md:8: Exit Code: must be an integer, got 'zero'")
    assert "NUL byte" in rows["templated NUL"]["error"] or "NUL byte" in str(rows["templated NUL"]["samples"])
    assert gone_soon(int((tmp_path / "daemon.pid").read_text())), "the daemon outlived the run"
