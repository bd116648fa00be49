"""Go-style durations and integer seconds (``fixtures_core.durations``)."""

from __future__ import annotations

import pytest

from fixtures_core.durations import format_duration, parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("90s", 90.0),
        ("20m", 1200.0),
        ("2h", 7200.0),
        ("1h30m", 5400.0),  # 3600 + 1800
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("1000000ns", 0.001),
        ("90", 90.0),
        (" 45 ", 45.0),
        (90, 90.0),
        (2.5, 2.5),
    ],
)
def test_accepted_forms(value: object, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize("value", ["5 parsecs", "1m30", "10 s", "-5s", "5d", "s", "1.s", "²", "٣"])
def test_malformed_text_names_the_accepted_forms(value: str) -> None:
    with pytest.raises(ValueError, match="expected a duration such as 90s, 20m or 1h30m"):
        parse_duration(value)


def test_empty_text_is_rejected() -> None:
    with pytest.raises(ValueError, match="got an empty value"):
        parse_duration("")


@pytest.mark.parametrize("value", [0, "0", "0s", 0.0, -3, -1.5])
def test_zero_or_negative_is_rejected(value: object) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        parse_duration(value)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 10**400], ids=["inf", "nan", "huge-int"])
def test_non_finite_is_rejected_without_overflow(value: object) -> None:
    with pytest.raises(ValueError, match="positive and finite"):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, False, None, [1], {"s": 1}])
def test_non_duration_types_are_rejected(value: object) -> None:
    with pytest.raises(ValueError, match="expected a duration"):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.5, "500ms"), (0.001, "1ms"), (2, "2s"), (59.5, "59.5s"), (60, "1m"), (90, "1m30s"), (3600, "60m")],
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


@pytest.mark.parametrize("text", ["2s", "1m30s", "500ms", "20m"])
def test_format_round_trips_through_parse(text: str) -> None:
    assert format_duration(parse_duration(text)) == text
