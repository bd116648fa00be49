"""The throughput keys of a fixture file (``serial``, ``concurrency``, ``limits``, ``budget``) and their
command-line forms (``--limit``, ``--budget``): what they read as, and one-line errors naming file, line, field."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.parser import parse_file
from fixtures_core.parsing.throughput import merge_limits, parse_budget, parse_limit, parse_rate
from fixtures_core.spec import Budget, Limit, Rate, RowSpec

TABLE = """
| Name | Command  | Serial |
|------|----------|--------|
| a    | echo a   |        |
| b    | echo b   | true   |
"""


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixture files are written to the working directory, so errors name them as ``s.md``."""
    monkeypatch.chdir(tmp_path)


def parse(text: str, name: str) -> tuple[RowSpec, ...]:
    Path(name).write_text(text, encoding="utf-8")
    return parse_file(name).rows


def with_frontmatter(frontmatter: str, body: str = TABLE) -> str:
    return f"---\n{frontmatter}\n---\n{body}"


def test_frontmatter_keys_reach_every_row_of_the_file() -> None:
    text = with_frontmatter(
        "concurrency: 3\nlimits:\n  provider: 2\n  model: 10/minute\nbudget: cost_usd <= 5\nserial: false"
    )
    a, b = parse(text, "suite.md")
    assert a.concurrency == b.concurrency == 3
    assert a.limits == (Limit("provider", concurrency=2), Limit("model", rate=Rate(10, 60.0)))
    assert a.budget == Budget("cost_usd", 5.0, "suite.md:6")
    assert (a.serial, b.serial) == (False, True)  # a column overrides the frontmatter


def test_serial_in_frontmatter_and_in_a_block() -> None:
    body = (
        "## command: one\n\n```yaml\nserial: false\n```\n\n```bash\necho 1\n```\n\n"
        "## command: two\n\n```bash\necho 2\n```\n"
    )
    rows = parse(with_frontmatter("serial: true", body), "s.md")
    assert [row.serial for row in rows] == [False, True]  # a block's yaml overrides the frontmatter


def test_a_limit_may_have_a_cap_and_a_rate() -> None:
    (row, _) = parse(with_frontmatter("limits:\n  provider: {concurrency: 2, rate: 30/hour}"), "s.md")
    assert row.limits == (Limit("provider", concurrency=2, rate=Rate(30, 3600.0)),)


@pytest.mark.parametrize(
    ("frontmatter", "where", "message"),
    [
        ("concurrency: 0", "s.md:2: concurrency", "must be a whole number >= 1, got 0"),
        ("concurrency: two", "s.md:2: concurrency", "must be a whole number >= 1"),
        ("limits: 2", "s.md:2: limits", "must be a map of property: limit"),
        ("limits:\n  provider: 0", "s.md:2: limits.provider", "a cap must be >= 1, got 0"),
        ("limits:\n  provider: 3/fortnight", "s.md:2: limits.provider", "UNIT second, minute or hour"),
        ("limits:\n  provider: {cap: 2}", "s.md:2: limits.provider", "must be a cap of samples in flight"),
        ("budget: cost_usd", "s.md:2: budget", "must be a summed metric and a cap"),
        ("budget: cost_usd <= -1", "s.md:2: budget", "the cap must be a finite number > 0"),
        ("budget: 5", "s.md:2: budget", "must be a summed metric and a cap"),
        ("serial: maybe", "s.md:2: serial", "must be true or false"),
    ],
)
def test_bad_throughput_keys_are_one_line_errors(frontmatter: str, where: str, message: str) -> None:
    with pytest.raises(FixtureError) as caught:
        parse(with_frontmatter(frontmatter), "s.md")
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(where), text
    assert message in text


def test_a_bad_serial_cell_names_its_column() -> None:
    body = TABLE.replace("| true   |", "| often  |")
    errors = [row.error for row in parse(body, "s.md") if row.error is not None]
    assert len(errors) == 1 and "s.md:5: Serial: must be true or false, got 'often'" in errors[0]


def test_command_line_forms() -> None:
    assert parse_limit("provider=2") == Limit("provider", concurrency=2)
    assert parse_limit(" model = 5/s ") == Limit("model", rate=Rate(5, 1.0))
    assert parse_rate("120/min") == Rate(120, 60.0)
    assert str(Rate(10, 60.0)) == "10/minute"
    assert parse_budget("tokens < 1e6", "--budget") == Budget("tokens", 1e6, "--budget")
    for bad in ("provider", "=2", "provider=", "provider=-1"):
        with pytest.raises(ValueError):
            parse_limit(bad)


def test_a_later_limit_replaces_what_it_sets_and_keeps_the_rest() -> None:
    merged = merge_limits([Limit("p", concurrency=2, rate=Rate(1, 1.0)), Limit("p", concurrency=5), Limit("q", 1)])
    assert merged == (Limit("p", concurrency=5, rate=Rate(1, 1.0)), Limit("q", concurrency=1))


def test_a_file_budget_must_sum_a_metric_of_that_file(tmp_path: Path) -> None:
    from fixtures_core.parsing.matrix import load_matrix
    from fixtures_core.parsing.validate import validate_matrix

    path = tmp_path / "costly.md"
    path.write_text(with_frontmatter("budget: cost_usd <= 5"))
    (error,) = validate_matrix(load_matrix([str(path)]))
    assert str(error) == (
        f"{path.as_posix()}:2: budget: budget sums metric 'cost_usd', which no row of this file extracts "
        "(metrics: none)"
    )
