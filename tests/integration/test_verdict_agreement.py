"""One answer everywhere: the run's own verdict and the baseline gate's answer read the same in every
output (terminal, ``show``, ``history``, run.json, HTML, summary, JUnit, Prefect) and agree with the
exit code, on both engines, for each situation where they used to part ways.

Each case runs the real command line on a real fixture (a baseline first where the case needs one,
blessed under the name ``base``), then reads every output a person or a CI system would read. The
expected words are written out by hand per case, never derived from the code under test.
"""

from __future__ import annotations

import html
import json
import re
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest
from prefect import get_client
from prefect.client.orchestration import SyncPrefectClient

from tests.integration.conftest import WIDE, run_cli
from tests.integration.prefect_views import FlowRunView, view

T = TypeVar("T")

# A row whose stdout comes from a file the case writes (so a baseline and the run can differ).
MEASURED = """---
metrics:
  - {name: ms, extract: json.ms, unit: ms, direction: lower, threshold: {regressionPercent: 10}}
---
| Name | Command | CEL |
|---|---|---|
| steady | `cat ms.json` | `json.ms > 0` |
| broken | `echo '{"ok": false, "ms": 5}'` | `json.ok` |
"""

# Two arms; the gates below decide. Every arm row passes its own CEL unless the case says otherwise.
SUITE = """---
exec: echo
arms:
  a: {{args: [a]}}
  b: {{args: [b]}}
gates:
{gates}
---
| Name | CEL |
|---|---|
| one | `{cel}` |
"""


@dataclass(frozen=True)
class Case:
    """A situation, how to set it up, and what every output must say (written by hand)."""

    name: str
    files: dict[str, str]
    args: tuple[str, ...]
    shown: str  # the run's own verdict as reports show it
    gate: str  # the baseline gate's answer in history ("-": not compared)
    exit_code: int
    answer: str  # "VERDICT · GATE · exit N", as every report words it
    status: str  # run.json "status"
    regressed: bool | None  # run.json comparison.regressed (None: no comparison)
    baseline_files: dict[str, str] = field(default_factory=dict)  # files for the baseline run, when one is needed


CASES = [
    Case(
        "failing row, no regression",
        {"suite.md": MEASURED, "ms.json": '{"ms": 100}'},
        ("--baseline", "base"),
        "FAIL", "no regression", 0, "FAIL · no regression against base · exit 0", "FAIL", False,
        baseline_files={"ms.json": '{"ms": 100}'},
    ),
    Case(
        "regression, every row passing",
        {"suite.md": MEASURED.replace("`json.ok`", "`!json.ok`"), "ms.json": '{"ms": 300}'},
        ("--baseline", "base"),
        "PASS", "regressed", 1, "PASS · regression against base · exit 1", "PASS", True,
        baseline_files={"ms.json": '{"ms": 100}'},
    ),
    Case(
        "hard gate failure",
        {"suite.md": SUITE.format(gates="  - {name: b passes, cel: 'rows.all(r, r.arms.b.status == \"PASS\")'}",
                                  cel='stdout.contains("a")')},
        (),
        "FAIL", "-", 1, "FAIL · exit 1", "FAIL", None,
    ),
    Case(
        "soft gate warning",
        {"suite.md": SUITE.format(
            gates="  - {name: ran, cel: 'rows.size() == 1'}\n"
                  "  - {name: b is instant, cel: 'rows.all(r, r.arms.b.duration_ms < 0.0)', severity: soft}",
            cel="true")},
        (),
        "PASS", "-", 0, "PASS · exit 0", "PASS", None,
    ),
    Case(
        "an error",
        {"suite.md": "| Name | Command | CEL |\n|---|---|---|\n| missing | `echo '{}'` | `json.zz == 1` |\n"},
        (),
        "ERR", "-", 2, "ERR · exit 2", "ERR", None,
    ),
    Case(
        "dry run",
        {"suite.md": SUITE.format(gates="  - {name: ran, cel: 'rows.size() == 1'}", cel="true")},
        ("--dry-run",),
        "DRY RUN", "-", 0, "DRY RUN · exit 0", "SKIP", None,
    ),
]  # fmt: skip


@pytest.fixture(scope="module")
def client(prefect_server: Any) -> Iterator[SyncPrefectClient]:
    from prefect.settings import temporary_settings

    with temporary_settings(updates={"api.url": prefect_server.api_url}), get_client(sync_client=True) as found:
        yield found


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")


def assay(folder: Path, *args: str) -> tuple[int, str, str]:
    done = run_cli(list(args), cwd=folder, env=WIDE)
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("engine", ["local", "prefect"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_output_gives_the_same_answer_as_the_exit_code(
    tmp_path: Path, case: Case, engine: str, request: pytest.FixtureRequest
) -> None:
    write(tmp_path, {**case.files, **case.baseline_files})
    if case.baseline_files:
        assay(tmp_path, "run", "suite.md", "--engine", "local")
        code, stdout, stderr = assay(tmp_path, "bless", "latest", "--name", "base", "--force")
        assert code == 0, stdout + stderr
        write(tmp_path, case.files)
    engine_args = ("--engine", "local") if engine == "local" else ()
    reports = ("--json", "out.json", "--html", "out.html", "--junit", "out.xml", "--summary", "out.md")

    code, stdout, stderr = assay(tmp_path, "run", "suite.md", *engine_args, *reports, *case.args)

    # the exit code, then each output in turn
    assert code == case.exit_code, stdout + stderr
    assert f"\nverdict: {case.answer}" in stdout, stdout[-1500:]
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["status"] == case.status
    assert (document.get("comparison") or {}).get("regressed") == case.regressed
    code_shown, shown, _ = assay(tmp_path, "show", document["run_id"])
    assert code_shown == 0 and f"\nverdict: {case.answer}" in shown
    _, history, _ = assay(tmp_path, "history")
    line = next(line for line in history.splitlines() if document["run_id"] in line)
    assert [cell.strip() for cell in line.split("│")[4:7]] == [case.shown, case.gate, str(case.exit_code)]
    page = (tmp_path / "out.html").read_text()
    assert 'class="badge verdict' in page and f">{case.shown}</span>" in page
    assert f"verdict: {html.escape(case.answer)} — " in page
    assert f"Verdict: {case.answer} — " in (tmp_path / "out.md").read_text()
    assert_junit_agrees(tmp_path / "out.xml", case.exit_code)
    if engine == "prefect":
        client = request.getfixturevalue("client")
        assert_prefect_agrees(client, stdout, case)


def assert_junit_agrees(path: Path, exit_code: int) -> None:
    """A CI page reads JUnit, not the exit code: failures and errors exactly when the run exits non-zero."""
    root = ET.parse(path).getroot()
    suites = root.findall("testsuite")
    failures = sum(int(s.get("failures", "0")) for s in suites)
    errors = sum(int(s.get("errors", "0")) for s in suites)
    assert (failures > 0 or errors > 0) is (exit_code != 0), ET.tostring(root, encoding="unicode")[:3000]
    assert (errors > 0) is (exit_code == 2)
    counted = sum(
        1 for s in suites for c in s.iter("testcase") for tag in ("failure", "error") if c.find(tag) is not None
    )
    assert counted == failures + errors  # the counts are those of the testcases
    exits = {p.get("value") for p in root.iter("property") if p.get("name") == "assay.exit_code"}
    assert exits == {str(exit_code)}


def assert_prefect_agrees(client: SyncPrefectClient, stdout: str, case: Case) -> None:
    """The flow run's state follows the exit code, and its message and report artifact give the answer."""
    match = re.search(r"^Prefect flow run: http://\S+/runs/flow-run/([0-9a-f-]{36})$", stdout, re.MULTILINE)
    assert match, stdout[-500:]
    flow_run_id = UUID(match.group(1))
    found = poll(lambda: view(client, flow_run_id), finished)
    state = found.flow_run.state
    assert state is not None
    assert state.name == ("Completed" if case.exit_code == 0 else "Failed"), state
    assert f"assay verdict {case.answer} (run " in (state.message or "")
    report = next(a for key, a in found.artifacts.items() if key.startswith("assay-report-"))
    assert f"Verdict: {case.answer} — " in str(report.data)


def finished(found: FlowRunView) -> bool:
    """The flow run is final and its report artifact is recorded."""
    state = found.flow_run.state
    return state is not None and state.is_final() and any(key.startswith("assay-report-") for key in found.artifacts)


def poll(read: Callable[[], T], done: Callable[[T], bool], timeout: float = 60.0) -> T:
    """Read until ``done`` (the API records states and artifacts a moment after the run); bounded."""
    deadline = time.monotonic() + timeout
    while True:
        found = read()
        if done(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


# --- the last disagreements (issue 28): each situation on both engines, words written by hand ---------


def engine_args(engine: str, request: pytest.FixtureRequest) -> tuple[str, ...]:
    if engine == "prefect":
        request.getfixturevalue("prefect_server")
        return ()
    return ("--engine", "local")


def blessed_base(folder: Path, files: dict[str, str], name: str = "base") -> str:
    """Run ``suite.md`` with ``files`` (local engine) and bless it as ``name``; the run id."""
    write(folder, files)
    code, stdout, stderr = assay(folder, "run", "suite.md", "--engine", "local", "--json", "base.json")
    run_id = json.loads((folder / "base.json").read_text())["run_id"]
    code, stdout, stderr = assay(folder, "bless", run_id, "--name", name)
    assert code == 0, stdout + stderr
    return str(run_id)


def last_line(stdout: str) -> str:
    """The report's last line (the Prefect engine adds the flow run's address after it)."""
    lines = [line for line in stdout.splitlines() if line and not line.startswith("Prefect flow run: ")]
    return lines[-1]


ENGINES = ["local", "prefect"]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_new_row_failing_in_a_regressed_run_is_a_junit_failure(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    row = '| {name} | `echo {out}` | `stdout.contains("ok")` |\n'
    header = "| Name | Command | CEL |\n|---|---|---|\n"
    blessed_base(tmp_path, {"suite.md": header + row.format(name="alpha", out="ok")})
    write(tmp_path, {"suite.md": header + row.format(name="alpha", out="ok") + row.format(name="beta", out="no")})

    code, stdout, stderr = assay(
        tmp_path, "run", "suite.md", *engine_args(engine, request), "--baseline", "base", "--junit", "out.xml"
    )

    assert code == 1, stdout + stderr
    assert "verdict: FAIL · regression against base · exit 1 — 1 row failed: 'beta'; regression against base" in stdout
    beta = next(c for c in ET.parse(tmp_path / "out.xml").getroot().iter("testcase") if c.get("name") == "beta")
    assert beta.find("failure") is not None and beta.find("skipped") is None, ET.tostring(beta, encoding="unicode")
    assert_junit_agrees(tmp_path / "out.xml", 1)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_passing_suite_whose_weak_arm_failed_names_its_gates_not_every_row(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    gates = (
        "  - {name: ran, cel: 'rows.size() == 1'}\n"
        "  - {name: b is instant, cel: 'rows.all(r, r.arms.b.duration_ms < 0.0)', severity: soft}"
    )
    write(tmp_path, {"suite.md": SUITE.format(gates=gates, cel='stdout.contains("a")')})  # arm b fails its CEL
    reports = ("--html", "out.html", "--summary", "out.md", "--junit", "out.xml")

    code, stdout, stderr = assay(tmp_path, "run", "suite.md", *engine_args(engine, request), *reports)

    why = (
        "PASS · exit 0 — the hard ship gate 'ran' passed; 1 arm row failed its own checks, evidence for the "
        "gates: 'one/b'; soft ship gate 'b is instant' warned"
    )
    assert code == 0, stdout + stderr
    assert last_line(stdout) == f"verdict: {why}"
    assert "PASS  1 passed, 1 failed, 0 errored, 0 skipped; 2 samples" in stdout
    for output in (stdout, *(tmp_path.joinpath(name).read_text() for name in ("out.html", "out.md", "out.xml"))):
        assert "every row passed" not in output
    assert f"verdict: {html.escape(why)}" in (tmp_path / "out.html").read_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_run_bless_refuses_a_regressed_run_and_ends_with_the_verdict(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    blessed_base(tmp_path, {"suite.md": MEASURED.replace("`json.ok`", "`!json.ok`"), "ms.json": '{"ms": 100}'})
    write(tmp_path, {"ms.json": '{"ms": 300}'})  # 3x slower: a regression, every row passing

    code, stdout, stderr = assay(
        tmp_path, "run", "suite.md", *engine_args(engine, request), "--baseline", "base", "--bless", "--json", "r.json"
    )

    assert code == 1, stdout + stderr
    assert last_line(stdout) == "verdict: PASS · regression against base · exit 1 — regression against base"
    assert "not blessed: it regressed against base (exit 1) (--force blesses it anyway)" in stdout
    assert stdout.index("not blessed:") < stdout.index("verdict: PASS")
    assert not (tmp_path / ".assay" / "baselines" / "shipped.json").exists()
    if engine == "local":  # `assay bless` reads the same refusal; --force overrides it
        run_id = json.loads((tmp_path / "r.json").read_text())["run_id"]
        code, stdout, stderr = assay(tmp_path, "bless", run_id)
        assert (code, stdout) == (2, "")
        assert (
            stderr
            == f"error: not blessing run {run_id}: it regressed against base (exit 1) (--force blesses it anyway)\n"
        )
        code, stdout, stderr = assay(tmp_path, "bless", run_id, "--force")
        assert code == 0 and (tmp_path / ".assay" / "baselines" / "shipped.json").exists(), stdout + stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_the_ab_report_names_the_baseline_it_compared_with(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    suite = SUITE.format(gates="  - {name: ran, cel: 'rows.size() == 1'}", cel="true")
    run_id = blessed_base(tmp_path, {"suite.md": suite}, name="abhard")

    code, stdout, stderr = assay(
        tmp_path, "run", "suite.md", *engine_args(engine, request), "--baseline", "abhard", "--html", "out.html"
    )

    assert code == 0, stdout + stderr
    assert f"Regression vs abhard (run {run_id}):" in stdout
    assert "shipped" not in stdout
    page = (tmp_path / "out.html").read_text()
    assert f"Regression vs abhard (run {run_id}):" in page and f"Comparison with abhard (run {run_id})" in page


@pytest.mark.parametrize("engine", ENGINES)
def test_the_html_of_an_errored_run_with_a_baseline_says_there_is_no_comparison(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    blessed_base(tmp_path, {"suite.md": MEASURED.replace("`json.ok`", "`!json.ok`"), "ms.json": '{"ms": 100}'})
    write(tmp_path, {"ms.json": '{"no": 1}'})  # json.ms: no such key, the run errs

    code, stdout, stderr = assay(
        tmp_path, "run", "suite.md", *engine_args(engine, request), "--baseline", "base", "--html", "out.html"
    )

    assert code == 2, stdout + stderr
    note = "no comparison with the baseline: the run itself errored"
    assert note in stdout and note in (tmp_path / "out.html").read_text()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_dry_run_counts_no_samples_and_its_junit_never_calls_hard_gates_warnings(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    write(tmp_path, {"suite.md": SUITE.format(gates="  - {name: ran, cel: 'rows.size() == 1'}", cel="true")})

    code, stdout, stderr = assay(
        tmp_path,
        "run",
        "suite.md",
        *engine_args(engine, request),
        "--dry-run",
        "--junit",
        "out.xml",
        "--json",
        "out.json",
    )

    assert code == 0, stdout + stderr
    assert "DRY RUN  0 passed, 0 failed, 0 errored, 2 skipped; 0 samples; nothing was scored" in stdout
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["samples"] == 0
    junit = (tmp_path / "out.xml").read_text()
    assert "WARNED" not in junit  # a hard gate never reads as a warning
    gate = next(c for c in ET.fromstring(junit).iter("testcase") if c.get("name") == "hard gate ran")
    skipped = gate.find("skipped")
    assert skipped is not None
    told = "hard ship gate 'ran' of suite.md: NOT EVALUATED: dry run: nothing was scored (rows.size() == 1)"
    assert skipped.get("message") == told


JUDGED = """---
exec: echo
arms:
  a: {args: [a]}
  b: {args: [b]}
judge:
  command: python3 {{ .sourceDir }}/judge.py
---
| Name | CEL |
|---|---|
| one | `true` |
"""
JUDGE = (
    "import json, sys\n"
    "candidates = json.load(sys.stdin)['candidates']\n"
    "scores = {k: {'axes': {}, 'total': 90 if v['stdout'].strip() == 'a' else 80, 'disqualifier': False,"
    " 'findings': []} for k, v in candidates.items()}\n"
    "print(json.dumps({'scores': scores, 'winner': max(scores, key=lambda k: scores[k]['total'])}))\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_judge_header_shows_the_command_that_ran_and_counts_read_right(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    write(
        tmp_path, {"suite.md": JUDGED, "judge.py": JUDGE, "one.md": "| Name | Command |\n|---|---|\n| x | `true` |\n"}
    )

    code, stdout, stderr = assay(tmp_path, "run", "suite.md", *engine_args(engine, request))
    code_one, one, _ = assay(tmp_path, "run", "one.md", "--engine", "local")

    assert code == 0, stdout + stderr
    assert f"Judge: python3 {tmp_path}/judge.py; blind (seed " in stdout
    assert "{{" not in stdout
    assert "PASS  1 passed, 0 failed, 0 errored, 0 skipped; 1 sample\n" in one


@pytest.mark.parametrize("engine", ENGINES)
def test_cel_sees_a_nul_byte_exactly_or_the_row_errs_saying_why(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    write(tmp_path, {"suite.md": (
        "| Name | Command | CEL |\n|---|---|---|\n"
        "| has nul | `printf 'a\\0b'` | `stdout.contains(\"\\x00\") && stdout.size() == 3` |\n"
        "| no nul | `printf 'a\\0b'` | `!stdout.contains(\"\\x00\")` |\n"
        "| nul key | `printf '{\"a\\\\u0000b\": 1}'` | `json.size() == 1` |\n"
    )})  # fmt: skip

    code, stdout, stderr = assay(tmp_path, "run", "suite.md", *engine_args(engine, request), "--json", "out.json")

    assert code == 2, stdout + stderr
    rows = {row["name"]: row for row in json.loads((tmp_path / "out.json").read_text())["fixtures"][0]["rows"]}
    assert {name: row["status"] for name, row in rows.items()} == {
        "has nul": "PASS",
        "no nul": "FAIL",
        "nul key": "ERR",
    }
    key = "the map key 'a\\x00b' holds a NUL byte, which CEL cannot be given exactly"
    assert rows["nul key"]["samples"][0]["assertions"]["error"] == key
