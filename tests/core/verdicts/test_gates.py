"""A ship gate's answer (``verdicts.gates``): the cases that broke it, and what its comparisons saw, on the
example A/B suite (loud-flag +16, config-comments +20 with hasty disqualified, docstring +0 as a known limit)."""

from __future__ import annotations

import pytest

from fixtures_core.analysis.shipgate import SuiteOutcome, gate_inputs
from fixtures_core.suite import GateSpec
from fixtures_core.verdicts.gates import GateResult, evaluate
from tests.core.conftest import ExampleRun


def evaluated(cel: str, suite: SuiteOutcome) -> GateResult:
    return evaluate(GateSpec(name="g", cel=cel, severity="hard", line=1), gate_inputs(suite))


def breaking_cases(cel: str, suite: SuiteOutcome) -> tuple[str, ...]:
    return tuple(breach.case for breach in evaluated(cel, suite).breaking)


@pytest.mark.parametrize(
    ("cel", "cases"),
    [
        # all: the cases its predicate is false for
        ("rows.all(r, r.margin >= 18.0)", ("loud-flag", "docstring")),
        # a selection first: only the cases it selects can break it (docstring is a known limit)
        ('rows.filter(r, !r.known_limit).all(r, r.winner == "careful" && r.margin >= 50.0)',
         ("loud-flag", "config-comments")),
        # a count: the cases that did not count
        ("rows.filter(r, has(r.margin) && r.margin >= 18.0).size() >= 2", ("loud-flag", "docstring")),
        # exists names no case from its predicate, but a case named in the gate is named
        ('rows.exists(r, r.name == "docstring" && r.margin >= 5.0)', ("docstring",)),
        # nested macros over each case's arms: the case is what broke it
        ("rows.all(r, r.arms.all(k, !r.arms[k].disqualified))", ("config-comments",)),
        # a selection that is no count (size() > 0) names nothing of its own
        ('rows.filter(r, r.name == "nope").size() > 0', ()),
        # suite figures name no case
        ("suite.margin >= 50.0", ()),
    ],
)  # fmt: skip
def test_the_cases_that_broke_a_gate(example_run: ExampleRun, cel: str, cases: tuple[str, ...]) -> None:
    (suite,) = example_run.run.suites
    assert breaking_cases(cel, suite) == cases


def test_a_gate_that_held_names_nothing(example_run: ExampleRun) -> None:
    (suite,) = example_run.run.suites
    assert breaking_cases("rows.all(r, r.margin >= 0.0)", suite) == ()


def test_a_failed_gate_says_what_its_comparisons_saw(example_run: ExampleRun) -> None:
    (suite,) = example_run.run.suites
    # (16 + 20 + 0) / 3 = 12: the suite margin, the only non-literal side
    assert evaluated("suite.margin >= 50.0", suite).seen == "margin was 12"
    assert evaluated("!has(suite.margin) || suite.margin - 2.0 > suite.margin", suite).seen == (
        "margin - 2.0 was 10, margin was 12"
    )
    assert evaluated("rows.all(r, r.margin >= 18.0)", suite).seen is None  # a macro: its cases say it


def test_a_failed_gate_names_each_case_with_what_it_saw_of_it(example_run: ExampleRun) -> None:
    (suite,) = example_run.run.suites
    # loud-flag +16 and docstring +0 are below 18; config-comments +20 is not
    assert [str(b) for b in evaluated("rows.all(r, r.margin >= 18.0)", suite).breaking] == [
        "loud-flag (margin was 16)",
        "docstring (margin was 0)",
    ]


# --- a subset: gates about cases that did not run -------------------------------------------


def _row(name: str, margin: float, category: str = "medium") -> dict[str, object]:
    return {"name": name, "status": "PASS", "known_limit": False, "arms": {}, "properties": {"category": category},
            "margin": margin}  # fmt: skip


def _subset(cel: str, ran: list[dict[str, object]], left_out: list[dict[str, object]]) -> GateResult:
    from fixtures_core.verdicts.gates import CaseData, GateInputs

    inputs = GateInputs(
        {"rows": ran, "suite": {"margin": 10.0, "baseline_margin": 20.0}},
        [CaseData(str(r["name"]), "PASS") for r in ran],
        [str(r["name"]) for r in left_out],
        unrun_rows=[
            {k: v for k, v in r.items() if k in ("name", "known_limit", "arms", "properties")} for r in left_out
        ],
    )
    return evaluate(GateSpec(name="g", cel=cel, severity="hard", line=1), inputs)


E2E = 'rows.filter(r, r.properties.category == "e2e")'
RAN = [_row("F2-a", 1.0, "stress"), _row("F5-b", 9.0, "stress")]
LEFT_OUT = [_row("F1-c", 0.0), _row("F9-e2e", 0.0, "e2e")]


@pytest.mark.parametrize(
    ("cel", "status", "reason"),
    [
        # a count over the whole suite: a coverage floor cannot be met or missed on a part of it
        ("rows.filter(r, r.margin >= 5.0).size() >= 7", "not_evaluated",
         "n/a: it counts cases across the whole suite, and this run left out 'F1-c', 'F9-e2e'"),
        # a kind of case that did not run: the e2e fixture
        (f"{E2E}.size() > 0 && {E2E}.all(r, r.margin >= 5.0)", "not_evaluated",
         "n/a: it is about 'F9-e2e', which this run did not run"),
        # the suite's figures against the saved run's: they are over other cases
        ("suite.margin - suite.baseline_margin >= -3.0", "not_evaluated",
         "n/a: it compares the suite's figures with the saved run's, and this run left out 'F1-c', 'F9-e2e'"),
        # over every case: it reads the cases that ran, and fails on them
        ("rows.all(r, r.margin >= 5.0)", "fail", None),
        # a kind of case none of the left-out ones is: it reads the cases that ran
        ('rows.filter(r, r.properties.category == "stress").all(r, r.margin >= 0.0)', "pass", None),
    ],
)  # fmt: skip
def test_a_gate_about_cases_a_subset_left_out_is_not_evaluated_never_failed(
    cel: str, status: str, reason: str | None
) -> None:
    found = _subset(cel, RAN, LEFT_OUT)
    assert (found.status, found.error) == (status, reason)


def test_without_a_saved_run_a_subset_has_nothing_to_compare_with_it() -> None:
    from fixtures_core.verdicts.gates import CaseData, GateInputs

    inputs = GateInputs({"rows": RAN, "suite": {"margin": 10.0}}, [CaseData("F2-a", "PASS")], ["F1-c"])
    cel = "!has(suite.baseline_margin) || suite.margin - suite.baseline_margin >= -3.0"
    assert evaluate(GateSpec(name="g", cel=cel, severity="soft", line=1), inputs).status == "pass"


def test_the_same_gates_answer_on_the_whole_suite() -> None:
    everything = [*RAN, _row("F1-c", 0.0), _row("F9-e2e", 0.0, "e2e")]
    assert _subset("rows.filter(r, r.margin >= 5.0).size() >= 7", everything, []).status == "fail"
    assert _subset(f"{E2E}.size() > 0 && {E2E}.all(r, r.margin >= 5.0)", everything, []).status == "fail"
