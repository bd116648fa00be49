"""A changed RUBRIC.md, end to end through the command line (issue 44): not comparable means not compared.

The example benchmark is blessed as shipped, its rubric is edited, and the
next run is judged: its regression gates read "not evaluated: not
comparable (RUBRIC.md changed ...)" in the terminal, the Markdown summary,
the HTML page, JUnit and run.json; blessing it says it starts a new
baseline, and ``baselines/blessed.jsonl`` keeps the rubric of each shipped run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.integration.conftest import REPO, WIDE, run_cli

REGRESSION_GATES = (
    "no fixture's variant score fell more than 5 points below shipped",
    "the suite margin dropped no more than 3 points vs shipped",
    "no fixture lost its margin (above +5 in shipped, 0 or less now)",
    "the critical-finding catch rate of variant did not fall vs shipped",
)


def test_a_changed_rubric_is_not_compared_anywhere_and_its_bless_starts_a_new_baseline(tmp_path: Path) -> None:
    shutil.copytree(REPO / "examples" / "devlyn", tmp_path / "bench")
    run = ["run", "bench/suite.md", "--engine", "local", "--bless"]
    first = run_cli(run, tmp_path, WIDE)
    assert first.returncode == 0 and "a new baseline" not in first.stdout, first.stdout + first.stderr
    rubric = tmp_path / "bench" / "RUBRIC.md"
    rubric.write_text(rubric.read_text() + "\nA fifth rule nobody scored with before.\n")

    reports = ["--json", "run.json", "--summary", "summary.md", "--html", "page.html", "--junit", "junit.xml"]
    second = run_cli([*run, *reports], tmp_path, WIDE)

    assert second.returncode == 0, second.stdout + second.stderr
    document = json.loads((tmp_path / "run.json").read_text())
    (suite,) = document["suites"]
    why = suite["incomparable"]
    assert suite["comparable"] is False and why.startswith("RUBRIC.md changed: sha256 ")
    reason = f"not comparable ({why}): the saved run's figures are not compared"
    gates = {g["name"]: g for g in suite["gates"]}
    for name in REGRESSION_GATES:
        assert (gates[name]["status"], gates[name]["error"]) == ("not_evaluated", reason), name
    shipped = f"Regression vs shipped (run {first_run_id(tmp_path)}):"
    assert f"{shipped} not compared: not comparable ({why})" in " ".join(second.stdout.split())
    assert f"Not compared with: run {first_run_id(tmp_path)}," in " ".join(second.stdout.split())
    for report in ("summary.md", "page.html", "junit.xml"):
        text = (tmp_path / report).read_text()
        assert "not comparable" in text and why[:30] in text, report
    # blessing it says it starts a new baseline; the record keeps the rubric each shipped run was judged with
    assert "a new baseline: it is not comparable with the one it replaces (" in second.stdout
    lines = (tmp_path / ".assay" / "baselines" / "blessed.jsonl").read_text().splitlines()
    blessed = [json.loads(line) for line in lines]
    assert [b["new_baseline"] is None for b in blessed] == [True, False]
    then, now = (b["suites"][0]["rubric_sha256"] for b in blessed)
    assert then != now and now == suite["judge"]["rubric_sha256"]


def first_run_id(folder: Path) -> str:
    runs = sorted(p.name for p in (folder / ".assay" / "runs").iterdir())
    return runs[0]
