"""Judging whole A/B suites (``fixtures_core.execution.judging``): which suites a run has, and which
(case, sample) pairs are judged once every arm has run.

The suite is a real fixture file, its arms run as real subprocesses (``echo``), and the judge is a
small real Python script that prefers the candidate whose output says "good".
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.judge import JudgeSettings
from fixtures_core.execution.judging import judge_suite, new_seed, suites_of
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.parser import parse_file
from fixtures_core.results import RowResult
from fixtures_core.spec import RowSpec
from fixtures_core.suite import SuiteSpec

JUDGE = """
import json, sys
doc = json.load(sys.stdin)
scores = {label: {"total": 80 if "good" in c["stdout"] else 40, "axes": {"spec": 1}}
          for label, c in doc["candidates"].items()}
print(json.dumps({"scores": scores, "winner": max(scores, key=lambda label: scores[label]["total"])}))
"""

SUITE = """---
arms:
  good:
    args: ["good {{{{ .task }}}}"]
  bad:
    args: ["half {{{{ .task }}}}"]
exec: echo
compare: [good, bad]
repeat: 2
judge:
  command: {python} judge.py
  axes: [spec]
---

| Name | task |
|---|---|
| C1 | one |
| C2 | two |
"""


@dataclass(frozen=True)
class RanSuite:
    folder: Path
    specs: tuple[RowSpec, ...]
    suite: SuiteSpec
    rows: tuple[RowResult, ...]

    def rows_except(self, row_id: str) -> list[RowResult]:
        return [row for row in self.rows if row.id != row_id]

    def changed(self, row_id: str, **changes: object) -> list[RowResult]:
        return [replace(row, **changes) if row.id == row_id else row for row in self.rows]  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> RanSuite:
    """Two cases x two arms x two samples, run for real once."""
    folder = tmp_path_factory.mktemp("judging")
    (folder / "judge.py").write_text(JUDGE)
    (folder / "suite.md").write_text(SUITE.format(python=sys.executable))
    specs = parse_file(folder / "suite.md").rows
    (suite,) = suites_of(specs)
    with Containment() as containment:
        rows = tuple(run_row(spec, RunSettings(run_id="r"), containment) for spec in specs)
    assert [(row.name, row.status, [s.stdout for s in row.samples]) for row in rows] == [
        ("C1/good", "PASS", ["good one\n"] * 2),
        ("C1/bad", "PASS", ["half one\n"] * 2),
        ("C2/good", "PASS", ["good two\n"] * 2),
        ("C2/bad", "PASS", ["half two\n"] * 2),
    ]
    return RanSuite(folder, specs, suite, rows)


def judged(ran: RanSuite, rows: Sequence[RowResult], run_dir: Path, seed: int = 7) -> list[tuple[str, int, str | None]]:
    settings = JudgeSettings(run_dir=run_dir, evidence_dir=run_dir, seed=seed, run_id="r")
    with Containment() as containment:
        judging = judge_suite(ran.suite, ran.specs, rows, settings, containment)
    assert (judging.file, judging.seed, judging.judge) == (ran.suite.file, seed, ran.suite.judge)
    return [(j.case, j.sample, j.winner) for j in judging.judgments]


def test_suites_of_lists_each_suite_once_in_file_order(tmp_path: Path, ran: RanSuite) -> None:
    other = tmp_path / "other.md"
    other.write_text(SUITE.format(python=sys.executable).replace("| C2 | two |\n", ""))
    plain = tmp_path / "plain.md"
    plain.write_text("| Name | Command |\n|---|---|\n| a | true |\n")
    specs = [*parse_file(plain).rows, *parse_file(other).rows, *ran.specs]
    assert [suite.file for suite in suites_of(specs)] == [other.as_posix(), ran.suite.file]
    assert suites_of(parse_file(plain).rows) == []


def test_new_seed_is_a_fresh_32_bit_number() -> None:
    seeds = {new_seed() for _ in range(8)}
    assert all(0 <= seed < 2**32 for seed in seeds)
    assert len(seeds) > 1


def test_every_sample_of_every_case_is_judged_and_written(tmp_path: Path, ran: RanSuite) -> None:
    assert judged(ran, ran.rows, tmp_path / "run") == [
        ("C1", 0, "good"),
        ("C1", 1, "good"),
        ("C2", 0, "good"),
        ("C2", 1, "good"),
    ]
    written = json.loads((tmp_path / "run" / "judge" / "C2" / "1" / "judgment.json").read_text())
    assert written["winner"] == "good"


def test_a_sample_where_one_arm_errored_is_not_judged(tmp_path: Path, ran: RanSuite) -> None:
    bad = next(row for row in ran.rows if row.name == "C1/bad")
    samples = (bad.samples[0], replace(bad.samples[1], status="ERR", error="timed out"))
    rows = ran.changed(bad.id, samples=samples, status="ERR")
    assert judged(ran, rows, tmp_path / "run") == [("C1", 0, "good"), ("C2", 0, "good"), ("C2", 1, "good")]


def test_a_case_whose_arm_was_skipped_is_not_judged(tmp_path: Path, ran: RanSuite) -> None:
    c2_good = next(row for row in ran.rows if row.name == "C2/good")
    skipped = ran.changed(c2_good.id, status="SKIP", samples=())
    assert judged(ran, skipped, tmp_path / "run") == [("C1", 0, "good"), ("C1", 1, "good")]
    assert not (tmp_path / "run" / "judge" / "C2").exists()


def test_a_case_whose_arm_has_no_result_is_not_judged(tmp_path: Path, ran: RanSuite) -> None:
    c2_good = next(row for row in ran.rows if row.name == "C2/good")
    assert judged(ran, ran.rows_except(c2_good.id), tmp_path / "run") == [("C1", 0, "good"), ("C1", 1, "good")]
