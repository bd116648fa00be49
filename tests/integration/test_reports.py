"""Reports as users get them: files from `assay run` and `assay report`, the HTML in a real browser,
JUnit against published schemas, the GitHub step summary, progress on stderr."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
import xmlschema
from PIL import Image

from tests.browser import headless_chromium
from tests.integration.conftest import REPO, WIDE, run_cli

MATRIX = REPO / "examples" / "matrix.md"
SCHEMAS = REPO / "tests" / "data" / "junit"
SLOW = "---\nrepeat: 3\n---\n\n| Name | Command |\n|---|---|\n| one | `sleep 0.3` |\n| two | `sleep 0.3` |\n"


def local(args: list[str], tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = run_cli([*args, "--engine", "local", "--out", str(tmp_path / "state")], tmp_path, {**WIDE, **(env or {})})
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_example_matrix_html_renders_in_headless_chromium(tmp_path: Path) -> None:
    first = local([str(MATRIX), "--label", "shipped"], tmp_path)
    assert first.returncode == 1
    run_cli(["bless", "latest", "--force", "--out", str(tmp_path / "state")], tmp_path)  # a FAIL run: forced
    page = tmp_path / "report.html"
    done = local([str(MATRIX), "--baseline", "shipped", "--group-by", "selector", "--html", str(page)], tmp_path)
    # Two answers: the run's own verdict is FAIL; the gate's, "did it regress?", is no (the same rows fail
    # as in the blessed run), and it decides the exit code.
    assert done.returncode == 0, done.stderr

    screenshot = tmp_path / "report.png"
    count = "document.querySelectorAll({!r}).length".format
    with headless_chromium(tmp_path / "chromium-profile") as browser:
        loaded = browser.load(
            page.as_uri(),
            {
                "verdict": "document.getElementById('verdict').textContent",
                "answer": "document.getElementById('answer').textContent",
                "rows": count("tr.row"),
                "row_names": "[...document.querySelectorAll('tr.row')].map(r => r.dataset.row)",
                "plots": count("svg.plot"),
                "plot_heights": "[...document.querySelectorAll('svg.plot')].map(s => s.getBoundingClientRect().height)",
                "samples": count("svg.plot circle.sample"),
                "aggregates": count("svg.plot .aggregate"),
                "baselines": count("svg.plot .baseline"),
                "thresholds": count("svg.plot .threshold"),
                "groups": count("table.suite tr.group"),
                "comparison": count("#comparison"),
                "still_failing": "document.querySelector('p.still-failing').textContent",
                "comparison_verdict": "document.getElementById('comparison-verdict').textContent",
                "details": count("details.row-detail"),
                "open_details": count("details.row-detail[open]"),
            },
            screenshot,
        )

    assert loaded.errors == [], loaded.errors
    assert loaded.requests == [page.as_uri()], "the page must load nothing but itself"
    values = loaded.values
    assert values["verdict"] == "FAIL"
    assert values["answer"].startswith("verdict: FAIL · no regression against shipped · exit 0 — 3 rows failed: ")
    assert values["row_names"] == ["API high", "CLI high", "API low", "API flaky"]
    assert (values["plots"], values["samples"], values["aggregates"]) == (3, 60, 12)  # 3 metrics, 4 rows x 5
    assert all(height > 100 for height in values["plot_heights"])  # drawn, not collapsed
    assert values["baselines"] == 3 and values["thresholds"] == 3  # duration_ms vs 'API high'
    assert (values["groups"], values["comparison"]) == (5, 1)  # all rows + 4 selectors; the saved run
    assert values["still_failing"].endswith("(not a regression): CLI high, API low, API flaky")
    assert values["comparison_verdict"] == "No regression against baseline"
    assert (values["details"], values["open_details"]) == (4, 3)

    image = Image.open(screenshot).convert("RGB")
    assert image.width >= 1000 and image.height >= 1500
    colors = image.getcolors(maxcolors=1 << 24) or []
    total = image.width * image.height
    ink = sum(count for count, rgb in colors if min(rgb) < 200) / total
    assert ink > 0.03, f"the screenshot is nearly blank ({ink:.1%} ink)"
    fail_red = sum(count for count, (r, g, b) in colors if abs(r - 0xC6) < 12 and g < 60 and b < 60)
    assert fail_red > 200, "the FAIL badges and failed samples are drawn in red"


def test_run_writes_every_report_and_appends_the_step_summary(tmp_path: Path) -> None:
    step = tmp_path / "step_summary.md"
    step.write_text("## Build\nok\n")
    reports = {name: tmp_path / "reports" / name for name in ("r.html", "r.xml", "s.md", "f.csv")}
    done = local(
        [str(MATRIX), "--html", str(reports["r.html"]), "--junit", str(reports["r.xml"]),
         "--summary", str(reports["s.md"]), "--frame", str(reports["f.csv"])],
        tmp_path,
        {"GITHUB_STEP_SUMMARY": str(step)},
    )  # fmt: skip
    assert done.returncode == 1
    assert "FAIL" in done.stdout.splitlines()[-1]  # the report is still the last thing printed

    junit = reports["r.xml"].read_text()
    for schema in ("ant-junit.xsd", "jenkins-junit-10.xsd"):
        xmlschema.XMLSchema(str(SCHEMAS / schema)).validate(junit)
    cases = ET.fromstring(junit).findall("testsuite/testcase")
    assert len(cases) == 4 and sum(c.find("failure") is not None for c in cases) == 3

    summary = reports["s.md"].read_text()
    assert "API flaky" in summary and "FAIL" in summary
    assert step.read_text() == "## Build\nok\n" + summary + "\n"

    frame = pd.read_csv(reports["f.csv"])
    assert len(frame) == 20 and frame["row"].nunique() == 4


def test_report_and_show_read_a_saved_run_and_say_the_same(tmp_path: Path) -> None:
    junit, page = tmp_path / "run.xml", tmp_path / "run.html"
    ran = local([str(MATRIX), "--junit", str(junit), "--html", str(page), "--progress", "off"], tmp_path)
    state = str(tmp_path / "state")

    shown = run_cli(["show", "latest", "--out", state], tmp_path, WIDE)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == ran.stdout  # the saved run prints exactly as the run did

    again = tmp_path / "again"
    made = run_cli(
        ["report", "latest", "--out", state, "--junit", str(again / "r.xml"), "--html", str(tmp_path / "r.html"),
         "--frame", str(again / "f.parquet")],
        tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines() == [
        f"wrote {p}" for p in (tmp_path / "r.html", again / "r.xml", again / "f.parquet")
    ]
    assert (again / "r.xml").read_text() == junit.read_text()
    # The same bytes as the run wrote, for a page in the same folder (its links to the evidence are relative).
    assert (tmp_path / "r.html").read_text() == page.read_text()
    assert 'href="state/runs/' in page.read_text()  # the rows' raw output, one click away
    assert len(pd.read_parquet(again / "f.parquet")) == 20


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--frame", "out.json"], "error: --frame out.json: the file name must end in .csv or .parquet"),
        (["--html", "."], "error: --html . is a folder: give a file path"),
        (["--progress-interval", "0"], "error: --progress-interval must be > 0 and at most 86400 seconds, got 0"),
        (["--progress-interval", "inf"], "error: --progress-interval must be > 0 and at most 86400 seconds, got inf"),
        (["--progress-interval", "nan"], "error: --progress-interval must be > 0 and at most 86400 seconds, got nan"),
    ],
)
def test_bad_report_options_are_usage_errors_before_anything_runs(
    tmp_path: Path, args: list[str], message: str
) -> None:
    done = local([str(MATRIX), *args], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == message
    assert not (tmp_path / "state").exists(), "nothing ran"


def test_bad_choice_of_progress_is_an_exit_2(tmp_path: Path) -> None:
    done = local([str(MATRIX), "--progress", "sometimes"], tmp_path)
    assert done.returncode == 2 and "sometimes" in done.stderr
    assert not (tmp_path / "state").exists()


def test_report_needs_a_file_to_write(tmp_path: Path) -> None:
    done = run_cli(["report", "latest", "--out", str(tmp_path)], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "error: assay report: give at least one of --html, --html-bundle, --junit, --summary, --frame"
    )


def test_plain_progress_goes_to_stderr_never_to_stdout_or_the_json(tmp_path: Path) -> None:
    fixture = tmp_path / "slow.md"
    fixture.write_text(SLOW)
    document = tmp_path / "run.json"
    args = ["--parallel", "1", "--progress", "plain", "--progress-interval", "0.25", "--json", str(document)]
    done = local([str(fixture), *args], tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("assay: ") for line in lines), lines
    assert any("running one (" in line or "running two (" in line for line in lines)
    assert "assay:" not in done.stdout
    assert json.loads(document.read_text())["status"] == "PASS"

    quiet = local([str(fixture), "--progress", "off"], tmp_path)
    assert quiet.stderr == ""


def test_live_progress_on_a_terminal(tmp_path: Path) -> None:
    fixture = tmp_path / "slow.md"
    fixture.write_text(SLOW)
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "120", "TERM": "xterm-256color"}
    env.pop("PREFECT_API_URL", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "flows.run", str(fixture), "--engine", "local", "--parallel", "1",
         "--out", str(tmp_path / "state")],
        stdin=terminal, stdout=terminal, stderr=terminal, cwd=tmp_path, env=env,
    )  # fmt: skip
    os.close(terminal)
    screen = b""
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal closed: the run is over
                break
            if not chunk:
                break
            screen += chunk
    finally:
        os.close(controller)
        process.wait(timeout=60)
    text = screen.decode("utf-8", "replace")
    assert process.returncode == 0, text
    assert "running one (" in text and "eta " in text  # the live panel was drawn (the report has neither)
    assert "PASS" in text.splitlines()[-1] or "PASS" in text[-200:]  # then the report


def test_ab_suite_html_shows_margins_gates_and_verdict_in_headless_chromium(tmp_path: Path) -> None:
    suite_dir = tmp_path / "ab"
    shutil.copytree(REPO / "examples" / "ab", suite_dir)
    suite = suite_dir / "suite.md"
    suite.write_text(suite.read_text(encoding="utf-8").replace("r.margin >= 5.0", "r.margin >= 50.0"), encoding="utf-8")
    page = tmp_path / "ab.html"
    done = local([str(suite), "--html", str(page)], tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # a hard gate failed; every row passed

    screenshot = tmp_path / "ab.png"
    cells = "[...document.querySelectorAll({!r})].map(e => e.textContent.trim())".format
    with headless_chromium(tmp_path / "chromium-profile") as browser:
        loaded = browser.load(
            page.as_uri(),
            {
                "box": "document.getElementById('verdict-box').innerText",
                "cases": cells("table.ab-cases tr.case td:first-child"),
                "margins": cells("table.ab-cases tr.case td:nth-child(4)"),
                "gates": "[...document.querySelectorAll('table.gates tr.gate')]"
                ".map(r => [...r.children].slice(0, 3).map(c => c.textContent.trim()))",
                "ship_gate": "document.querySelector('.ship-gate-verdict').innerText",
                "ship_gate_visible": "document.querySelector('.ship-gate-verdict').getBoundingClientRect().height",
                "rationales": "document.querySelectorAll('.rationale').length",
                "filter_visible": "!document.getElementById('row-filter').hidden",
                "after_filter": (
                    "document.querySelector('#row-filter button[data-status=WON]').click(),"
                    "[...document.querySelectorAll('tr.row')].filter(r => !r.hidden).length"
                ),
                "sorted": (
                    "document.querySelector('table.rows th').click(),"
                    "[...document.querySelectorAll('tr.row')].map(r => r.dataset.row)"
                ),
            },
            screenshot,
        )
    assert loaded.errors == [], loaded.errors
    assert loaded.requests == [page.as_uri()], "the page must load nothing but itself"
    values = loaded.values
    assert values["box"].startswith("FAIL")
    assert "hard ship gate 'careful wins every gated case by 5 points or more' (" in values["box"]
    assert values["cases"] == ["loud-flag", "config-comments", "docstring"]
    assert values["margins"] == ["+16", "+20", "+0"]  # config-comments: hasty was disqualified; still 100 - 80
    assert values["gates"] == [
        ["careful is never disqualified", "hard", "ok"],
        [
            "careful wins every gated case by 5 points or more",
            "hard",
            "FAILED broken by loud-flag (margin was 16), config-comments (margin was 20)",
        ],  # fmt: skip
        ["the suite margin holds against the shipped run", "soft", "ok"],
    ]
    assert values["ship_gate"] == "SHIP-GATE VERDICT: FAIL" and values["ship_gate_visible"] > 10
    assert values["rationales"] == 3
    # the filter goes by what each row reads: careful won loud-flag and config-comments; docstring is a tie
    assert values["filter_visible"] and values["after_filter"] == 2
    assert values["sorted"] == sorted(values["sorted"])

    image = Image.open(screenshot).convert("RGB")
    colors = image.getcolors(maxcolors=1 << 24) or []
    fail_red = sum(count for count, (r, g, b) in colors if abs(r - 0xC6) < 12 and g < 60 and b < 60)
    assert fail_red > 500, "the FAIL verdict, the failed gate and the ship-gate verdict are drawn in red"
