"""Secrets a command prints never reach anything assay prints or stores: the acceptance test of redaction.

The fake agent prints API keys of several shapes (built at run time, so this
file does not contain them), a value of a secret-named environment variable,
and an account id the fixture's own ``redact:`` masks; on stdout, stderr, in
JSON, in non-JSON output that makes CEL and metric errors quote it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixtures_core.runs.options import RunOptions
from tests.integration.conftest import run_cli

AGENT = r"""
import json, os, sys
mode = sys.argv[1]
openai = "sk-" + "proj-" + "Zq8" * 9
anthropic = "sk-" + "ant-api03-" + "Lm4" * 12
aws = "AK" + "IA" + "QWERTYUIOPASDFGH"
token = os.environ["SERVICE_TOKEN"]
account = "acct-" + "48" * 3
if mode == "json":
    print(json.dumps({"ok": True, "answer": f"use {openai} or {anthropic}", "token": token, "account": account}))
    print(f"calling with {aws} and Bearer {openai}", file=sys.stderr)
elif mode == "fail":
    print(json.dumps({"ok": False, "answer": f"leaked {openai}", "account": account}))
else:
    print(f"Authorization: Bearer {openai} {token} {account} not json")
"""

FIXTURE = """---
exec: python3
args: ["{{ .sourceDir }}/agent.py", "{{ .mode }}"]
repeat: 2
serial: true  # the row stops at its first ERR: sample 0 is always the one checked
redact: ['acct-[0-9]{6}']
metrics:
  - name: answer_length
    extract: json.answer
    unit: chars
---

| Name | mode | CEL Validation |
|---|---|---|
| answers | json | `json.ok && stdout.contains("sk-proj-")` |
| fails | fail | `json.ok` |
| not json | text | `json.ok` |
"""

SECRETS = (
    "sk-proj-" + "Zq8" * 9,
    "sk-ant-api03-" + "Lm4" * 12,
    "AKIA" + "QWERTYUIOPASDFGH",
    "opaque-service-token-5309",
    "acct-484848",
)
# Pieces long enough to identify a key even if masking cut it somewhere in the middle.
FRAGMENTS = ("Zq8Zq8Zq8", "Lm4Lm4Lm4", "QWERTYUIOPASDFGH", "service-token-5309", "acct-48")


def write_fixture(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "agent.py").write_text(AGENT)
    (folder / "leaky.md").write_text(FIXTURE)
    return folder / "leaky.md"


def leaks(text: str) -> list[str]:
    return [f for f in FRAGMENTS if f in text]


def stored_leaks(folder: Path) -> dict[str, list[str]]:
    """Every file under ``folder`` that contains a secret, with the secrets it contains."""
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            if leaks(text):
                found[str(path)] = leaks(text)
    return found


def test_the_agent_really_prints_the_secrets(tmp_path: Path) -> None:
    """Without this the test below could pass by never seeing a secret."""
    import subprocess
    import sys

    fixture = write_fixture(tmp_path / "fixture")
    done = subprocess.run(
        [sys.executable, str(fixture.parent / "agent.py"), "json"],
        capture_output=True,
        text=True,
        env={"SERVICE_TOKEN": "opaque-service-token-5309"},
        check=True,
    )
    assert set(leaks(done.stdout + done.stderr)) == set(FRAGMENTS)


def test_no_secret_reaches_any_output_or_stored_file(tmp_path: Path) -> None:
    fixture = write_fixture(tmp_path / "fixture")
    out = tmp_path / "out"
    step = out / "step_summary.md"
    out.mkdir()
    done = run_cli(
        [str(fixture), "--engine", "local", "--out", str(out / "state"), "--json", str(out / "run.json"),
         "--html", str(out / "r.html"), "--junit", str(out / "r.xml"), "--summary", str(out / "s.md"),
         "--frame", str(out / "f.csv"), "--progress", "plain", "--progress-interval", "0.05"],
        tmp_path,
        {"SERVICE_TOKEN": "opaque-service-token-5309", "GITHUB_STEP_SUMMARY": str(step), "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr  # 'not json' errors
    assert leaks(done.stdout) == [] and leaks(done.stderr) == []
    assert stored_leaks(out) == {}
    # The checks saw the real output: 'answers' asserts the key is there, and passes.
    document = json.loads((out / "run.json").read_text())
    rows = {r["name"]: r for f in document["fixtures"] for r in f["rows"]}
    checked = [s for s in rows["answers"]["samples"] if "assertions" in s]
    assert checked and checked[0]["assertions"]["status"] == "pass"
    # What is kept says where a secret was.
    evidence = (out / "state" / "runs" / document["run_id"] / rows["answers"]["evidence"]).read_text()
    assert evidence.count("[REDACTED]") >= 2 * 6  # 2 samples x (3 keys + token + account in stdout, keys in stderr)
    assert "[REDACTED]" in done.stdout  # the failing rows' excerpts
    for args in (["show", "latest"], ["report", "latest", "--html", str(tmp_path / "again.html")]):
        again = run_cli([*args, "--out", str(out / "state")], tmp_path)
        assert again.returncode == 0 and leaks(again.stdout + again.stderr) == []
    assert leaks((tmp_path / "again.html").read_text()) == []


@pytest.mark.usefixtures("prefect_backend")
def test_no_secret_reaches_prefect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Prefect engine: states, artifacts and logs in the API carry no secret either."""
    from prefect.client.orchestration import get_client

    from flows.flow.matrix import run_with_prefect

    monkeypatch.setenv("SERVICE_TOKEN", "opaque-service-token-5309")
    fixture = write_fixture(tmp_path / "fixture")
    run = run_with_prefect(RunOptions(paths=(str(fixture),), out=str(tmp_path / "state")), "privacy-run")
    assert run.status == "ERR"
    assert stored_leaks(tmp_path / "state") == {}

    with get_client(sync_client=True) as client:  # everything the session's API holds, this run's included
        seen = [flow.model_dump_json() for flow in client.read_flow_runs(limit=200)]
        seen += [task.model_dump_json() for task in client.read_task_runs(limit=200)]
        seen += [log.model_dump_json() for log in client.read_logs(limit=200)]
        seen += [artifact.model_dump_json() for artifact in client.read_artifacts(limit=200)]
    assert any("not json" in text for text in seen), "the API holds this run's records"
    assert [leaks(text) for text in seen if leaks(text)] == []
