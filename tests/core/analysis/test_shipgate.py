"""Margins and ship gates (``fixtures_core.analysis.shipgate``) on runs made the way ``assay run`` makes them.

Each arm prints a number; a small judge script scores each candidate with the
number it printed (``DQ`` in the output marks a disqualifier). Runs go through
plan, the local engine and ``runs.close.complete``, so every field is the one a
real run writes.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

from fixtures_core.analysis.shipgate import (
    ArmOutcome,
    CaseOutcome,
    SuiteOutcome,
    arm_margins,
    catch_rates,
    gate_context,
)
from fixtures_core.records.rundoc import RunResult, to_document
from fixtures_core.records.store import SHIPPED, Store, bless_refusal, new_baseline
from fixtures_core.reports import shipgate as shipgate_report
from fixtures_core.verdicts.case import EXPECTED, OUTSIDE_KNOWN_LIMIT
from tests.suites import run_in_process

JUDGE = """
import json, sys
doc = json.load(sys.stdin)
scores = {}
for label, candidate in doc["candidates"].items():
    words = candidate["stdout"].split()
    scores[label] = {"total": float(words[-1]), "axes": {"spec": float(words[-1])}, "disqualifier": "DQ" in words}
best = max(s["total"] for s in scores.values())
leaders = [label for label, s in scores.items() if s["total"] == best]
print(json.dumps({"scores": scores, "winner": leaders[0] if len(leaders) == 1 else "tie", "model": "numbers"}))
"""

Case = tuple[str, str, str, str]  # name, variant output, bare output, known limit


def suite_text(cases: Sequence[Case], gates: str = "", judge_extra: str = "") -> str:
    table = ["| Name | v | b | Known Limit |", "|---|---|---|---|"]
    table += [f"| {name} | {v} | {b} | {limit} |" for name, v, b, limit in cases]
    frontmatter = f"""
        exec: echo
        arms:
          variant: {{args: ["{{{{ .v }}}}"]}}
          bare: {{args: ["{{{{ .b }}}}"]}}
        compare: [variant, bare]
        judge:
          command: {sys.executable} judge.py
          {judge_extra}
        {gates}
        """
    return "---\n" + textwrap.dedent(frontmatter).strip() + "\n---\n\n" + "\n".join(table) + "\n"


def run_suite(
    tmp_path: Path,
    cases: Sequence[Case],
    gates: str = "",
    judge_extra: str = "",
    baseline: RunResult | None = None,
    repeat: int | None = None,
) -> RunResult:
    (tmp_path / "judge.py").write_text(JUDGE)
    path = tmp_path / "suite.md"
    path.write_text(suite_text(cases, gates, judge_extra), encoding="utf-8")
    if baseline is not None:
        (tmp_path / "shipped.json").write_text(json.dumps(to_document(baseline)))
    return run_in_process(
        path, tmp_path / ".assay", repeat=repeat, baseline=str(tmp_path / "shipped.json") if baseline else None
    )


def only_suite(run: RunResult) -> SuiteOutcome:
    (suite,) = run.suites
    return suite


def gates(*lines: str) -> str:
    return "gates:\n" + "\n".join(f"          {line}" for line in lines)


def test_scores_margins_winners_and_averages(tmp_path: Path) -> None:
    run = run_suite(tmp_path, [("F1", "95", "88", ""), ("F2", "70", "81", ""), ("F3", "60", "60", "")])

    suite = only_suite(run)
    assert [(c.name, c.arms["variant"].score, c.arms["bare"].score, c.margin, c.winner, c.verdict)
            for c in suite.cases] == [
        ("F1", 95.0, 88.0, 7.0, "variant", "PASS"),
        ("F2", 70.0, 81.0, -11.0, "bare", "LOSS"),
        ("F3", 60.0, 60.0, 0.0, "tie", "TIE"),
    ]  # fmt: skip
    assert suite.averages == {"variant": pytest.approx(75.0), "bare": pytest.approx(229 / 3)}
    assert suite.margin == pytest.approx(-4 / 3)  # (7 - 11 + 0) / 3
    assert (suite.verdict, run.status) == ("PASS", "PASS")  # no gates: nothing to fail
    assert suite.judge is not None and suite.judge.provenance == ("numbers",)
    row = next(r for r in run.rows if r.name == "F1/variant")
    assert row.metrics["score"].value == 95.0 and row.metrics["score"].unit == "points"
    assert row.properties["arm"] == "variant"


def test_a_hard_gate_fails_the_run_and_a_soft_gate_warns(tmp_path: Path) -> None:
    cases = [("F1", "95", "88", ""), ("F2", "90", "89", "")]
    hard = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}")
    soft = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: soft}")

    failed = run_suite(tmp_path, cases, hard)
    warned = run_suite(tmp_path, cases, soft)

    assert (only_suite(failed).verdict, failed.status, failed.verdict.exit_code) == ("FAIL", "FAIL", 1)
    # assay's count of failed hard gates under its own name; devlyn's hard-floor violations (disqualified
    # first arms) under devlyn's
    assert (only_suite(failed).failed_hard_gates, only_suite(failed).hard_floor_violations) == (1, 0)
    assert [g.status for g in only_suite(failed).gates] == ["fail"]
    assert (only_suite(warned).verdict, warned.status) == ("PASS", "PASS")
    assert only_suite(warned).warnings == ("soft gate 'margin floor' warned",)  # a soft gate never blocks


def test_a_gate_that_cannot_be_evaluated_is_an_error(tmp_path: Path) -> None:
    run = run_suite(tmp_path, [("F1", "95", "88", "")], gates("- {name: typo, cel: 'rows.all(r, r.marginn > 0.0)'}"))
    suite = only_suite(run)
    assert (suite.verdict, run.status, run.verdict.exit_code) == ("ERR", "ERR", 2)
    assert suite.gates[0].error == "gate 'typo' could not be evaluated: no such key: marginn"


@pytest.mark.parametrize(("variant", "warning"), [
    ("82", None),  # +2: inside
    ("95", "F8: margin +15.0 is outside its known-limit range [-3, 3] (too good: it may no longer be a known limit)"),
    ("70", "F8: margin -10.0 is outside its known-limit range [-3, 3] (too bad: a regression elsewhere may show here)"),
])  # fmt: skip
def test_a_known_limit_row_is_excluded_and_warns_outside_its_range(tmp_path: Path, variant: str, warning: str) -> None:
    floor = gates("- {name: margin floor, cel: 'rows.filter(r, !r.known_limit).all(r, r.margin >= 5.0)'}")

    run = run_suite(tmp_path, [("F1", "95", "88", ""), ("F8", variant, "80", "[-3, 3]")], floor)

    suite = only_suite(run)
    assert suite.verdict == "PASS" and run.status == "PASS"  # warnings never fail
    assert suite.cases[1].verdict == (EXPECTED if warning is None else OUTSIDE_KNOWN_LIMIT)
    assert list(suite.warnings) == ([] if warning is None else [warning])


def test_the_headroom_aware_floor_of_the_rubric_is_one_expression(tmp_path: Path) -> None:
    # RUBRIC: a case leaves the margin count when bare has < 5 points of headroom, variant >= 95
    # and variant is not disqualified. F2 (97 vs 96) is such a case; F3 (60 vs 59) is not.
    headroom = (
        "rows.filter(r, !r.known_limit && !(100.0 - r.arms.bare.score < 5.0 && r.arms.variant.score >= 95.0"
        " && !r.arms.variant.disqualified)).all(r, r.margin >= 5.0)"
    )
    floor = gates(f'- {{name: headroom-aware floor, cel: "{headroom}"}}')

    passed = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "97", "96", "")], floor)
    failed = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "97", "96", ""), ("F3", "60", "59", "")], floor)

    assert only_suite(passed).verdict == "PASS"
    assert only_suite(failed).verdict == "FAIL"


def test_a_disqualified_arm_never_wins(tmp_path: Path) -> None:
    never = gates("- {name: variant never disqualified, cel: 'rows.all(r, !r.arms.variant.disqualified)'}")

    run = run_suite(tmp_path, [("F1", "DQ 99", "50", "")], never)

    case = only_suite(run).cases[0]
    assert case.arms["variant"].disqualified and case.winner == "bare" and case.verdict == "DISQUALIFIED"
    assert only_suite(run).verdict == "FAIL"


def test_a_disqualified_arm_loses_its_case_but_keeps_its_margin_and_average(tmp_path: Path) -> None:
    # seed 04: a disqualifier "overrides score" and the arm "automatically loses the fixture" (the winner);
    # its summary.json keeps margin as the score difference and averages over every arm, as devlyn's harness does
    run = run_suite(tmp_path, [("F1", "90", "DQ 99", ""), ("F2", "80", "70", "")])

    suite = only_suite(run)
    f1, f2 = suite.cases
    assert f1.arms["bare"].disqualified and f1.arms["bare"].score == 99.0
    assert (f1.winner, f1.margin, f1.verdict) == ("variant", -9.0, "PASS")  # 90 - 99: bare scored higher, and lost
    assert f2.margin == 10.0
    # averages cover every arm: bare = (99 + 70) / 2 = 84.5; variant = (90 + 80) / 2 = 85
    assert suite.averages == {"variant": 85.0, "bare": 84.5}
    assert suite.margin == 0.5  # (-9 + 10) / 2
    assert gate_context(suite)["rows"][0]["margin"] == -9.0  # type: ignore[index]


def test_both_arms_disqualified_is_a_tie_with_the_score_difference(tmp_path: Path) -> None:
    run = run_suite(tmp_path, [("F1", "DQ 90", "DQ 70", "")])

    (case,) = only_suite(run).cases
    assert (case.winner, case.margin, case.verdict) == ("tie", 20.0, "DISQUALIFIED")  # 90 - 70, and nobody won


def test_a_gate_naming_a_case_the_run_did_not_select_reads_na(tmp_path: Path) -> None:
    named = gates('- {name: F9 must pass, cel: \'rows.exists(r, r.name == "F9" && r.arms.variant.status == "PASS")\'}')
    (tmp_path / "judge.py").write_text(JUDGE)
    path = tmp_path / "suite.md"
    path.write_text(suite_text([("F2", "90", "80", ""), ("F5", "90", "80", ""), ("F9", "90", "80", "")], named))

    everything = run_in_process(path, tmp_path / ".assay")
    filtered = run_in_process(path, tmp_path / ".assay", filter=("F2*", "F5*"))

    assert only_suite(everything).gates[0].status == "pass"
    (gate,) = only_suite(filtered).gates
    assert (gate.status, gate.error) == ("not_evaluated", "n/a: it names 'F9', which this run did not run")
    assert [c.name for c in only_suite(filtered).cases] == ["F2", "F5"]  # both globs: a union
    assert (only_suite(filtered).verdict, filtered.status) == ("PASS", "PASS")  # never FAIL


def test_a_suite_gating_on_the_shipped_run_finds_it_without_baseline(tmp_path: Path) -> None:
    holds = "!has(suite.baseline_margin) || suite.margin >= suite.baseline_margin - 3.0"
    drop = gates(f"- {{name: suite margin holds, cel: '{holds}'}}")
    first = run_suite(tmp_path, [("F1", "89", "70", "")], drop)
    assert only_suite(first).baseline is None  # nothing blessed yet: "n/a (first run)"
    Store(tmp_path / ".assay").bless(first.run_id, SHIPPED)

    dropped = run_suite(tmp_path, [("F1", "70", "69", "")], drop)  # no --baseline

    suite = only_suite(dropped)
    assert suite.baseline is not None and suite.baseline.startswith("shipped (run ")  # its own name and id
    assert (suite.margin, suite.baseline_margin) == (1.0, 19.0)
    assert (suite.gates[0].status, dropped.status, dropped.comparison) == ("fail", "FAIL", None)
    assert bless_refusal(dropped) is not None  # --bless would refuse it


def test_gates_see_the_saved_runs_margins(tmp_path: Path) -> None:
    no_drop = gates("- {name: no case loses 5 points of margin, "
                    "cel: 'rows.all(r, !has(r.baseline_margin) || r.margin >= r.baseline_margin - 5.0)'}")  # fmt: skip
    shipped = run_suite(tmp_path, [("F1", "95", "80", ""), ("F2", "90", "85", "")], no_drop)

    current = run_suite(tmp_path, [("F1", "95", "86", ""), ("F2", "90", "85", "")], no_drop, baseline=shipped)

    suite = only_suite(current)
    assert [(c.margin, c.baseline_margin) for c in suite.cases] == [(9.0, 15.0), (5.0, 5.0)]
    assert (suite.margin, suite.baseline_margin) == (7.0, 10.0)
    assert suite.baseline == f"{tmp_path / 'shipped.json'} (run {shipped.run_id})"  # its own name and run id
    assert suite.cases[0].arms["bare"].baseline_score == 80.0
    assert suite.verdict == "FAIL"  # F1 lost 6 points of margin
    context = gate_context(suite)
    assert context["suite"] == {"average": {"variant": 92.5, "bare": 85.5}, "rows": 2, "cases": 2, "margin": 7.0,
                                "baseline_margin": 10.0, "margins": {"variant": 7.0}, "fixtures_run": 2,
                                "catch_rate": {"variant": 1.0, "bare": 1.0},  # no critical finding anywhere
                                "baseline_catch_rate": {"variant": 1.0, "bare": 1.0}}  # fmt: skip


def test_regression_points_on_the_score_gate_against_the_blessed_run(tmp_path: Path) -> None:
    points = "threshold: {regressionPoints: 5}"
    shipped = run_suite(tmp_path, [("F1", "95", "80", "")], judge_extra=points)

    held = run_suite(tmp_path, [("F1", "90", "80", "")], judge_extra=points, baseline=shipped)
    lost = run_suite(tmp_path, [("F1", "89", "80", "")], judge_extra=points, baseline=shipped)

    assert held.comparison is not None and not held.comparison.regressed  # 95 -> 90: 5 points, allowed
    assert lost.comparison is not None and lost.comparison.regressed  # 95 -> 89: 6 points > 5
    score = next(m for m in lost.comparison.metrics if m.row == "F1/variant" and m.name == "score")
    assert score.note == "6 points worse, allowed 5 points"
    assert (held.verdict.exit_code, lost.verdict.exit_code) == (0, 1)
    assert (held.verdict.regressed, lost.verdict.regressed) == (False, True)


def test_an_arm_rows_failure_is_evidence_and_an_error_is_an_error(tmp_path: Path) -> None:
    hard = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}")
    failing_bare = suite_text([("F1", "95", "80", "")], hard).replace(
        'bare: {args: ["{{ .b }}"]}', 'bare: {exec: bash, args: ["-c", "echo {{ .b }}; exit 1"]}'
    )
    (tmp_path / "judge.py").write_text(JUDGE)
    (tmp_path / "suite.md").write_text(failing_bare)

    run = run_in_process(tmp_path / "suite.md", tmp_path / ".assay")

    assert {r.name: r.status for r in run.rows} == {"F1/variant": "PASS", "F1/bare": "FAIL"}
    # a worse arm is what a suite measures; the hard gate decides
    assert (run.status, run.verdict.exit_code) == ("PASS", 0)
    assert only_suite(run).cases[0].arms["bare"].status == "FAIL"


def test_a_judge_error_makes_the_case_and_its_rows_err(tmp_path: Path) -> None:
    run = run_suite(tmp_path, [("F1", "95", "80", ""), ("F2", "oops", "80", "")])

    suite = only_suite(run)
    assert [c.status for c in suite.cases] == ["PASS", "ERR"]
    assert {r.name: r.status for r in run.rows}["F2/variant"] == "ERR"
    assert suite.cases[1].error is not None and "judge exited with code 1" in suite.cases[1].error
    assert (suite.verdict, run.status, run.verdict.exit_code) == ("ERR", "ERR", 2)


def test_judged_repeats_average_per_sample_scores(tmp_path: Path) -> None:
    run = run_suite(tmp_path, [("F1", "95", "80", "")], repeat=3)
    case = only_suite(run).cases[0]
    assert len(case.judgments) == 3 and {j.sample for j in case.judgments} == {0, 1, 2}
    assert case.margin == 15.0


def test_any_number_of_arms_each_with_its_score_and_the_named_pair_for_the_margin(tmp_path: Path) -> None:
    text = suite_text([("F1", "90", "70", "")]).replace(
        'bare: {args: ["{{ .b }}"]}', 'bare: {args: ["{{ .b }}"]}\n  solo: {args: ["80"]}'
    )
    (tmp_path / "judge.py").write_text(JUDGE)
    (tmp_path / "suite.md").write_text(text)

    run = run_in_process(tmp_path / "suite.md", tmp_path / ".assay")

    suite = only_suite(run)
    case = suite.cases[0]
    assert suite.arms == ("variant", "bare", "solo")
    assert {arm: o.score for arm, o in case.arms.items()} == {"variant": 90.0, "bare": 70.0, "solo": 80.0}
    assert case.margin == 20.0  # compare: [variant, bare]
    assert sorted(case.judgments[0].labels) == ["A", "B", "C"]  # one call sees every arm, blind
    assert [r.name for r in run.rows] == ["F1/variant", "F1/bare", "F1/solo"]


def case_of(name: str, **scores: tuple[float, tuple[str, ...]]) -> CaseOutcome:
    """A case whose arms have these (score, critical findings)."""
    arms = {arm: ArmOutcome(f"{name}/{arm}", "PASS", score=s, critical=c) for arm, (s, c) in scores.items()}
    return CaseOutcome(name, 1, "PASS", "PASS", arms)


def test_the_catch_rate_is_the_share_of_judged_cases_without_a_critical_finding() -> None:
    cases = [
        case_of("F1", variant=(90.0, ()), bare=(70.0, ("silent catch",))),
        case_of("F2", variant=(80.0, ("hardcoded path",)), bare=(60.0, ("no test",))),
        case_of("F3", variant=(85.0, ()), bare=(84.0, ())),
    ]
    # variant: F1 and F3 clean of 3 judged = 2/3; bare: F3 alone = 1/3
    rates = catch_rates(cases, ["variant", "bare"])
    assert rates["variant"] == pytest.approx(2 / 3) and rates["bare"] == pytest.approx(1 / 3)
    # seed 04: margins per arm over the second arm of compare; variant: (20 + 20 + 1) / 3
    assert arm_margins(cases, ["variant", "bare"], ("variant", "bare")) == {"variant": pytest.approx(41 / 3)}


def test_a_case_every_arm_saturated_here_and_in_shipped_is_a_rotation_candidate(tmp_path: Path) -> None:
    shipped = run_suite(tmp_path, [("F1", "97", "96", ""), ("F2", "97", "90", "")])
    Store(tmp_path / ".assay").bless(shipped.run_id, SHIPPED)
    drop = gates("- {name: holds, cel: '!has(suite.baseline_margin) || suite.margin >= -100.0'}")

    current = run_suite(tmp_path, [("F1", "98", "99", ""), ("F2", "99", "96", "")], drop)

    suite = only_suite(current)
    assert suite.rotation_candidates == ("F1",)  # F2's bare scored 90 in shipped: not saturated twice
    assert any(w.startswith("F1: every arm scored above 95 here and in ") for w in suite.warnings)


def test_a_changed_rubric_is_not_compared_and_blessing_it_starts_a_new_baseline(tmp_path: Path) -> None:
    rubric = "rubric: RUBRIC.md"
    (tmp_path / "RUBRIC.md").write_text("score it\n")
    drop = gates(
        "- {name: holds, cel: '!has(suite.baseline_margin) || suite.margin >= suite.baseline_margin - 3.0'}",
        "- {name: floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}",
    )
    store = Store(tmp_path / ".assay")
    shipped = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "90", "70", "")], drop, judge_extra=rubric)
    store.bless(shipped.run_id, SHIPPED)
    same = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "90", "80", "")], drop, judge_extra=rubric)
    (tmp_path / "RUBRIC.md").write_text("score it differently\n")

    changed = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "90", "80", "")], drop, judge_extra=rubric)

    assert only_suite(same).comparable and [g.status for g in only_suite(same).gates] == ["fail", "pass"]
    suite = only_suite(changed)
    assert not suite.comparable
    assert suite.incomparable is not None and suite.incomparable.startswith("RUBRIC.md changed: sha256 ")
    assert suite.warnings[0] == f"not comparable with {suite.baseline}: {suite.incomparable}"
    # its regression gate is not evaluated, with why; the gate about this run alone still answers
    held, floor = suite.gates
    assert (held.status, held.error) == (
        "not_evaluated",
        f"not comparable ({suite.incomparable}): the saved run's figures are not compared",
    )
    assert floor.status == "pass"
    assert suite.baseline_margin is None and all(c.baseline_margin is None for c in suite.cases)
    assert shipgate_report.regression_text(suite) == f"not compared: not comparable ({suite.incomparable})"
    assert new_baseline(same) is None and new_baseline(changed) == f"{suite.file}: {suite.incomparable}"

    store.bless(changed.run_id, SHIPPED)  # blessing it starts a new baseline, and the record keeps each rubric
    lines = (tmp_path / ".assay" / "baselines" / "blessed.jsonl").read_text().splitlines()
    first, second = (json.loads(line) for line in lines)
    assert (first["run_id"], first["new_baseline"]) == (shipped.run_id, None)
    assert (second["run_id"], second["new_baseline"]) == (changed.run_id, new_baseline(changed))
    assert first["suites"][0]["rubric_sha256"] != second["suites"][0]["rubric_sha256"]
    assert second["suites"][0]["rubric_sha256"] == only_suite(changed).judge.rubric_sha256  # type: ignore[union-attr]


def test_a_changed_fixture_set_is_not_compared(tmp_path: Path) -> None:
    drop = gates("- {name: holds, cel: '!has(suite.baseline_margin) || suite.margin >= suite.baseline_margin'}")
    shipped = run_suite(tmp_path, [("F1", "90", "80", "")], drop)
    Store(tmp_path / ".assay").bless(shipped.run_id, SHIPPED)

    grown = run_suite(tmp_path, [("F1", "90", "80", ""), ("F2", "90", "89", "")], drop)

    suite = only_suite(grown)
    assert suite.incomparable == "the fixture set changed: added F2"
    assert suite.gates[0].status == "not_evaluated"


# --- gates answer only on data (verdicts.gates) ------------------------------------------------


def test_with_every_case_errored_no_gate_fails_and_the_verdict_leads_with_the_error(tmp_path: Path) -> None:
    floor = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}",
                  "- {name: held vs shipped, cel: '!has(suite.baseline_margin) || suite.margin >= 0.0', "
                  "severity: soft}")  # fmt: skip
    run = run_suite(tmp_path, [("F1", "95", "88", ""), ("F2", "90", "80", "")], floor)
    (tmp_path / "judge.py").write_text("import sys; sys.exit(3)\n")  # the judge fails on every case

    broken = run_in_process(tmp_path / "suite.md", tmp_path / ".assay")

    assert [g.status for g in only_suite(run).gates] == ["pass", "pass"]  # the same suite, judged
    suite = only_suite(broken)
    assert [c.status for c in suite.cases] == ["ERR", "ERR"]
    assert [g.status for g in suite.gates] == ["not_evaluated", "not_evaluated"]  # never FAILED, never ok
    error = suite.gates[0].error
    assert error is not None and error.startswith("no data: 2 cases have no result (F1: judge ")
    assert (suite.verdict, suite.failed_hard_gates, broken.verdict.failed_gates) == ("ERR", 0, ())
    assert broken.verdict.why.startswith("4 rows errored: 'F1/variant', 'F1/bare', 'F2/variant', 'F2/bare'")
    assert "gate" not in broken.verdict.why


def test_a_gate_reads_the_cases_it_names_and_names_each_breaking_case_with_its_value(tmp_path: Path) -> None:
    floor = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}",
                  "- {name: F1 holds, cel: 'rows.all(r, r.name != \"F1\" || r.margin >= 5.0)', "
                  "severity: hard}")  # fmt: skip

    run = run_suite(tmp_path, [("F1", "95", "88", ""), ("F2", "70", "81", ""), ("F3", "60", "59", "")], floor)

    failed, held = only_suite(run).gates
    # every case that broke it, not only the worst, each with the margin the gate read
    assert [str(b) for b in failed.breaking] == ["F2 (margin was -11)", "F3 (margin was 1)"]
    assert (held.status, held.breaking) == ("pass", ())


def test_a_gate_on_a_case_whose_first_arm_was_disqualified_says_so(tmp_path: Path) -> None:
    floor = gates("- {name: margin floor, cel: 'rows.all(r, r.margin >= 5.0)', severity: hard}")

    run = run_suite(tmp_path, [("F1", "DQ 95", "70", ""), ("F2", "90", "80", "")], floor)

    (gate,) = only_suite(run).gates
    assert gate.status == "pass"  # +25 and +10: the margins hold, as the gate reads them
    assert gate.notes == (
        "F1: variant was disqualified (the judge disqualified it); it loses the case whatever its score",
    )
    variant = next(row for row in run.rows if row.name == "F1/variant")
    assert (variant.status, variant.case_result) == ("FAIL", "disqualified")
    assert variant.error == "loses its case whatever its score: the judge disqualified it"
