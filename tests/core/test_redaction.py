"""Masking secrets: the built-in key shapes, a fixture's own regexes, secret-named environment values."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.errors import FixtureError
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.parsing.parser import parse_file
from fixtures_core.redaction import MASK, pattern_problem, redactor, secret_values
from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.spec import Redaction, RowSpec

OPENAI = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12"
ANTHROPIC = "sk-ant-api03-" + "x" * 40
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
GITHUB = "ghp_" + "a1" * 18
SLACK = "xoxb-" + "1234567890-abcdefghij"
GOOGLE = "AIza" + "B" * 35
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAAAA\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize("secret", [OPENAI, ANTHROPIC, AWS, GITHUB, SLACK, GOOGLE, JWT, PRIVATE_KEY])
def test_builtin_shapes_are_masked_wherever_they_stand(secret: str) -> None:
    mask = redactor(Redaction(), {})
    assert mask.text(f"key={secret}, again:{secret}\n") == f"key={MASK}, again:{MASK}\n"
    assert mask.text(f'{{"apiKey": "{secret}"}}') == f'{{"apiKey": "{MASK}"}}'  # JSON stays JSON


def test_a_bearer_token_keeps_its_scheme_word() -> None:
    assert redactor(Redaction(), {}).text("Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123") == (
        f"Authorization: Bearer {MASK}"
    )


@pytest.mark.parametrize(
    "ordinary",
    [
        "task-runner-0123456789abcdefghijkl",  # "sk-" inside a word
        "sk-short",  # too short to be a key
        "the AKIA prefix alone",
        "sha256 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
        "ask-me-anything",
    ],
)
def test_ordinary_text_is_left_alone(ordinary: str) -> None:
    assert redactor(Redaction(), {}).text(ordinary) == ordinary


def test_a_fixtures_own_patterns_add_to_the_builtin_set() -> None:
    mask = redactor(Redaction(patterns=(r"acct-[0-9]{6}",)), {})
    assert mask.text(f"acct-123456 {OPENAI}") == f"{MASK} {MASK}"


def test_redact_false_turns_masking_off() -> None:
    mask = redactor(Redaction(enabled=False), {"OPENAI_API_KEY": "literal-secret-value"})
    assert mask.text(f"{OPENAI} literal-secret-value") == f"{OPENAI} literal-secret-value"


def test_secret_named_environment_values_are_masked_whatever_their_shape() -> None:
    env = {"MY_SERVICE_TOKEN": "opaque-value-123", "DB_PASSWORD": "hunter2hunter2", "HOME": "/root", "X_KEY": "short"}
    assert secret_values(env) == ("opaque-value-123", "hunter2hunter2")
    mask = redactor(Redaction(), env)
    assert mask.text("token opaque-value-123, pw hunter2hunter2, home /root, short") == (
        f"token {MASK}, pw {MASK}, home /root, short"
    )


def test_a_sample_is_masked_in_its_output_and_in_every_message() -> None:
    sample = SampleResult(
        index=0,
        status="ERR",
        duration_ms=1.0,
        exit_code=0,
        stdout=f"out {OPENAI}",
        stderr=f"err {OPENAI}",
        command=Check("fail", error=f"stdout was {OPENAI}"),
        assertions=Check("error", error=f"no such key; stdout starts {OPENAI}", expression="json.x"),
        metrics={"m": MetricValue("error", error=f"not a number: {OPENAI}")},
        error=f"sample error {OPENAI}",
    )
    masked = redactor(Redaction(), {}).sample(sample)
    assert OPENAI not in repr(masked)
    assert masked.assertions is not None and masked.assertions.expression == "json.x"


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [("acct-[0-9", "invalid regular expression"), ("x*", "can match the empty string"), (r"\b", "empty string")],
)
def test_unusable_patterns_are_named(pattern: str, problem: str) -> None:
    found = pattern_problem(pattern)
    assert found is not None and problem in found


def test_frontmatter_redact_is_read_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    def parse(text: str) -> tuple[RowSpec, ...]:
        Path("f.md").write_text(text)
        return parse_file("f.md").rows

    rows = parse("---\nredact:\n  - 'acct-[0-9]{6}'\n---\n\n| Name | Command |\n|---|---|\n| a | true |\n")
    assert rows[0].redaction == Redaction(patterns=("acct-[0-9]{6}",))
    off = parse("---\nredact: false\n---\n\n| Name | Command |\n|---|---|\n| a | true |\n")
    assert off[0].redaction == Redaction(enabled=False)
    with pytest.raises(FixtureError) as caught:
        parse("---\nredact:\n  - ok-[0-9]+\n  - 'bad-[0-9'\n---\n\n| Name | Command |\n|---|---|\n")
    assert str(caught.value).startswith("f.md:4: redact[1]: invalid regular expression 'bad-[0-9'")


def test_a_row_stores_masked_output_but_its_checks_saw_the_real_one(tmp_path: Path, containment: Containment) -> None:
    script = tmp_path / "leak.py"
    script.write_text(f"print('key {OPENAI}')\n")
    text = (
        "---\nexec: python3\nargs: ['{{ .sourceDir }}/leak.py']\n---\n\n| Name | CEL |\n|---|---|\n"
        '| leak | `!stdout.contains("sk-proj-")` |\n'
    )
    (tmp_path / "leak.md").write_text(text)
    row = parse_file(tmp_path / "leak.md").rows[0]
    result = run_row(row, RunSettings(run_id="r"), containment)
    assert result.status == "FAIL"  # the assertion saw the key
    assert result.samples[0].stdout == f"key {MASK}\n"
