"""devlyn's summary.json from a suite outcome: its counts are devlyn's (compile-report.py's)."""

from __future__ import annotations

from fixtures_core.analysis.finalize import Summary
from fixtures_core.analysis.shipgate import ArmOutcome, CaseOutcome, SuiteOutcome
from fixtures_core.records.devlyn_layout import rotation_document, summary_document
from fixtures_core.records.rundoc import RunResult


def case(name: str, variant: float, bare: float, dq: bool = False, limit: bool = False) -> CaseOutcome:
    arms = {
        "variant": ArmOutcome(f"{name}/variant", "PASS", score=variant, disqualified=dq),
        "bare": ArmOutcome(f"{name}/bare", "PASS", score=bare),
    }
    category = {"category": "edge" if limit else "medium"}
    return CaseOutcome(
        name, 1, "PASS", "PASS", arms, margin=variant - bare, known_limit=(-3.0, 3.0) if limit else None,
        properties=category,
    )  # fmt: skip


def test_summary_json_counts_as_devlyns_compile_report_does() -> None:
    cases = (case("F1", 90, 80), case("F2", 85, 83, dq=True), case("F8", 70, 75, limit=True))
    suite = SuiteOutcome(
        "bench", "FAIL", ("variant", "bare"), cases, compare=("variant", "bare"),
        averages={"variant": 245 / 3, "bare": 238 / 3}, margin=7 / 3, margins={"variant": 7 / 3},
        fixtures_run=3, hard_floor_violations=1, failed_hard_gates=2, rotation_candidates=("F1",), baseline="shipped",
    )  # fmt: skip
    run = RunResult("r", "t0", "t1", "FAIL", (), Summary(3, 3, 0, 0, 0, 3), environment={"git": {"commit": "abc"}})

    summary = summary_document(suite, run)

    # devlyn's hard_floor_violations: disqualified first arms (F2), not failed gates; averages to one decimal
    assert (summary["hard_floor_violations"], summary["variant_avg"], summary["margin_avg"]) == (1, 81.7, 2.3)
    # gated: every scored case but the known limit; F1 +10 counts, F2 +2 does not
    assert (summary["gated_fixtures"], summary["known_limit_fixtures"], summary["margin_ge_5_count"]) == (2, 1, 1)
    assert summary["git_sha"] == "abc" and summary["suite"]["ship_gate"] == "FAIL"  # type: ignore[index]
    # one key, one meaning: assay's count of failed hard gates has a name of its own
    assert summary["suite"]["failed_hard_gates"] == 2 and "hard_floor_violations" not in summary["suite"]  # type: ignore[index,operator]
    assert summary["margins_avg"] == {"variant_over_bare": 2.3}
    assert rotation_document(suite) == {
        "candidates": ["F1"],
        "reason": "every arm scored above 95 in this run and in shipped (saturation)",
    }


def test_a_run_document_that_kept_failed_gates_as_hard_floor_violations_loads_with_one_meaning_per_key() -> None:
    from fixtures_core.records.rundoc import from_document, to_document

    cases = (case("F1", 90, 80), case("F2", 85, 83, dq=True))
    suite = SuiteOutcome(
        "bench", "FAIL", ("variant", "bare"), cases, compare=("variant", "bare"), fixtures_run=2,
        hard_floor_violations=1, failed_hard_gates=3,
    )  # fmt: skip
    run = RunResult("r", "t0", "t1", "FAIL", (), Summary(2, 2, 0, 0, 0, 2), suites=(suite,))
    document = to_document(run)
    assert (document["suites"][0]["hard_floor_violations"], document["suites"][0]["failed_hard_gates"]) == (1, 3)

    older = to_document(run)  # as an older assay wrote it: the failed hard gates under devlyn's name
    del older["suites"][0]["failed_hard_gates"]
    older["suites"][0]["hard_floor_violations"] = 3
    (loaded,) = from_document(older).suites
    assert (loaded.failed_hard_gates, loaded.hard_floor_violations) == (3, 1)  # devlyn's: F2's variant
