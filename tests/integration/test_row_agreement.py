"""Every output shows the same answer for each row and arm, and for each case and gate (issue 43).

One run holds a matrix (a row that passes, one flaky, one in error) and an A/B suite judged by a small
script (a case won on points, a tie, one whose variant is disqualified, one skipped for a missing tool)
with a hard gate that fails and a soft one that warns. Then every output a person or a CI system reads is
read back: the terminal report, ``show``, run.json, the HTML page, the Markdown summary, JUnit, the
sample frame and, on the Prefect engine, each row's subflow run and the rows artifact. What each must say
is written out by hand below, never derived from the code under test.
"""

from __future__ import annotations

import csv
import json
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterParentFlowRunId

from tests.integration.conftest import WIDE, run_cli
from tests.integration.prefect_views import view

MATRIX = """| Name | Command | CEL | Repeat |
|---|---|---|---|
| pass | `echo '{"ok": true}'` | `json.ok` | 1 |
| flaky | `sh -c 'if [ "$ASSAY_SAMPLE" = 1 ]; then echo no; else echo yes; fi'` | `stdout.contains("yes")` | 3 |
| err | `echo '{}'` | `json.zz == 1` | 1 |
"""

SUITE = """---
exec: echo
arms:
  variant: {args: ["{{ .v }}"]}
  bare: {args: ["{{ .b }}"]}
compare: [variant, bare]
judge:
  command: python3 {{ .sourceDir }}/judge.py
gates:
  - {name: variant never disqualified, cel: 'rows.all(r, !r.arms.variant.disqualified)', severity: hard}
  - {name: margins of 5, cel: 'rows.all(r, r.margin >= 5.0)', severity: soft}
---
| Name | v | b | Requires |
|---|---|---|---|
| won | 90 | 80 | |
| tie | 85 | 85 | |
| dq | DQ 95 | 70 | |
| absent | 90 | 80 | no-such-tool-xyz |
"""

# Each candidate's score is the last word it printed; DQ in its output is the judge's disqualifier.
JUDGE = """import json, sys
doc = json.load(sys.stdin)
scores = {}
for label, candidate in doc["candidates"].items():
    words = candidate["stdout"].split()
    scores[label] = {"total": float(words[-1]), "axes": {}, "disqualifier": "DQ" in words, "findings": []}
best = max(s["total"] for s in scores.values())
leaders = [label for label, s in scores.items() if s["total"] == best]
print(json.dumps({"scores": scores, "winner": leaders[0] if len(leaders) == 1 else "tie"}))
"""

SKIPPED = "requires no-such-tool-xyz: not found on PATH"

# row -> (the word every output shows, run.json's status and case_result, JUnit's element, Prefect's state)
ROWS: dict[str, tuple[str, str, str | None, str | None, str]] = {
    "pass": ("PASS", "PASS", None, None, "Completed"),
    "flaky": ("FAIL (flaky)", "FAIL", None, "failure", "Failed"),
    "err": ("ERR", "ERR", None, "error", "Failed"),
    "won/variant": ("WON", "PASS", "won", None, "Won"),
    "won/bare": ("LOST", "PASS", "lost", "skipped", "Lost"),  # no failure: the other arm winning is the point
    "tie/variant": ("TIE", "PASS", "tie", "skipped", "Tie"),
    "tie/bare": ("TIE", "PASS", "tie", "skipped", "Tie"),
    "dq/variant": ("DISQUALIFIED", "FAIL", "disqualified", "skipped", "Disqualified"),  # evidence: a hard gate
    "dq/bare": ("WON", "PASS", "won", None, "Won"),
    "absent/variant": ("SKIP", "SKIP", None, "skipped", "Skipped"),
    "absent/bare": ("SKIP", "SKIP", None, "skipped", "Skipped"),
}
# case -> its badge's colour on the page: never green when it broke a gate
CASES = {"won": "tone-pass", "tie": "tone-warn", "dq": "tone-fail", "absent": "tone-skip"}
GATES = {
    "variant never disqualified": "FAILED: broken by dq; left out, skipped: absent",
    "margins of 5": (
        "WARNED: broken by tie (margin was 0); dq: variant was disqualified (the judge disqualified it); "
        "it loses the case whatever its score; left out, skipped: absent"
    ),
}


def table_cells(text: str) -> dict[str, list[str]]:
    """The lines of the first rich table (the rows table) by their first cell."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) > 2:
            found.setdefault(cells[0], cells[1:])
    return found


@pytest.fixture(scope="module", params=["local", "prefect"])
def ran(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp(f"agreement-{request.param}")
    (folder / "matrix.md").write_text(MATRIX)
    (folder / "suite.md").write_text(SUITE)
    (folder / "judge.py").write_text(JUDGE)
    engine = ("--engine", "local") if request.param == "local" else ()
    if request.param == "prefect":
        request.getfixturevalue("prefect_server")
    reports = ("--json", "out.json", "--html", "out.html", "--junit", "out.xml", "--summary", "out.md")
    done = run_cli(["run", "matrix.md", "suite.md", *engine, *reports, "--frame", "out.csv"], folder, WIDE, 300)
    assert "Traceback" not in done.stderr, done.stderr
    document = json.loads((folder / "out.json").read_text())
    shown = run_cli(["show", document["run_id"]], folder, WIDE)
    return {"engine": request.param, "folder": folder, "done": done, "document": document, "shown": shown}


def test_the_run_answers_err_and_its_gates_are_named(ran: dict[str, Any]) -> None:
    done = ran["done"]
    assert done.returncode == 2, done.stdout + done.stderr  # the errored row: ERR > FAIL
    verdict = next(line for line in done.stdout.splitlines() if line.startswith("verdict: "))
    assert verdict == (
        "verdict: ERR · exit 2 — 1 row errored: 'err'; 1 row failed: 'flaky'; "
        "hard ship gate 'variant never disqualified' (suite.md) failed"
    )
    for name, told in GATES.items():
        severity = "hard" if told.startswith("FAILED") else "soft"
        word, _colon, details = told.partition(": ")
        assert f"  {word:<6} {severity:<4} {name}: {details}" in done.stdout


@pytest.mark.parametrize("row", list(ROWS))
def test_every_output_shows_the_same_answer_for_the_row(ran: dict[str, Any], row: str) -> None:
    word, status, case_result, junit_tag, state = ROWS[row]
    folder: Path = ran["folder"]

    # the terminal report and `assay show`
    assert table_cells(ran["done"].stdout)[row][0] == word
    assert table_cells(ran["shown"].stdout)[row][0] == word
    # run.json
    recorded = next(r for f in ran["document"]["fixtures"] for r in f["rows"] if r["name"] == row)
    assert (recorded["status"], recorded.get("case_result")) == (status, case_result)
    # the HTML page: the row's line and its badge
    page = (folder / "out.html").read_text()
    line = re.search(rf'<tr class="row[^"]*" id="[^"]+" data-row="{re.escape(row)}" data-status="([^"]+)"', page)
    assert line is not None and line.group(1) == word
    badge = re.search(
        rf'data-row="{re.escape(row)}"[^>]*><td>.*?</td><td><span class="badge [^"]+">([^<]+)</span>', page
    )
    assert badge is not None and badge.group(1) == word
    # the Markdown summary's rows table
    summary = (folder / "out.md").read_text()
    assert re.search(rf"^\| {re.escape(row)} \| (\*\*)?{re.escape(word)}(\*\*)? \|", summary, re.MULTILINE), row
    # JUnit: a plain pass only for what passed or won
    case = next(c for c in ET.parse(folder / "out.xml").getroot().iter("testcase") if c.get("name", "").startswith(row))
    children = [child.tag for child in case]
    assert children == ([junit_tag] if junit_tag else []), ET.tostring(case, encoding="unicode")
    if junit_tag == "skipped":
        message = case.find("skipped").get("message", "")  # type: ignore[union-attr]
        assert message.startswith(SKIPPED if word == "SKIP" else word), message
    # the sample frame
    with (folder / "out.csv").open() as frame:
        assert {line["row_status"] for line in csv.DictReader(frame) if line["row"] == row} <= {word}


def test_a_skipped_row_names_what_it_lacks_everywhere(ran: dict[str, Any]) -> None:
    folder: Path = ran["folder"]
    assert "SKIP absent/variant  (suite.md:" in ran["done"].stdout and SKIPPED in ran["done"].stdout
    assert SKIPPED in (folder / "out.md").read_text()
    assert SKIPPED in (folder / "out.html").read_text()
    recorded = next(r for f in ran["document"]["fixtures"] for r in f["rows"] if r["name"] == "absent/bare")
    assert recorded["error"] == SKIPPED


def test_a_case_that_broke_a_gate_is_never_green(ran: dict[str, Any]) -> None:
    page = (ran["folder"] / "out.html").read_text()
    for case, tone in CASES.items():
        summary = re.search(rf"<summary>{case} <span class=\"badge ([^\"]+)\">", page)
        assert summary is not None and summary.group(1) == tone, case
    cells = re.findall(r'<tr class="decision case-\w+[^"]*"><td>(?:<span[^>]*>! )?(\w+)(?:</span>)?</td>.*?'
                       r'<span class="badge ([^"]+)">', page)  # fmt: skip
    assert dict(cells) == CASES


def test_the_prefect_states_show_the_same_answer(ran: dict[str, Any], prefect_server: Any) -> None:
    if ran["engine"] != "prefect":
        pytest.skip("the local engine has no Prefect states")
    match = re.search(r"^Prefect flow run: http://\S+/runs/flow-run/([0-9a-f-]{36})$", ran["done"].stdout, re.MULTILINE)
    assert match, ran["done"].stdout[-500:]
    parent = UUID(match.group(1))
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"api.url": prefect_server.api_url}), get_client(sync_client=True) as client:
        deadline = time.monotonic() + 60
        while True:
            subflows = client.read_flow_runs(
                flow_run_filter=FlowRunFilter(parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=[parent]))
            )
            states = {run.name: run.state for run in subflows}
            if all(s is not None and s.is_final() for s in states.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        artifact = next(a for key, a in view(client, parent).artifacts.items() if key.startswith("assay-rows-"))
    assert {name: (state.name if state else None) for name, state in states.items()} == {
        row: expected[4] for row, expected in ROWS.items()
    }
    skipped = states["absent/bare"]
    assert skipped is not None and skipped.message == f"SKIP: {SKIPPED}"
    rows = {line["row"]: line for line in json.loads(str(artifact.data))}
    assert {row: line["status"] for row, line in rows.items()} == {row: e[0] for row, e in ROWS.items()}
    assert rows["absent/variant"]["reason"] == SKIPPED
