"""Typed readers of configuration values (``fixtures_core.parsing.config``)."""

from __future__ import annotations

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.config import (
    Where,
    read_env,
    read_exit_code,
    read_metrics,
    read_repeat,
    read_skip,
    read_string,
    read_string_list,
    read_threshold,
    read_timeout,
    reject_near_misses,
)

AT = Where("suite.md", 12)


@pytest.mark.parametrize(("value", "expected"), [(1, 1), (3, 3), ("4", 4), (" 5 ", 5), ("05", 5)])
def test_read_repeat_accepts_whole_numbers(value: object, expected: int) -> None:
    assert read_repeat(value, AT) == expected


@pytest.mark.parametrize("value", [0, -1, "0", "-1", "x", "2.5", 2.0, True, None, "--3", "³", "+3", ""])
def test_read_repeat_rejects_everything_else_with_file_line_and_field(value: object) -> None:
    with pytest.raises(FixtureError) as caught:
        read_repeat(value, AT, "Repeat")
    assert str(caught.value) == f"suite.md:12: Repeat: must be a whole number >= 1, got {value!r}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(100_001, "100001"), (10**30, str(10**30)), ("9" * 4000, "'" + "9" * 39 + "…")],
    ids=["just-over", "10^30", "4000-digits"],
)
def test_read_repeat_is_bounded_before_anything_is_allocated(value: object, shown: str) -> None:
    assert read_repeat(100_000, AT) == 100_000
    with pytest.raises(FixtureError) as caught:
        read_repeat(value, AT, "Repeat")
    assert str(caught.value) == f"suite.md:12: Repeat: must be at most 100,000 samples, got {shown}"


@pytest.mark.parametrize(("value", "expected"), [(0, 0), (-1, -1), ("2", 2), ("-9", -9), (255, 255)])
def test_read_exit_code(value: object, expected: int) -> None:
    assert read_exit_code(value, AT) == expected


@pytest.mark.parametrize("value", ["x", "1.0", 1.5, False, None, "--1"])
def test_read_exit_code_rejects_non_integers(value: object) -> None:
    with pytest.raises(FixtureError, match=r"suite\.md:12: exitCode: must be an integer"):
        read_exit_code(value, AT)


def test_read_timeout_wraps_duration_errors() -> None:
    assert read_timeout("2m", AT) == 120.0
    with pytest.raises(FixtureError, match=r"^suite\.md:12: timeout: expected a duration such as 90s"):
        read_timeout("2 minutes", AT)


@pytest.mark.parametrize(("value", "text"), [("a", "a"), (3, "3"), (1.5, "1.5"), (True, "true"), (False, "false")])
def test_read_string_accepts_scalars(value: object, text: str) -> None:
    assert read_string(value, AT, "cwd") == text


@pytest.mark.parametrize("value", [None, [1], {"a": 1}])
def test_read_string_rejects_structures(value: object) -> None:
    with pytest.raises(FixtureError, match=r"suite\.md:12: cwd: must be a string"):
        read_string(value, AT, "cwd")


def test_read_string_list_wraps_a_scalar() -> None:
    assert read_string_list("bash", AT, "codeBlocks") == ("bash",)
    assert read_string_list(["bash", 3], AT, "codeBlocks") == ("bash", "3")


def test_read_env_names_the_bad_variable() -> None:
    assert read_env({"A": 1, "B": "x"}, AT) == {"A": "1", "B": "x"}
    with pytest.raises(FixtureError, match=r"suite\.md:12: env\.B: must be a string"):
        read_env({"A": "ok", "B": None}, AT)
    with pytest.raises(FixtureError, match=r"env: must be a map of NAME: value"):
        read_env(["A=1"], AT)


@pytest.mark.parametrize(
    ("value", "skip"),
    [
        (None, (None, None)),
        (False, (None, None)),
        ("", (None, None)),
        ("false", (None, None)),
        (True, ("skip: true", None)),
        ("true", ("skip: true", None)),
        ("! command -v docker", (None, "! command -v docker")),
        ("No", (None, "No")),  # any other text is a shell command, as in Gavel
    ],
)
def test_read_skip(value: object, skip: tuple[str | None, str | None]) -> None:
    assert read_skip(value) == skip


def test_near_miss_of_a_known_key_is_rejected() -> None:
    with pytest.raises(FixtureError) as caught:
        reject_near_misses({"exec": 2, "repat": 3}, ("exec", "repeat"), "suite.md")
    assert str(caught.value) == "suite.md:3: repat: unknown key 'repat' (did you mean 'repeat'?)"


def test_case_variant_of_a_known_key_is_rejected() -> None:
    with pytest.raises(
        FixtureError, match=r"suite\.md:4: EXITCODE: unknown key 'EXITCODE': the key is spelled 'exitCode'"
    ):
        reject_near_misses({"EXITCODE": 4}, ("exitCode",), "suite.md")


def test_unrelated_keys_are_properties() -> None:
    reject_near_misses({"selector": 2, "model": 3, "prompt": 4}, ("exec", "repeat", "timeout", "metrics"), "suite.md")


def test_read_threshold_reads_regression_points() -> None:
    threshold = read_threshold({"regressionPoints": 5, "min": 1}, Where("f.md", 3), "metrics[score].threshold")
    assert (threshold.regression_points, threshold.min, threshold.regression_percent) == (5.0, 1.0, None)
    assert threshold.limits_regression


def test_regression_points_cannot_be_negative() -> None:
    with pytest.raises(FixtureError, match=r"f.md:3: metrics\[x\].threshold.regressionPoints: must be >= 0, got -1"):
        read_threshold({"regressionPoints": -1}, Where("f.md", 3), "metrics[x].threshold")


def test_regression_points_need_a_direction() -> None:
    item = {"name": "x", "extract": "1", "unit": "pt", "threshold": {"regressionPoints": 5}}
    with pytest.raises(FixtureError, match="regressionPoints: needs a direction"):
        read_metrics([item], Where("f.md", 3), [4])
