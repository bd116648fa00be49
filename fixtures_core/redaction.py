"""Masking secrets in what assay stores or prints.

A sample's output is masked once, right after its checks ran (CEL sees the
real output, so ``!stdout.contains("sk-")`` still catches a leak) and before
anything keeps it: evidence, ``run.json``, every report and log. Three things
are masked, each replaced by ``[REDACTED]``:

- the built-in API-key shapes below (on unless the fixture says ``redact: false``);
- the fixture file's own ``redact:`` regexes;
- the values of the sample's environment variables named like secrets
  (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``, ...), whatever their shape.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.spec import Redaction

MASK = "[REDACTED]"

# Shapes of common credentials: specific prefixes and lengths, so ordinary text is left alone. Each
# has the literals one of which any match contains, so a text without them is not scanned at all.
BUILTIN_PATTERNS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "OpenAI / Anthropic style key (sk-...)": (("sk-",), r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}"),
    "AWS access key id": (("AKIA", "ASIA"), r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])"),
    "GitHub token": (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    ),
    "GitLab token": (("glpat-",), r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}"),
    "Slack token": (("xox",), r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}"),
    "Google API key": (("AIza",), r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}"),
    "Hugging Face token": (("hf_",), r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}"),
    "Stripe key": (("_live_", "_test_"), r"(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    "JSON Web Token": (("eyJ",), r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    "bearer token": (("earer ",), r"(?<=[Bb]earer )[A-Za-z0-9._~+/-]{20,}=*"),
    "private key block": (
        ("PRIVATE KEY-----",),
        r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)",
    ),
}

_SECRET_SUFFIXES = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS")
_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$")
_SHORTEST_SECRET = 8  # shorter values ("true", "1") would mask ordinary words


def secret_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """Values of environment variables named like secrets, longest first (so none masks part of another)."""
    found = {
        value
        for name, value in env.items()
        if len(value) >= _SHORTEST_SECRET
        and name.upper().endswith(_SECRET_SUFFIXES)  # cheap test first: runs for every sample
        and _SECRET_NAME.search(name.upper())
    }
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


@dataclass(frozen=True)
class _Rule:
    """A pattern, and literals one of which must be in a text for the pattern to match (none: always try)."""

    triggers: tuple[str, ...]
    pattern: re.Pattern[str]

    def apply(self, text: str) -> str:
        if self.triggers and not any(t in text for t in self.triggers):
            return text
        return self.pattern.sub(MASK, text)


class Redactor:
    """Masks secret literals and patterns in text and in results."""

    def __init__(self, rules: tuple[_Rule, ...] = (), literals: tuple[str, ...] = ()) -> None:
        self._rules = rules
        self._literals = literals
        self._off = not rules and not literals

    def text(self, value: str) -> str:
        if self._off or not value:
            return value
        for literal in self._literals:
            if literal in value:
                value = value.replace(literal, MASK)
        for rule in self._rules:
            value = rule.apply(value)
        return value

    def optional(self, value: str | None) -> str | None:
        return None if value is None else self.text(value)

    def value(self, value: object) -> object:
        """A JSON-like value with every string in it masked."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item) for item in value)
        return value

    def sample(self, sample: SampleResult) -> SampleResult:
        """A sample with its output and every message about it masked."""
        if self._off:
            return sample
        return replace(
            sample,
            stdout=self.text(sample.stdout),
            stderr=self.text(sample.stderr),
            error=self.optional(sample.error),
            command=self._check(sample.command),
            assertions=None if sample.assertions is None else self._check(sample.assertions),
            metrics={name: self._metric(value) for name, value in sample.metrics.items()},
        )

    def _check(self, check: Check) -> Check:
        return check if check.error is None else replace(check, error=self.text(check.error))

    def _metric(self, value: MetricValue) -> MetricValue:
        return value if value.error is None else replace(value, error=self.text(value.error))


def redactor(redaction: Redaction, env: Mapping[str, str]) -> Redactor:
    """The redactor of a fixture file's ``redact:`` setting for a process with environment ``env``."""
    if not redaction.enabled:
        return Redactor()
    return Redactor(_rules(redaction.patterns), secret_values(env))


@functools.lru_cache(maxsize=64)
def _rules(patterns: tuple[str, ...]) -> tuple[_Rule, ...]:
    builtin = tuple(_Rule(triggers, re.compile(p)) for triggers, p in BUILTIN_PATTERNS.values())
    return builtin + tuple(_Rule((), re.compile(p)) for p in patterns)


_PROBE = "The quick brown fox, 42 sk-x\n"


def pattern_problem(pattern: str) -> str | None:
    """Why a user's ``redact:`` regex cannot be used, or None when it can."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"invalid regular expression {pattern!r}: {exc}"
    if compiled.fullmatch("") or any(m.start() == m.end() for m in compiled.finditer(_PROBE)):
        return f"{pattern!r} can match the empty string, so it would mask between characters"
    return None
