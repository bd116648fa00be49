"""pass@k, pass^k, the Wilson interval, row classes, and suite and group figures."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

from fixtures_core.analysis.passk import (
    SuiteFigures,
    classify,
    group_figures,
    pass_at_k,
    pass_hat_k,
    row_stochastic,
    suite_figures,
    wilson_interval,
)
from fixtures_core.results import (
    Check,
    Outcome,
    Outcomes,
    RowResult,
    SampleResult,
    Status,
)
from tests.suites import run_in_process


def sample(index: int, status: Status = "PASS", indeterminate: bool = False) -> SampleResult:
    """One sample with the given status."""
    outcome: Outcome = "pass" if status == "PASS" else "error" if status == "ERR" else "fail"
    return SampleResult(
        index=index,
        status=status,
        duration_ms=1.0,
        exit_code=0 if status == "PASS" else 1,
        stdout="",
        stderr="",
        command=Check(outcome),
        indeterminate=indeterminate,
    )


def samples(*statuses: Status) -> tuple[SampleResult, ...]:
    """Samples numbered from 0 with the given statuses."""
    return tuple(sample(i, s) for i, s in enumerate(statuses))


def repeated(status: Status, n: int) -> tuple[SampleResult, ...]:
    """n samples, all with the same status."""
    return tuple(sample(i, status) for i in range(n))


def row(
    name: str,
    runs: tuple[SampleResult, ...],
    k: int | None = None,
    status: Status | None = None,
    properties: dict[str, object] | None = None,
) -> RowResult:
    """A row carrying its stochastic figures, as the pipeline builds it."""
    if status is None:
        status = "PASS" if runs and all(s.passed for s in runs) else "FAIL"
        if any(s.status == "ERR" for s in runs):
            status = "ERR"
    return RowResult(
        id=f"f.md::{name}",
        file="f.md",
        name=name,
        line=1,
        status=status,
        repeat=len(runs),
        command=("true",),
        properties=properties or {},
        samples=runs,
        outcomes=Outcomes("pass", "pass"),
        stochastic=None if status == "SKIP" else row_stochastic(runs, k, name),
    )


# --- pass@k and pass^k: exact fractions -------------------------------------


def test_worked_example() -> None:
    # n=5, c=3, k=2: pass@2 = 1 - C(2,2)/C(5,2) = 1 - 1/10 = 9/10
    assert pass_at_k(5, 3, 2) == Fraction(9, 10)
    # pass^2 = C(3,2)/C(5,2) = 3/10
    assert pass_hat_k(5, 3, 2) == Fraction(3, 10)


def test_larger_example() -> None:
    # n=10, c=4, k=3: pass@3 = 1 - C(6,3)/C(10,3) = 1 - 20/120 = 5/6
    assert pass_at_k(10, 4, 3) == Fraction(5, 6)
    # pass^3 = C(4,3)/C(10,3) = 4/120 = 1/30
    assert pass_hat_k(10, 4, 3) == Fraction(1, 30)


def test_no_passes() -> None:
    # n=5, c=0, k=2: pass@2 = 1 - C(5,2)/C(5,2) = 0; pass^2 = C(0,2)/C(5,2) = 0/10 = 0
    assert pass_at_k(5, 0, 2) == 0
    assert pass_hat_k(5, 0, 2) == 0


def test_all_pass() -> None:
    # n=5, c=5, k=2: pass@2 = 1 - C(0,2)/C(5,2) = 1 - 0 = 1; pass^2 = C(5,2)/C(5,2) = 1
    assert pass_at_k(5, 5, 2) == 1
    assert pass_hat_k(5, 5, 2) == 1


def test_fewer_failures_than_k_is_certain_pass() -> None:
    # n=5, c=4, k=2: pass@2 = 1 - C(1,2)/C(5,2) = 1 - 0/10 = 1
    assert pass_at_k(5, 4, 2) == 1
    # pass^2 = C(4,2)/C(5,2) = 6/10 = 3/5
    assert pass_hat_k(5, 4, 2) == Fraction(3, 5)


@pytest.mark.parametrize("c", [0, 1, 3, 4])
def test_k_equals_n_reduces_to_at_least_one_and_all(c: int) -> None:
    # n=4, k=4: pass@4 = 1 - C(4-c,4)/C(4,4) = 1 - [c == 0]; pass^4 = C(c,4)/1 = [c == 4]
    assert pass_at_k(4, c, 4) == (1 if c >= 1 else 0)
    assert pass_hat_k(4, c, 4) == (1 if c == 4 else 0)


@pytest.mark.parametrize(("n", "c"), [(1, 0), (1, 1), (5, 3), (7, 2)])
def test_k_one_is_pass_rate(n: int, c: int) -> None:
    # k=1: pass@1 = 1 - C(n-c,1)/C(n,1) = 1 - (n-c)/n = c/n; pass^1 = C(c,1)/C(n,1) = c/n
    assert pass_at_k(n, c, 1) == Fraction(c, n)
    assert pass_hat_k(n, c, 1) == Fraction(c, n)


@pytest.mark.parametrize("estimator", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize(
    ("n", "c", "k", "message"),
    [
        (5, 3, 7, "k=7 > n=5"),
        (5, 3, 0, "k=0 < 1"),
        (5, 6, 2, "c=6 > n=5"),
        (5, -1, 2, "c=-1 < 0"),
    ],
)
def test_undefined_inputs_raise_naming_both_numbers(
    estimator: Callable[[int, int, int], Fraction], n: int, c: int, k: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        estimator(n, c, k)


# --- Wilson interval ---------------------------------------------------------


def test_wilson_known_value() -> None:
    # c=8, n=10, z=1.96: centre = (0.8 + z²/20) / (1 + z²/10) ≈ 0.71674,
    # half-width = z/(1 + z²/10) * sqrt(0.016 + z²/400) ≈ 0.22658
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_extremes_stay_in_unit_interval() -> None:
    # c=0, n=10: lower bound is exactly 0; upper = z²/10 / (1 + z²/10) ≈ 0.2775
    low, high = wilson_interval(0, 10)
    assert low == pytest.approx(0.0, abs=1e-12)
    assert low >= 0.0
    assert high == pytest.approx(0.2775, abs=1e-4)
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.7225, abs=1e-4)
    assert high <= 1.0


@pytest.mark.parametrize(("c", "n", "message"), [(0, 0, "n=0 < 1"), (3, 2, "c=3 > n=2"), (-1, 2, "c=-1 < 0")])
def test_wilson_rejects_undefined_inputs(c: int, n: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        wilson_interval(c, n)


# --- classes -----------------------------------------------------------------


@pytest.mark.parametrize(("n", "c", "expected"), [(5, 5, "stable-pass"), (5, 0, "stable-fail"), (5, 2, "flaky")])
def test_classify(n: int, c: int, expected: str) -> None:
    assert classify(n, c) == expected


@pytest.mark.parametrize(("n", "c", "message"), [(0, 0, "n=0 < 1"), (2, 3, "c=3 > n=2"), (2, -1, "c=-1 < 0")])
def test_classify_rejects_undefined_counts(n: int, c: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        classify(n, c)


# --- row_stochastic ----------------------------------------------------------


def test_row_stochastic_defaults_k_to_n() -> None:
    # n=5, c=3, k=5: pass@5 = 1 - C(2,5)/C(5,5) = 1; pass^5 = C(3,5)/1 = 0
    st = row_stochastic(samples("PASS", "FAIL", "PASS", "FAIL", "PASS"), None, "r")
    assert (st.n, st.passed, st.k) == (5, 3, 5)
    assert st.pass_at_k == pytest.approx(1.0)
    assert st.pass_hat_k == pytest.approx(0.0)
    assert st.pass_rate == pytest.approx(3 / 5)
    assert st.row_class == "flaky"
    assert st.withheld is None
    assert st.pass_rate_interval is not None


def test_row_stochastic_with_k() -> None:
    # n=5, c=3, k=2: pass@2 = 9/10, pass^2 = 3/10 (see test_worked_example)
    st = row_stochastic(samples("PASS", "FAIL", "PASS", "FAIL", "PASS"), 2, "r")
    assert st.k == 2
    assert st.pass_at_k == pytest.approx(0.9)
    assert st.pass_hat_k == pytest.approx(0.3)


def test_row_stochastic_no_samples() -> None:
    st = row_stochastic((), None, "r")
    assert st.withheld == "no samples ran"
    assert (st.n, st.passed, st.pass_rate, st.row_class, st.pass_rate_interval) == (0, 0, None, None, None)
    assert st.pass_at_k is None and st.pass_hat_k is None


def test_row_stochastic_withholds_on_error() -> None:
    st = row_stochastic(samples("PASS", "FAIL", "ERR"), None, "r")
    assert st.withheld == "sample 2 errored"
    assert st.pass_at_k is None and st.pass_hat_k is None
    # The counts, the rate and its interval are still given; an error is no outcome, so no class.
    assert (st.n, st.passed, st.k) == (3, 1, 3)
    assert st.pass_rate == pytest.approx(1 / 3)
    assert st.row_class is None
    assert st.pass_rate_interval is not None


def test_row_stochastic_names_every_errored_sample() -> None:
    st = row_stochastic(samples("ERR", "PASS", "ERR"), None, "r")
    assert st.withheld == "samples 0, 2 errored"


def test_row_stochastic_withholds_on_indeterminate() -> None:
    runs = (sample(0), sample(1, "FAIL", indeterminate=True))
    st = row_stochastic(runs, None, "r")
    assert st.withheld == "sample 1 needs human judgment (indeterminate)"
    assert st.pass_at_k is None and st.pass_hat_k is None
    assert st.row_class == "flaky"


def test_row_stochastic_withholds_when_k_exceeds_n() -> None:
    st = row_stochastic(repeated("PASS", 5), 7, "CLI high")
    assert st.withheld == "k=7 > n=5"
    assert st.pass_at_k is None and st.pass_hat_k is None
    assert st.k == 7
    assert st.row_class == "stable-pass"


def test_row_stochastic_rejects_k_below_one() -> None:
    with pytest.raises(ValueError, match="k=0 < 1 for row 'r'"):
        row_stochastic(samples("PASS"), 0, "r")


# --- suite figures -----------------------------------------------------------


def test_suite_figures_mean_and_counts() -> None:
    # k=2: 'a' n=5,c=3: pass@2 = 9/10, pass^2 = 3/10
    #      'b' n=4,c=4: pass@2 = 1,    pass^2 = C(4,2)/C(4,2) = 1
    #      'c' n=4,c=0: pass@2 = 0,    pass^2 = 0
    # mean pass@2 = (9/10 + 1 + 0)/3 = 19/30; mean pass^2 = (3/10 + 1 + 0)/3 = 13/30
    rows = [
        row("a", samples("PASS", "FAIL", "PASS", "FAIL", "PASS"), k=2),
        row("b", repeated("PASS", 4), k=2),
        row("c", repeated("FAIL", 4), k=2),
    ]
    figures = suite_figures(rows, 2)
    assert figures.k == 2
    assert figures.rows == 3
    assert figures.pass_at_k == pytest.approx(19 / 30)
    assert figures.pass_hat_k == pytest.approx(13 / 30)
    # meeting pass@k: pass@k == 1, i.e. n - c < k ('b' only: 'a' has n - c = 2, not < 2);
    # meeting pass^k: c == n ('b')
    assert (figures.rows_pass_at_k, figures.rows_pass_hat_k) == (1, 1)
    assert figures.withheld is None
    assert figures.skipped == () and figures.withheld_rows == ()


def test_suite_figures_k_none_uses_each_rows_n() -> None:
    # 'a' n=2,c=1,k=2: pass@2 = 1, pass^2 = 0; 'b' n=3,c=3,k=3: 1 and 1 -> means 1 and 1/2
    rows = [row("a", samples("PASS", "FAIL")), row("b", samples("PASS", "PASS", "PASS"))]
    figures = suite_figures(rows, None)
    assert figures.k is None
    assert figures.pass_at_k == pytest.approx(1.0)
    assert figures.pass_hat_k == pytest.approx(0.5)


def test_suite_figures_skipped_rows_listed_not_counted() -> None:
    rows = [row("a", samples("PASS", "PASS")), row("s", (), status="SKIP")]
    figures = suite_figures(rows, None)
    assert figures.rows == 1
    assert figures.skipped == ("s",)
    assert figures.withheld is None
    assert figures.pass_at_k == pytest.approx(1.0)


def test_suite_headline_withheld_naming_the_row() -> None:
    rows = [row("a", samples("PASS", "PASS")), row("bad", samples("PASS", "ERR"))]
    figures = suite_figures(rows, None)
    assert figures.rows == 2
    assert figures.pass_at_k is None and figures.pass_hat_k is None
    assert figures.rows_pass_at_k is None and figures.rows_pass_hat_k is None
    assert figures.withheld == "row 'bad' (sample 1 errored)"
    assert figures.withheld_rows == ("bad",)


def test_suite_headline_withheld_naming_every_row() -> None:
    undecided = (sample(0), sample(1, indeterminate=True))
    rows = [row("a", samples("ERR")), row("b", undecided), row("c", samples("PASS"))]
    figures = suite_figures(rows, None)
    assert figures.withheld == ("2 rows (sample 0 errored: 'a'; sample 1 needs human judgment (indeterminate): 'b')")
    assert figures.withheld_rows == ("a", "b")


def test_suite_headline_groups_withholding_rows_by_reason() -> None:
    rows = [row(name, (), status="ERR") for name in "abcdefg"]
    figures = suite_figures(rows, None)
    assert figures.withheld == ("7 rows (no samples ran: 'a', 'b', 'c', 'd', 'e' and 2 more)")


def test_suite_with_no_rows_counted() -> None:
    figures = suite_figures([row("s", (), status="SKIP")], None)
    assert figures == SuiteFigures(
        k=None,
        rows=0,
        pass_at_k=None,
        pass_hat_k=None,
        rows_pass_at_k=None,
        rows_pass_hat_k=None,
        withheld="no rows ran",
        skipped=("s",),
    )


def test_suite_rejects_rows_without_stochastic() -> None:
    bare = RowResult(
        id="f.md::x",
        file="f.md",
        name="x",
        line=1,
        status="PASS",
        repeat=1,
        command=("true",),
        properties={},
        samples=samples("PASS"),
        outcomes=Outcomes("pass", "pass"),
    )
    with pytest.raises(ValueError, match="row 'x' has no stochastic figures"):
        suite_figures([bare], None)


def test_suite_rejects_rows_computed_with_another_k() -> None:
    with pytest.raises(ValueError, match="row 'a' was computed with k=2, the suite asks for k=3"):
        suite_figures([row("a", samples("PASS", "PASS", "PASS"), k=2)], 3)


# --- groups ------------------------------------------------------------------


def test_group_figures() -> None:
    # k=1 is the pass rate: 'cli' group: a 1/2 and b 2/2 -> mean 3/4; 'api' group: c 0/2 -> 0
    rows = [
        row("a", samples("PASS", "FAIL"), k=1, properties={"area": "cli"}),
        row("b", samples("PASS", "PASS"), k=1, properties={"area": "cli"}),
        row("c", samples("FAIL", "FAIL"), k=1, properties={"area": "api"}),
        row("d", samples("PASS", "ERR"), k=1),
        row("e", (), status="SKIP", properties={"area": "api"}),
    ]
    groups = group_figures(rows, 1, "area")
    assert list(groups) == ["(none)", "api", "cli"]
    assert groups["cli"].rows == 2
    assert groups["cli"].pass_at_k == pytest.approx(0.75)
    assert groups["cli"].pass_hat_k == pytest.approx(0.75)
    # k=1: meeting pass@1 needs n - c < 1, i.e. every sample passed: only 'b'
    assert (groups["cli"].rows_pass_at_k, groups["cli"].rows_pass_hat_k) == (1, 1)
    assert groups["api"].rows == 1
    assert groups["api"].pass_at_k == pytest.approx(0.0)
    assert groups["api"].skipped == ("e",)
    # Only the group holding the errored row is withheld.
    assert groups["(none)"].withheld == "row 'd' (sample 1 errored)"
    assert groups["(none)"].pass_at_k is None


def test_group_key_is_str_of_value() -> None:
    rows = [row("a", samples("PASS"), properties={"tier": 1}), row("b", samples("PASS"), properties={"tier": True})]
    assert sorted(group_figures(rows, None, "tier")) == ["1", "True"]


def test_a_row_with_a_configuration_error_is_left_out_not_withholding_the_run(tmp_path: Path) -> None:
    path = tmp_path / "f.md"
    path.write_text("| Name | Command | Exit Code |\n|---|---|---|\n| ok | `true` | 0 |\n| bad | `true` | x |\n")

    run = run_in_process(path, tmp_path / "state")

    figures = run.summary.stochastic
    assert figures is not None and figures.withheld is None  # one broken row no longer withholds the run's
    assert (figures.rows, figures.pass_at_k, figures.left_out) == (1, 1.0, ("bad",))
    assert run.status == "ERR"  # the broken row still decides the verdict
