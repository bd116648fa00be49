"""Inherited settings (``fixtures_core.parsing.settings``): what the frontmatter, or a block's yaml on
top of it, gives a row.

``Inherited.platform_skip``, ``apply_common`` and ``merge_metrics`` are called directly; frontmatter
is also written to a real file and read with ``parse_file`` (lines are 1-based lines of that file).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.builtins import go_arch, go_os
from fixtures_core.parsing.settings import Inherited, apply_common, merge_metrics
from fixtures_core.spec import DEFAULT_TIMEOUT_S, MetricSpec
from tests.core.parsing.fixture_files import parse, parse_error

GOOS = go_os()
GOARCH = go_arch()


def metric(name: str, extract: str, line: int) -> MetricSpec:
    return MetricSpec(name=name, extract=extract, unit="s", file="f.md", line=line)


# --- Inherited.platform_skip -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("os", "arch", "reason"),
    [
        ((), (), None),
        ((GOOS,), (GOARCH,), None),
        ((GOOS.upper(),), (), None),  # compared case-insensitively
        (("plan9", "aix"), (), f"os {GOOS} is not in aix, plan9"),
        ((f"!{GOOS}",), (), f"os {GOOS} is excluded"),
        (("!plan9",), (), None),
        ((), (f"!{GOARCH}",), f"arch {GOARCH} is excluded"),
        ((), ("nosucharch",), f"arch {GOARCH} is not in nosucharch"),
        (("plan9",), (f"!{GOARCH}",), f"os {GOOS} is not in plan9"),  # os is checked first
    ],
)
def test_platform_skip(os: tuple[str, ...], arch: tuple[str, ...], reason: str | None) -> None:
    assert Inherited(os=os, arch=arch).platform_skip() == reason


# --- apply_common and merge_metrics ---------------------------------------------------------


def test_apply_common_overrides_what_it_is_given_and_merges_env() -> None:
    base = Inherited(env={"A": "1", "B": "1"}, cwd="/base", repeat=3, skip="inherited", properties={"p": 1})
    data = {"env": {"B": "2", "C": 3}, "timeout": "90s", "serial": True, "indeterminate": "exitCode == 7"}
    got = apply_common(base, data, {"env": 2, "timeout": 5, "serial": 6, "indeterminate": 7}, {}, "f.md")
    assert dict(got.env) == {"A": "1", "B": "2", "C": "3"}
    assert (got.timeout_s, got.serial, got.indeterminate) == (90.0, True, "exitCode == 7")
    assert (got.cwd, got.repeat, got.skip, dict(got.properties)) == ("/base", 3, "inherited", {"p": 1})  # kept


@pytest.mark.parametrize(
    ("skip", "expected"), [("", ("kept", None)), (None, ("kept", None)), ("test -d /", (None, "test -d /"))]
)
def test_apply_common_empty_skip_keeps_the_inherited_one(skip: str | None, expected: tuple[object, object]) -> None:
    got = apply_common(Inherited(skip="kept"), {"skip": skip}, {"skip": 3}, {}, "f.md")
    assert (got.skip, got.skip_command) == expected


def test_apply_common_errors_name_the_key_line() -> None:
    with pytest.raises(FixtureError) as caught:
        apply_common(Inherited(), {"repeat": 0}, {"repeat": 12}, {}, "f.md")
    assert str(caught.value) == "f.md:12: repeat: must be a whole number >= 1, got 0"


def test_apply_common_refuses_metrics_and_measurements_together_at_the_later_key() -> None:
    with pytest.raises(FixtureError) as caught:
        apply_common(Inherited(), {"metrics": [], "measurements": []}, {"metrics": 8, "measurements": 4}, {}, "f.md")
    assert (caught.value.line, caught.value.field) == (8, "measurements")


def test_merge_metrics_replaces_by_name_and_appends_new_ones() -> None:
    inherited = (metric("t", "json.t", 3), metric("u", "json.u", 4))
    own = (metric("u", "json.u2", 9), metric("v", "json.v", 10))
    merged = merge_metrics(inherited, own)
    assert [(m.name, m.extract, m.line) for m in merged] == [
        ("t", "json.t", 3),
        ("u", "json.u2", 9),
        ("v", "json.v", 10),
    ]
    assert merge_metrics(inherited, ()) == inherited


def test_defaults_without_frontmatter() -> None:
    settings = Inherited()
    assert (settings.timeout_s, settings.repeat, settings.code_blocks, settings.exec) == (
        DEFAULT_TIMEOUT_S,
        1,
        ("bash",),
        None,
    )


# --- frontmatter read from a file (moved from test_parser.py) --------------------------------


def test_repeat_defaults_to_one_and_timeout_to_two_minutes(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "| Name | Command |\n|---|---|\n| a | true |\n")
    assert row.repeat == 1
    assert row.timeout_s == DEFAULT_TIMEOUT_S == 120.0


def test_frontmatter_env_cwd_and_skip_apply_to_rows(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        """
        ---
        exec: echo
        env:
          TOKEN: "{{ .name }}"
          N: 3
        cwd: $HOME/work
        skip: test -f /no/such/file
        ---
        | Name |
        |---|
        | a |
        """,
    )
    assert dict(row.env) == {"TOKEN": "{{ .name }}", "N": "3"}
    assert row.cwd == "$HOME/work"
    assert (row.skip, row.skip_command) == (None, "test -f /no/such/file")


def test_os_that_does_not_match_skips_every_row(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, "---\nexec: echo\nos: [plan9]\n---\n| Name |\n|---|\n| a |\n")
    assert row.skip is not None
    assert "is not in plan9" in row.skip


def test_os_that_matches_runs(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\nos: [{GOOS}]\n---\n| Name |\n|---|\n| a |\n")
    assert row.skip is None


@pytest.mark.parametrize(("value", "skipped"), [(f"'!{GOOS}'", True), ("'!plan9'", False), ("plan9", True)])
def test_os_accepts_gavel_negation(tmp_path: Path, value: str, skipped: bool) -> None:
    (row,) = parse(tmp_path, f"---\nexec: echo\nos: {value}\n---\n| Name |\n|---|\n| a |\n")
    assert (row.skip is not None) is skipped


@pytest.mark.parametrize(
    ("value", "line_text"),
    [("0", "repeat: 0"), ("-1", "repeat: -1"), ("x", "repeat: x"), ("2.5", "repeat: 2.5"), ("true", "repeat: true")],
)
def test_bad_frontmatter_repeat_names_line_and_field(tmp_path: Path, value: str, line_text: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\n{line_text}\n---\n")
    assert str(error).startswith(f"{path}:3: repeat: must be a whole number >= 1, got ")
    assert (error.line, error.field) == (3, "repeat")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5 parsecs", "expected a duration such as 90s, 20m or 1h30m, got '5 parsecs'"),
        ("0", "a duration must be positive and finite, got 0"),
        ("[1]", "expected a duration such as 90s, 20m or 1h30m, got [1]"),
    ],
)
def test_bad_frontmatter_timeout_names_line_and_field(tmp_path: Path, value: str, message: str) -> None:
    path, error = parse_error(tmp_path, f"---\nexec: echo\nrepeat: 2\ntimeout: {value}\n---\n")
    assert str(error) == f"{path}:4: timeout: {message}"


@pytest.mark.parametrize(("key", "value"), [("exec", "[a, b]"), ("env", "[A]"), ("args", "{a: 1}"), ("cwd", "~")])
def test_wrongly_typed_frontmatter_values(tmp_path: Path, key: str, value: str) -> None:
    path, error = parse_error(tmp_path, f"---\nrepeat: 1\n{key}: {value}\n---\n")
    assert str(error).startswith(f"{path}:3: {key}")


def test_env_value_that_is_a_map_names_the_variable(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nenv:\n  A: {b: 1}\n---\n")
    assert str(error).startswith(f"{path}:2: env.A: must be a string")


METRICS_FRONTMATTER = """
---
exec: echo
metrics:
  - name: duration_ms
    extract: json.metrics.durationMs.value
    unit: ms
    aggregate: median
    direction: lower
    baseline: API high
    threshold:
      regressionPercent: 25
      max: 120000
  - name: cost_usd
    extract: json.cost
    unit: usd
    gate: false
---
| Name |
|---|
| API high |
"""


def test_frontmatter_metrics_are_read_with_their_lines(tmp_path: Path) -> None:
    (row,) = parse(tmp_path, METRICS_FRONTMATTER)
    duration, cost = row.metrics
    assert (duration.name, duration.unit, duration.aggregate, duration.direction) == (
        "duration_ms",
        "ms",
        "median",
        "lower",
    )
    assert duration.baseline == "API high"
    assert duration.threshold.regression_percent == 25.0
    assert duration.threshold.max == 120000.0
    assert duration.threshold.min is None
    assert duration.gate is True
    assert (cost.aggregate, cost.direction, cost.gate, cost.baseline) == ("mean", "none", False, None)
    assert cost.threshold.is_empty()
    assert (duration.line, cost.line) == (4, 13)
    assert duration.file == cost.file == row.file


def test_measurements_is_an_alias_of_metrics(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: echo\nmeasurements:\n  - {name: t, extract: json.t, unit: s}\n---\n| Name |\n|---|\n| a |\n",
    )
    assert [m.name for m in row.metrics] == ["t"]


def test_metrics_and_measurements_together_are_an_error(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nmetrics: []\nmeasurements: []\n---\n")
    assert str(error) == f"{path}:4: measurements: set metrics or its alias measurements, not both"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("{name: t, extract: json.t}", "metrics[0].unit: is required"),
        ("{name: t, extract: json.t, unit: ''}", "metrics[0].unit: is required"),
        ("{extract: json.t, unit: s}", "metrics[0].name: is required"),
        ("{name: t, unit: s}", "metrics[0].extract: is required"),
        ("{name: t, extract: json.t, unit: s, aggregate: avg}", "metrics[t].aggregate: unknown aggregate 'avg'"),
        ("{name: t, extract: json.t, unit: s, direction: up}", "metrics[t].direction: unknown direction 'up'"),
        (
            "{name: t, extract: json.t, unit: s, threshold: {min: 5, max: 1}}",
            "metrics[t].threshold: min 5 is greater than max 1",
        ),
        ("{name: t, extract: json.t, unit: s, threshold: {max: .inf}}", "metrics[t].threshold.max: must be a finite"),
        ("{name: t, extract: json.t, unit: s, threshold: {min: .nan}}", "metrics[t].threshold.min: must be a finite"),
        ("{name: t, extract: json.t, unit: s, threshold: {max: '5'}}", "metrics[t].threshold.max: must be a finite"),
        (
            "{name: t, extract: json.t, unit: s, direction: lower, threshold: {regressionPercent: -1}}",
            "metrics[t].threshold.regressionPercent: must be >= 0, got -1",
        ),
        (
            "{name: t, extract: json.t, unit: s, threshold: {regressionPercent: 10}}",
            "metrics[t].threshold.regressionPercent: needs a direction (lower or higher)",
        ),
        (
            "{name: t, extract: json.t, unit: s, direction: none, threshold: {regressionPercent: 10}}",
            "metrics[t].threshold.regressionPercent: needs a direction",
        ),
        (
            "{name: t, extract: json.t, unit: s, threshold: {maximum: 3}}",
            "metrics[t].threshold.maximum: unknown threshold",
        ),
        ("{name: t, extract: json.t, unit: s, threshold: 5}", "metrics[t].threshold: must be a map"),
        ("{name: t, extract: json.t, unit: s, gate: 'no'}", "metrics[t].gate: must be true or false"),
        ("{name: t, extract: json.t, unit: s, units: ms}", "metrics[0].units: unknown metric key"),
        ("just-a-name", "metrics[0]: must be a map with name, extract and unit"),
    ],
)
def test_metric_spec_errors_name_the_item_line_and_field(tmp_path: Path, item: str, message: str) -> None:
    path, error = parse_error(
        tmp_path, f"---\nexec: echo\nmetrics:\n  - {{name: ok, extract: json.ok, unit: s}}\n  - {item}\n---\n"
    )
    expected = message.replace("metrics[0]", "metrics[1]")
    assert str(error).startswith(f"{path}:5: {expected}")


def test_metrics_must_be_a_list(tmp_path: Path) -> None:
    path, error = parse_error(tmp_path, "---\nexec: echo\nmetrics:\n  name: t\n---\n")
    assert str(error) == f"{path}:3: metrics: must be a list of metric specs"


def test_regression_percent_with_direction_and_no_baseline_is_allowed(tmp_path: Path) -> None:
    (row,) = parse(
        tmp_path,
        "---\nexec: echo\nmetrics:\n  - {name: t, extract: json.t, unit: s, direction: higher,"
        " threshold: {regressionPercent: 0}}\n---\n| Name |\n|---|\n| a |\n",
    )
    assert row.metrics[0].threshold.regression_percent == 0.0
    assert row.metrics[0].direction == "higher"
