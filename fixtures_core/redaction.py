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
from dataclasses import replace

from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.spec import Redaction

MASK = "[REDACTED]"

# Shapes of common credentials: specific prefixes and lengths, so ordinary text is left alone.
BUILTIN_PATTERNS: Mapping[str, str] = {
    "OpenAI / Anthropic style key (sk-...)": r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,}",
    "AWS access key id": r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Za-z])",
    "GitHub token": r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})",
    "GitLab token": r"(?<![A-Za-z0-9_-])glpat-[A-Za-z0-9_-]{20,}",
    "Slack token": r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}",
    "Google API key": r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}",
    "Hugging Face token": r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}",
    "Stripe key": r"(?<![A-Za-z0-9_])[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    "JSON Web Token": r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    "bearer token": r"(?<=[Bb]earer )[A-Za-z0-9._~+/-]{20,}=*",
    "private key block": r"-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY-----|\Z)",
}

_SECRET_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_SHORTEST_SECRET = 8  # shorter values ("true", "1") would mask ordinary words


def secret_values(env: Mapping[str, str]) -> tuple[str, ...]:
    """Values of environment variables named like secrets, longest first (so none masks part of another)."""
    found = {value for name, value in env.items() if _SECRET_NAME.search(name) and len(value) >= _SHORTEST_SECRET}
    return tuple(sorted(found, key=lambda v: (-len(v), v)))


class Redactor:
    """Masks one set of patterns and literal values in text and in results."""

    def __init__(self, pattern: re.Pattern[str] | None) -> None:
        self._pattern = pattern

    def text(self, value: str) -> str:
        return value if self._pattern is None or not value else self._pattern.sub(MASK, value)

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
        if self._pattern is None:
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
        return Redactor(None)
    return _compiled(redaction.patterns, secret_values(env))


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...], literals: tuple[str, ...]) -> Redactor:
    parts = [*BUILTIN_PATTERNS.values(), *patterns, *(re.escape(v) for v in literals)]
    return Redactor(re.compile("|".join(f"(?:{p})" for p in parts)))


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
