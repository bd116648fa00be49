"""The ship-gate report (``fixtures_core.reports.shipgate``) of the example suite, as text and Markdown."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from fixtures_core.records.store import Store
from fixtures_core.reports import markdown, terminal
from fixtures_core.reports.shipgate import points, text_lines, verdict_text
from tests.core.conftest import ExampleRun
from tests.suites import EXAMPLE_SUITE, REPO, run_in_process


def test_points_read_like_the_seed() -> None:
    assert [points(95.0), points(89.25), points(7.0, sign=True), points(-1.5, sign=True), points(None)] == [
        "95", "89.2", "+7", "-1.5", "-",
    ]  # fmt: skip


def test_the_example_suite_report(example_run: ExampleRun) -> None:
    (suite,) = example_run.run.suites

    lines = text_lines(suite)

    assert lines[0] == "A/B suite examples/ab/suite.md"
    assert lines[1].startswith("Judge: python3 judge.py; blind (seed ")
    assert lines[1].endswith("provenance: examples/ab/judge.py (deterministic)")
    table = lines[3:7]
    assert table[0].split() == ["Fixture", "careful", "hasty", "Margin", "Verdict"]
    assert table[1].split() == ["loud-flag", "100", "84", "+16", "PASS"]
    # hasty is disqualified in config-comments: it loses the case, marked DQ; the margin stays the score difference
    # and the averages cover every arm (seed 04, devlyn's harness): hasty (84 + 80 + 100) / 3 = 88; the suite
    # margin is (16 + 20 + 0) / 3 = +12
    assert table[2].split() == ["config-comments", "100", "80", "DQ", "+20", "PASS"]
    assert table[3].split() == ["docstring", "100", "100", "+0", "EXPECTED", "(known-limit)"]
    assert "Suite average careful score: 100" in lines
    assert "Suite average hasty score:   88" in lines
    assert "Suite average margin:        +12" in lines
    assert any(line.startswith("DISQUALIFIED config-comments/hasty: loses the case (") for line in lines)
    assert "Hard-floor violations:       0" in lines  # devlyn's: no careful arm was disqualified
    assert "Failed hard gates:           0" in lines  # assay's own count
    assert "Regression vs shipped:       n/a (first run)" in lines
    assert verdict_text(suite) == "SHIP-GATE VERDICT: PASS"


def test_report_md_is_written_beside_the_run_document(example_run: ExampleRun) -> None:
    run = example_run.run

    run_dir = Store(example_run.state).run_dir(run.run_id)
    report = (run_dir / "report.md").read_text()

    # One Markdown summary: report.md, --summary and the Prefect artifact, with the run document's path.
    assert report == markdown.render(run, (run_dir / "run.json").resolve())
    assert report.startswith(f"# assay run `{run.run_id}`: **PASS**")
    assert "## A/B suite `examples/ab/suite.md`" in report
    assert "| Fixture | careful | hasty | Margin | Verdict |" in report
    assert "| config-comments | 100 | 80 DQ | +20 | PASS |" in report
    assert "| careful is never disqualified | hard | ok |" in report
    assert "**SHIP-GATE VERDICT: PASS**" in report


def test_the_terminal_report_ends_with_the_ship_gate_then_the_run_verdict(tmp_path: Path) -> None:
    run = run_in_process(EXAMPLE_SUITE, tmp_path, dry_run=True)
    buffer = io.StringIO()

    terminal.render(run, Console(file=buffer, width=160, highlight=False))

    text = buffer.getvalue()
    assert "Dry run: workspaces prepared, setup and verification ran; no arm ran, nothing was judged." in text
    assert "loud-flag        verify 67%  verify 67%       -  READY" in text
    verdict = "DRY RUN  0 passed, 0 failed, 0 errored, 6 skipped; 0 samples; nothing was scored"  # none ran
    assert text.index("SHIP-GATE VERDICT: DRY RUN\n") < text.index(verdict)
    assert "PASS" not in text, "nothing ran, so nothing passed"


def test_readme_shows_the_example_suites_real_report(example_run: ExampleRun) -> None:
    (suite,) = example_run.run.suites
    readme = (REPO / "README.md").read_text()
    start = readme.index("A/B suite examples/ab/suite.md\n")
    shown = readme[start : readme.index("SHIP-GATE VERDICT", start)].splitlines()

    actual = text_lines(suite)

    assert suite.judge is not None
    assert [re.sub(r"seed \d+", "seed N", line) for line in shown] == [
        re.sub(r"seed \d+", "seed N", line) for line in actual
    ]
