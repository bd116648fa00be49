"""The morning report, as its readers get it: pages opened in headless Chromium and looked at.

Three situations, each a page a nightly's owner opens in the morning:

* ``assay trends`` over 14 nights of a 4-row matrix: one row broke last night, one is flaky now and then,
  one got slower on night 10 (a metric step) and costs twice as much since; over 8 nights, a row that broke
  four nights ago leads the page, dated (and ``--json`` says the same, ``history`` keeps ids whole);
* two nights in a git repository: the run page, the summary and the trends name the commits between them;
* a 100-row provider x model matrix, its second night: the first screen says what failed (each failure
  dated) and what changed since the night before, and the pass-rate heat-map; with a baseline, the metric
  that moved on 20 rows, grouped by their provider, and the comparison folded to what moved;
* the 9-fixture A/B suite of ``tests/devlyn`` (its second night, against the blessed first): the first
  screen gives the ship decision, what changed since in the A/B's terms, and the cases that broke its gates
  with why.

One Chromium serves the module. The runs are real (the pipeline in process, or the command line); each
page is written by the command line. Set ``ASSAY_SCREENSHOTS=DIR`` to keep the screenshots.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from tests.browser import Page, headless_chromium
from tests.devlyn.compare import Ran
from tests.integration.conftest import WIDE, run_cli
from tests.integration.test_devlyn_corpus import shared_runs
from tests.suites import run_in_process

SCREEN = "innerHeight"  # the first screen: what the window shows before any scrolling (1280 px wide)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """The devlyn corpus' nights (``test_devlyn_corpus`` computes them once per session)."""
    return shared_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    with headless_chromium(tmp_path_factory.mktemp("chromium")) as page:
        yield page


def keep(screenshot: Path) -> None:
    """Copy a screenshot where ``ASSAY_SCREENSHOTS`` says (for people to look at), when it is set."""
    folder = os.environ.get("ASSAY_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(screenshot, Path(folder) / screenshot.name)


def colours(screenshot: Path) -> tuple[float, int, int]:
    """Share of ink, red pixels (FAIL) and green pixels (PASS) of a screenshot."""
    image = Image.open(screenshot).convert("RGB")
    found = image.getcolors(maxcolors=1 << 24) or []
    total = image.width * image.height
    ink = sum(count for count, rgb in found if min(rgb) < 200) / total
    red = sum(count for count, (r, g, b) in found if abs(r - 0xC6) < 12 and g < 60 and b < 60)
    green = sum(count for count, (r, g, b) in found if r < 70 and abs(g - 0x7D) < 14 and b < 70)
    return ink, red, green


def below_the_fold(selector: str) -> str:
    """A page expression: the bottom of the first element matching ``selector`` (or -1), in CSS px."""
    return f"(e => e ? e.getBoundingClientRect().bottom : -1)(document.querySelector({selector!r}))"


# --- 14 nights of a 4-row matrix: assay trends -------------------------------------------------

NIGHTLY = """---
repeat: 3
metrics:
  - {name: latency_ms, extract: json.ms, unit: ms, direction: lower}
  - {name: cost_usd, extract: json.cost, unit: usd, gate: false}
---

| Name | Command | CEL |
|---|---|---|
| steady | `sh -c 'cat steady-$ASSAY_SAMPLE.json'` | `json.ok` |
| breaks | `sh -c 'cat breaks-$ASSAY_SAMPLE.json'` | `json.ok` |
| wobbly | `sh -c 'cat wobbly-$ASSAY_SAMPLE.json'` | `json.ok` |
| slower | `sh -c 'cat slower-$ASSAY_SAMPLE.json'` | `json.ok` |
"""


def night(folder: Path, index: int, nights: int = 14, breaks_from: int | None = None) -> None:
    """What each row prints on night ``index`` (0-based), per sample: breaks fails on the last night only
    (from night ``breaks_from`` on, when given); wobbly's second sample fails on nights 3, 6, 9 and 11; slower
    takes 1500 ms instead of 1000 from night 9 (run 10) and costs 0.02 instead of 0.01."""
    for sample in range(3):
        outputs = {
            "steady": (True, 100 + index % 3, 0.01),
            "breaks": (index < (nights - 1 if breaks_from is None else breaks_from), 200, 0.01),
            "wobbly": (not (index in (3, 6, 9, 11) and sample == 1), 300, 0.01),
            "slower": (True, 1000 if index < 9 else 1500, 0.01 if index < 9 else 0.02),
        }
        for name, (ok, ms, cost) in outputs.items():
            (folder / f"{name}-{sample}.json").write_text(json.dumps({"ok": ok, "ms": ms, "cost": cost}))


def test_trends_of_14_nights_name_the_flip_the_flaky_row_and_the_step(
    browser: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nightly.md").write_text(NIGHTLY)
    monkeypatch.chdir(tmp_path)  # the runs name nightly.md as a command line started here would
    state = tmp_path / ".assay"
    ids = []
    for index in range(14):
        night(tmp_path, index)
        ids.append(run_in_process(tmp_path / "nightly.md", state, label="nightly").run_id)

    page = tmp_path / "trends.html"
    done = run_cli(["trends", "--html", str(page), "--out", str(state)], tmp_path, WIDE)

    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "1 row flipped since the previous run: 'breaks' PASS -> FAIL" in lines
    assert "'wobbly': flaky in 4 of the last 14 runs" in lines
    assert lines.index("failing now, the oldest break first: 'breaks' new tonight") < lines.index(
        "1 row flipped since the previous run: 'breaks' PASS -> FAIL"
    )
    assert f"'slower' latency_ms: 1,000 -> 1,500 ms (+50.0%) from run 10 ({ids[9]}) (worse)" in lines
    assert all(run_id in done.stdout for run_id in ids)  # whole ids, to paste into `assay show`

    screenshot = tmp_path / "trends-14-nights.png"
    rows = "[...document.querySelectorAll('tr.trend')]"
    loaded = browser.load(
        page.as_uri(),
        {
            "rows": f"{rows}.map(r => r.dataset.row)",
            "flipped": f"{rows}.filter(r => r.classList.contains('flipped')).map(r => r.dataset.row)",
            "strip": f"[...{rows}[0].querySelectorAll('svg.strip rect.run')].map(r => r.dataset.status)",
            "flaky": f"{rows}.map(r => r.querySelector('td.changed .flaky').textContent)",
            "flip": f"{rows}[0].querySelector('td.changed .flip').textContent",
            "age": f"{rows}[0].querySelector('td.changed .age').textContent",
            "newest": "document.getElementById('newest').innerText",
            "files": f"[...new Set({rows}.map(r => r.dataset.file))]",
            "steps": "[...document.querySelectorAll('.metric-trend[data-step]')]"
            ".map(m => [m.closest('tr').dataset.row, m.dataset.metric, m.dataset.step])",
            "step_lines": "document.querySelectorAll('svg.spark line.step').length",
            "ids": "[...document.querySelectorAll('code.run-id')].map(c => c.textContent)",
            "cost": "document.getElementById('cost-total').textContent",
            "bars": "document.querySelectorAll('svg.bars rect.bar').length",
            "changed_bottom": below_the_fold("#changed"),
            "screen": SCREEN,
        },
        screenshot,
    )
    keep(screenshot)

    assert loaded.errors == [] and loaded.requests == [page.as_uri()]
    values = loaded.values
    assert values["rows"][0] == "breaks" and values["flipped"] == ["breaks"]  # the flip first
    assert values["strip"] == ["PASS"] * 13 + ["FAIL"]
    assert values["flip"] == "PASS → FAIL since the previous run" and values["files"] == ["nightly.md"]
    assert values["age"] == "new tonight"
    assert values["newest"].startswith(f"FAIL newest run (14 of 14): FAIL, 1 of 4 rows failing: {ids[-1]} ")
    assert "flaky in 4 of the last 14 runs" in values["flaky"]
    # latency and cost both stepped at run 10 (night 9); no other series did
    assert sorted(values["steps"]) == [["slower", "cost_usd", "10"], ["slower", "latency_ms", "10"]]
    assert values["step_lines"] == 2
    assert values["ids"] == ids  # oldest first, whole
    assert values["cost"] == "in all: 1.83 usd (cost_usd over 168 samples)"  # 9 nights x 0.12 + 5 x 0.15
    assert values["bars"] == 14
    assert 0 < values["changed_bottom"] < values["screen"]  # what changed, before any scrolling
    ink, red, green = colours(screenshot)
    assert ink > 0.03 and red > 150 and green > 1000  # the strips: 55 green runs, 5 red


def test_trends_lead_with_a_row_that_broke_four_nights_ago(
    browser: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """8 nights; breaks fails from night 4 on (runs 5..8): nothing flipped last night, and the page still
    opens with the verdict and the broken row, dated."""
    (tmp_path / "nightly.md").write_text(NIGHTLY)
    monkeypatch.chdir(tmp_path)
    state = tmp_path / ".assay"
    ids = []
    for index in range(8):
        night(tmp_path, index, nights=8, breaks_from=4)
        ids.append(run_in_process(tmp_path / "nightly.md", state, label="nightly").run_id)

    page, document = tmp_path / "trends.html", tmp_path / "trends.json"
    done = run_cli(["trends", "--html", str(page), "--json", str(document), "--out", str(state)], tmp_path, WIDE)
    assert done.returncode == 0, done.stderr
    age = f"failing since run 5 ({ids[4]}, {ids[4][:4]}-{ids[4][4:6]}-{ids[4][6:8]}), 4 runs"
    assert f"failing now, the oldest break first: 'breaks' {age}" in done.stdout.splitlines()

    # The same answer for a program: assay trends --json.
    told = json.loads(document.read_text())
    assert told["schema"] == "assay.trends/v1" and told["suite"] == "label 'nightly'"
    assert told["newest"] == {"run_id": ids[-1], "verdict": "FAIL", "rows": 4, "failing": 1}
    assert [run["run_id"] for run in told["runs"]] == ids
    breaks = told["rows"][0]
    assert breaks["name"] == "breaks" and breaks["statuses"] == ["PASS"] * 4 + ["FAIL"] * 4
    assert breaks["age"]["text"] == age and breaks["age"]["runs"] == 4
    assert breaks["age"]["since"]["run"] == 5 and breaks["age"]["since"]["run_id"] == ids[4]
    assert breaks["change"] == {"run": 5, "before": "PASS", "after": "FAIL"} and breaks["flip"] is None
    wobbly = next(row for row in told["rows"] if row["name"] == "wobbly")
    assert wobbly["flaky_runs"] == 2 and wobbly["flip"] == {"before": "FAIL", "after": "PASS"}
    assert told["cost"] == [{"metric": "cost_usd", "unit": "usd", "total": pytest.approx(0.96), "samples": 96}]

    # history in a pipe 80 columns wide keeps every run id whole.
    listed = run_cli(["history", "--out", str(state)], tmp_path, {"COLUMNS": "80"})
    assert listed.returncode == 0, listed.stderr
    assert all(len(line) <= 80 for line in listed.stdout.splitlines())
    assert set(ids) <= set(listed.stdout.split())

    screenshot = tmp_path / "trends-broke-4-nights-ago.png"
    rows = "[...document.querySelectorAll('tr.trend')]"
    loaded = browser.load(
        page.as_uri(),
        {
            "rows": f"{rows}.map(r => r.dataset.row)",
            "age": f"{rows}[0].querySelector('td.changed .age').textContent",
            "changed": "[...document.querySelectorAll('#changed li')].map(li => li.innerText)",
            "newest": "document.getElementById('newest').innerText",
            "changed_bottom": below_the_fold("#changed"),
            "first_row_bottom": below_the_fold("tr.trend"),
            "screen": SCREEN,
        },
        screenshot,
        full_page=False,
    )
    keep(screenshot)
    values = loaded.values
    assert loaded.errors == []
    assert values["newest"].startswith("FAIL newest run (8 of 8): FAIL, 1 of 4 rows failing")
    assert values["changed"][0] == f"failing now, the oldest break first: 'breaks' {age}"
    assert values["changed"][1].startswith("2 rows changed in the last 8 runs: ")
    assert "'breaks' PASS -> FAIL at run 5" in values["changed"][1]
    assert values["rows"][0] == "breaks" and values["age"] == age
    assert 0 < values["changed_bottom"] < values["first_row_bottom"] < values["screen"]


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def test_the_run_page_the_summary_and_trends_name_the_commits_since_the_night_before(
    browser: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two nights in a git repository whose remote is on GitHub, three commits between them: each page names
    the range, the commits' subjects and the forge's compare page; nothing is fetched (the remote is never
    reached: its address does not exist)."""
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "remote", "add", "origin", "git@github.com:acme/widgets.git")
    (tmp_path / "nightly.md").write_text(NIGHTLY)
    night(tmp_path, 0, nights=2)
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "Night one")
    before = git(tmp_path, "rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    state = tmp_path / ".assay"
    run_in_process(tmp_path / "nightly.md", state, label="nightly")
    subjects = ["Make the parser stricter", "Retry the flaky call", "Break the breaks row"]
    night(tmp_path, 1, nights=2)
    for subject in subjects:
        (tmp_path / "CHANGES").write_text(subject)
        git(tmp_path, "add", "-A")
        git(tmp_path, "commit", "-q", "-m", subject)
    after = git(tmp_path, "rev-parse", "HEAD")

    page, summary = tmp_path / "night2.html", tmp_path / "summary.md"
    done = run_cli(
        ["run", "nightly.md", "--engine", "local", "--out", str(state), "--label", "nightly",
         "--html", str(page), "--summary", str(summary)],
        tmp_path, WIDE,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    link = f"https://github.com/acme/widgets/compare/{before}...{after}"
    told = summary.read_text()
    assert f"- 3 commits since the previous run: {before[:12]}..{after[:12]} ({link})" in told
    assert all(f" {subject}" in told for subject in subjects)

    screenshot = tmp_path / "run-page-commits-since.png"
    loaded = browser.load(
        page.as_uri(),
        {
            "commits": "document.querySelector('#since .commits').innerText",
            "link": "document.querySelector('#since .commits a.compare').href",
            "bottom": below_the_fold("#since .commits"),
            "screen": SCREEN,
        },
        screenshot,
        full_page=False,
    )
    keep(screenshot)
    assert loaded.errors == [] and loaded.requests == [page.as_uri()]  # the link is there, never followed
    values = loaded.values
    assert values["commits"].startswith(f"3 commits since the previous run: {before[:12]}..{after[:12]} compare")
    listed = [line.strip() for line in values["commits"].splitlines()[1:] if line.strip()]
    assert [line.split(" ", 1)[1] for line in listed] == list(reversed(subjects))
    assert values["link"] == link and 0 < values["bottom"] < values["screen"]

    trends_page, document = tmp_path / "trends.html", tmp_path / "trends.json"
    done = run_cli(["trends", "--html", str(trends_page), "--json", str(document), "--out", str(state)], tmp_path, WIDE)
    assert done.returncode == 0, done.stderr
    assert f"3 commits since the previous run: {before[:12]}..{after[:12]} ({link})" in done.stdout.splitlines()
    assert f'<a class="compare" href="{link}">compare</a>' in trends_page.read_text()
    changes = json.loads(document.read_text())["changes"]
    assert (changes["before"], changes["after"], changes["total"], changes["link"]) == (before, after, 3, link)
    assert [commit["subject"] for commit in changes["commits"]] == list(reversed(subjects))


# --- a 100-row provider x model matrix, its second night --------------------------------------------

PROVIDERS = ("anthropic", "openai", "google", "mistral", "local")
MODELS = tuple(f"m{index:02d}" for index in range(20))


def big_matrix(folder: Path, failing: set[str], flaky: set[str], slower: str = "") -> Path:
    """100 rows, provider x model, 2 samples each; ``failing`` rows print ok false, ``flaky`` ones on sample 1;
    the ``slower`` provider's rows take 35% longer."""
    lines = [
        "---", "repeat: 2", "metrics:",
        "  - {name: latency_ms, extract: json.ms, unit: ms, direction: lower}",
        "  - {name: cost_usd, extract: json.cost, unit: usd, gate: false}",
        "---", "", "| Name | provider | model | Command | CEL |", "|---|---|---|---|---|",
    ]  # fmt: skip
    for provider in PROVIDERS:
        for index, model in enumerate(MODELS):
            name = f"{provider} {model}"
            for sample in range(2):
                ok = name not in failing and not (name in flaky and sample == 1)
                ms = (100 + 10 * index) * (1.35 if provider == slower else 1)
                output = {"ok": ok, "ms": ms, "cost": 0.001 * (index + 1), "model": model}
                (folder / f"{provider}-{model}-{sample}.json").write_text(json.dumps(output))
            command = f"sh -c 'cat {provider}-{model}-$ASSAY_SAMPLE.json'"
            lines.append(f'| {name} | {provider} | {model} | `{command}` | `json.ok && json.model == "{model}"` |')
    (folder / "matrix.md").write_text("\n".join(lines) + "\n")
    return folder / "matrix.md"


def test_a_100_row_matrix_answers_what_failed_and_what_changed_on_its_first_screen(
    browser: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / ".assay"
    fixture = big_matrix(tmp_path, {"openai m03", "google m11"}, set())
    monkeypatch.chdir(tmp_path)  # runs name a fixture file relative to where they ran, as the command line's will
    run_in_process(fixture, state, label="big", group_by=("provider,model",))  # the night before
    big_matrix(tmp_path, {"google m11", "local m07", "anthropic m02"}, {"mistral m15"})

    page = tmp_path / "big.html"
    done = run_cli(
        ["run", str(fixture), "--engine", "local", "--out", str(state), "--label", "big",
         "--group-by", "provider,model", "--html", str(page)],
        tmp_path, WIDE,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr

    screenshot = tmp_path / "matrix-100-rows-first-screen.png"
    cells = "[...document.querySelectorAll('table.heat[data-measure=\"pass rate\"] td.cell')]"
    visible = "[...document.querySelectorAll('tr.row')].filter(r => r.offsetParent !== null)"
    loaded = browser.load(
        page.as_uri(),
        {
            "since": "document.getElementById('since').innerText",
            "failed": "[...document.querySelectorAll('table.failed tr.failed')].map(r => r.dataset.row)",
            "excerpt": "document.querySelector('table.failed pre.excerpt').textContent",
            "failed_bottom": below_the_fold("table.failed"),
            "heat_bottom": below_the_fold("table.heat"),
            "cells": f"{cells}.length",
            "red_cells": f"{cells}.filter(c => c.textContent.startsWith('0/')).map(c => c.dataset.cell)",
            "visible_rows": f"{visible}.map(r => r.dataset.row)",
            "cost": "document.getElementById('cost-total').textContent",
            "height": "document.documentElement.scrollHeight",
            "screen": SCREEN,
        },
        screenshot,
        full_page=False,
    )
    keep(screenshot)
    assert loaded.errors == [] and loaded.requests == [page.as_uri()]
    values = loaded.values
    assert values["since"].startswith("since the previous run: 3 new failures, 1 fixed, 1 still failing")
    assert "new failures: 'anthropic m02', 'mistral m15', 'local m07'" in values["since"]
    assert values["failed"] == ["anthropic m02", "google m11", "mistral m15", "local m07"]
    assert values["excerpt"] == '{"ok": false, "ms": 120, "cost": 0.003, "model": "m02"}'  # beside its verdict
    assert 0 < values["failed_bottom"] < values["heat_bottom"] < values["screen"]  # both before any scrolling
    assert values["cells"] == 100
    assert sorted(values["red_cells"]) == ["anthropic|m02", "google|m11", "local|m07", "mistral|m15"]
    # Passing rows fold behind their provider: only the 4 failing rows show until a group opens.
    assert values["visible_rows"] == ["anthropic m02", "google m11", "local m07", "mistral m15"]
    assert values["cost"] == "cost: 2.1 usd (cost_usd over 200 samples)"
    assert values["height"] < 8000  # 24,000 px before the page folded what passed
    ink, red, green = colours(screenshot)
    assert ink > 0.03 and red > 300  # the FAIL badges and the verdict box

    # A heat-map cell links to its rows: clicking one opens its provider's group at that row.
    clicked = browser.load(
        page.as_uri() + "?again",  # a new load of the page, its groups folded again
        {
            "folded": "document.querySelector('tr.row[data-row=\"openai m03\"]').offsetParent === null",
            "opened": "new Promise(done => {"
            " addEventListener('hashchange', () => done([location.hash,"
            "  document.getElementById(location.hash.slice(1)).dataset.row,"
            "  document.getElementById(location.hash.slice(1)).offsetParent !== null]), {once: true});"
            " document.querySelector('td.cell[data-cell=\"openai|m03\"] a').click(); })",
        },
    )
    assert clicked.values["folded"] is True
    hash_, row, shown = clicked.values["opened"]
    assert hash_.startswith("#line-") and row == "openai m03" and shown


def test_a_100_row_matrix_with_a_baseline_names_what_got_slower_in_its_first_two_screens(
    browser: Page, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The night after the blessed one: two rows fail (one failed then too), and the 20 anthropic rows take
    35% longer. The since box names the move, grouped by what the rows share; the comparison table shows
    what moved and folds the 180-odd unchanged lines."""
    state = tmp_path / ".assay"
    fixture = big_matrix(tmp_path, {"google m11"}, set())
    monkeypatch.chdir(tmp_path)
    run_in_process(fixture, state, label="big", group_by=("provider,model",))
    assert run_cli(["bless", "latest", "--out", str(state), "--force"], tmp_path, WIDE).returncode == 0
    big_matrix(tmp_path, {"google m11", "local m07"}, set(), slower="anthropic")

    page = tmp_path / "big-baseline.html"
    done = run_cli(
        ["run", str(fixture), "--engine", "local", "--out", str(state), "--label", "big", "--baseline", "shipped",
         "--group-by", "provider,model", "--html", str(page)],
        tmp_path, WIDE,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr

    screenshot = tmp_path / "matrix-100-rows-baseline-first-screen.png"
    comparison = "[...document.querySelectorAll('table.comparison tr')].filter(r => r.offsetParent !== null)"
    loaded = browser.load(
        page.as_uri(),
        {
            "since": "document.getElementById('since').innerText",
            "move": "document.querySelector('#since p.move a').getAttribute('href')",
            "failed": "[...document.querySelectorAll('table.failed span.age')].map(s => s.textContent)",
            "heat_bottom": below_the_fold("table.heat"),
            "comparison_shown": f"{comparison}.length",
            "comparison_all": "document.querySelectorAll('table.comparison tr').length",
            "height": "document.documentElement.scrollHeight",
            "screen": SCREEN,
        },
        screenshot,
        full_page=False,
    )
    keep(screenshot)
    assert loaded.errors == []
    values = loaded.values
    assert "metric moved: latency_ms +35% on 20 rows: provider=anthropic (worse)" in values["since"]
    assert values["move"] == "#comparison"
    assert values["failed"][0].startswith("failing since run ") and values["failed"][1] == "new tonight"
    assert 0 < values["heat_bottom"] < 2 * values["screen"]  # verdict, failures, the move, the heat-map
    # 2 rates + 100 rows x 2 metrics: the 20 slower rows' latency (and the rates that moved) show
    assert values["comparison_all"] > 200 and values["comparison_shown"] < 30
    print(f"page height {values['height']} px, first screen {values['screen']} px")


# --- the 9-fixture A/B suite: the ship decision first -------------------------------------------------


def test_the_ab_page_leads_with_the_ship_decision_and_the_cases_that_broke_its_gates(
    browser: Page, tmp_path: Path, corpus: dict[str, Ran]
) -> None:
    night2 = corpus["night2"]
    run_id = night2.document["run_id"]
    state = night2.results.parents[2]  # STATE/runs/RUN/results
    page = tmp_path / "ab.html"
    done = run_cli(["report", run_id, "--out", str(state), "--html", str(page)], tmp_path, WIDE)
    assert done.returncode == 0, done.stderr

    screenshot = tmp_path / "ab-9-fixtures-first-screen.png"
    gate = "no fixture's variant score fell more than 5 points below shipped"
    loaded = browser.load(
        page.as_uri(),
        {
            "verdict": "document.querySelector('#ship-0 .ship-gate-verdict').innerText",
            "broken": "[...document.querySelectorAll('#ship-0 ul.broken li')].map(li => li.innerText)",
            "broken_bottom": below_the_fold("#ship-0 ul.broken"),
            "decision_top": "document.querySelector('#ship-0 table.decision').getBoundingClientRect().top",
            "screen": SCREEN,
            "cases": "[...document.querySelectorAll('#ship-0 table.decision tr.decision')]"
            ".map(r => [...r.children].map(c => c.innerText))",
            "outcomes": "[...new Set([...document.querySelectorAll('tr.row')].map(r => r.dataset.shown))].sort()",
            "pass_badges_on_arms": "[...document.querySelectorAll('table.rows tr.row td:nth-child(2) .badge')]"
            ".filter(b => b.innerText === 'PASS').length",
            "shipped_marks": "[...document.querySelectorAll('svg.plot[data-metric=score] .lane')]"
            ".filter(l => l.querySelector('line.saved.regressed')).map(l => l.dataset.row)",
            "links": "[...document.querySelectorAll('.case-detail .evidence a')].map(a => a.textContent)",
            "since": "(e => e ? e.innerText : null)(document.getElementById('since'))",
            "why": "[...document.querySelectorAll('#ship-0 ul.why-broken > li')]"
            ".map(li => [li.dataset.case, li.innerText])",
            "why_top": "document.querySelector('#ship-0 p.why-title').getBoundingClientRect().top",
        },
        screenshot,
        full_page=False,
    )
    keep(screenshot)
    assert loaded.errors == [] and loaded.requests == [page.as_uri()]
    values = loaded.values
    assert values["verdict"] == "SHIP-GATE VERDICT: FAIL"
    broken = {line.split(" FAILED")[0].split(" WARNED")[0]: line for line in values["broken"]}
    assert f"hard gate '{gate}'" in broken
    # 90 -> 80 in night 2: the case, and what the gate saw of it
    assert "broken by F3-name-guard (" in broken[f"hard gate '{gate}'"] and "was -10" in broken[f"hard gate '{gate}'"]
    assert 0 < values["broken_bottom"] < values["screen"]  # the gates and the cases that broke them, unscrolled
    # Since the night before, in the A/B's terms: the ship decision then and now, the cases that changed.
    since = values["since"]
    assert since.startswith("since the previous run: ship decision PASS -> FAIL (tests/devlyn/suite), 7 cases changed")
    assert "'F3-name-guard': margin +40 -> +30, winner variant" in since
    assert "'F5-upper-no-deps': margin +11 -> -3, winner variant -> solo_claude" in since
    assert "new failure" not in since  # arm rows passing their own checks say nothing of their cases
    # Why each case that broke a gate went as it did, inline: the failing verify command, the judge's reason.
    why = dict(values["why"])
    assert "bare: verify `node bin/cli.js hello --name " in why["F3-name-guard"]
    assert "failed (timeout)" in why["F3-name-guard"] and "judge (sample 0, winner variant): " in why["F3-name-guard"]
    assert "bare: verify `node --test tests/` failed (unexpected_text)" in why["F7-json-output"]
    assert 0 < values["why_top"] < values["screen"]  # it begins on the first screen
    # 9 gates broken or warned and 8 cases' reasons: the per-case table comes on the second screen
    assert values["decision_top"] < 2 * values["screen"]
    f3 = next(cells for cells in values["cases"] if cells[0].endswith("F3-name-guard"))
    assert f3[0] == "! F3-name-guard" and f3[1].startswith("80 (90)")  # variant now (then)
    # Arm rows read as how they ended their case, never as a green PASS of their own checks.
    assert set(values["outcomes"]) <= {"WON", "LOST", "TIE", "DISQUALIFIED", "FAIL", "ERR"}
    assert "DISQUALIFIED" in values["outcomes"] and values["pass_badges_on_arms"] == 0
    # The shipped comparison is on the score plot: F3's variant lane is marked as the drop that broke a gate.
    assert values["shipped_marks"] == ["F3-name-guard/variant"]
    assert {"diff", "verify", "transcript", "judge input", "judge output"} <= set(values["links"])
    ink, red, green = colours(screenshot)
    assert ink > 0.03 and red > 500  # the FAIL verdict, the ship gate's verdict, the failed gates' cases
