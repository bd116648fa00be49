"""How statuses combine (``fixtures_core.verdicts.precedence``)."""

from __future__ import annotations

from fixtures_core.verdicts.precedence import combine_outcomes, worst


def test_precedence_err_over_fail_over_pass() -> None:
    assert worst("PASS", "FAIL", "PASS") == "FAIL"
    assert worst("FAIL", "ERR", "PASS") == "ERR"
    assert worst("ERR", "FAIL") == "ERR"
    assert worst("PASS", "PASS") == "PASS"
    assert worst() == "PASS"
    assert combine_outcomes(["pass", "fail", "error"]) == "error"
    assert combine_outcomes(["pass", "fail", "not_evaluated"]) == "fail"
    assert combine_outcomes(["not_evaluated", "pass"]) == "pass"
    assert combine_outcomes([]) == "not_evaluated"
