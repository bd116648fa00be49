#!/usr/bin/env python3
"""A fake LLM agent CLI that prints one Captain-shaped observation (stdlib only).

It stands in for ``captain prompt observe PROMPT --runtime SELECTOR`` so the
example fixtures can run offline, fast and reproducibly.

Usage::

    fake_agent.py observe PROMPT_FILE_OR_TEXT --runtime SELECTOR [--seed N]

PROMPT_FILE_OR_TEXT is a file path (tried relative to the current directory,
then relative to this script's folder) or, when no such file exists, the
prompt text itself.

SELECTOR is ``KIND:MODEL:EFFORT``:

* KIND is ``api`` or ``cli``. The ``cli`` runtime is systematically slower:
  its simulated duration is 1.4x the ``api`` duration (noise is +-5 %, so the
  median of any samples is always more than 25 % slower than ``api``).
* EFFORT is ``minimal``, ``low``, ``medium``, ``high`` or ``xhigh``; two
  values inject misbehaviour so a matrix can show FAIL and flaky rows:
  - ``low``: the observation reports reasoning effort ``medium`` (a
    behavioural mismatch between the requested and observed control);
  - ``flaky``: behaves like ``high`` but ``execution.state`` is ``failed``
    on a deterministic subset of samples (seeded RNG draw < 0.4).

Output: exactly one JSON object (schema ``captain.observation/v1``) on stdout::

    {"schema": "captain.observation/v1",
     "runtime": {"kind", "model", "selector"},
     "sample": N,
     "execution": {"state": "completed"|"failed", "exitReason": "stop"|"provider_error"},
     "controls": {"reasoningEffort": {"requested": E,
                                      "observed": {"state": "known", "value": E'}}},
     "metrics": {"durationMs": {"value": int},
                 "usage": {"buckets": {"inputTokens", "outputTokens", "reasoningTokens"}},
                 "costUsd": {"value": float}},
     "answer": "..."}

Every metric is present even when execution failed, so metric extraction
never errors. Durations are simulated numbers; the process does not sleep.

Randomness is reproducible: the RNG seed is the SHA-256 of (selector, prompt
text, sample index, --seed), where the sample index comes from the
``ASSAY_SAMPLE`` environment variable (default 0). The same inputs always
give the same output.

Exit codes: 0 whenever an observation was printed (also for a "failed"
execution); 2 with usage on stderr when the arguments are wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
from pathlib import Path

SCHEMA = "captain.observation/v1"
KINDS = ("api", "cli")
EFFORTS = ("minimal", "low", "medium", "high", "xhigh", "flaky")

# Simulated base duration (ms) and reasoning tokens per observed effort.
BASE_DURATION_MS = {
    "minimal": 700,
    "low": 1300,
    "medium": 2200,
    "high": 3600,
    "xhigh": 6000,
}
BASE_REASONING_TOKENS = {
    "minimal": 0,
    "low": 400,
    "medium": 1400,
    "high": 3800,
    "xhigh": 8000,
}
USAGE = (
    "usage: fake_agent.py observe PROMPT_FILE_OR_TEXT --runtime SELECTOR [--seed N]\n"
    "  SELECTOR: api|cli:MODEL:minimal|low|medium|high|xhigh|flaky\n"
)
CLI_SLOWDOWN = 1.4
NOISE = 0.05  # +-5 % uniform noise on durations
FLAKY_FAILURE_RATE = 0.4
SYSTEM_PROMPT_TOKENS = 1200
PRICE_PER_TOKEN_USD = {
    "input": 1.25e-6,
    "output": 10.0e-6,
}  # reasoning billed as output


class UsageError(Exception):
    """Bad command line arguments."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would exit itself; keep one path
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="fake_agent.py",
        description="Fake LLM agent: print one captain.observation/v1 JSON object.",
    )
    sub = parser.add_subparsers(dest="command", metavar="observe")
    observe = sub.add_parser("observe", help="observe one prompt on one runtime")
    observe.add_argument("prompt", metavar="PROMPT_FILE_OR_TEXT")
    observe.add_argument("--runtime", required=True, metavar="SELECTOR", help="api|cli:MODEL:EFFORT")
    observe.add_argument("--seed", type=int, default=0, metavar="N", help="extra seed (default 0)")
    return parser


def parse_selector(selector: str) -> tuple[str, str, str]:
    parts = selector.split(":")
    if len(parts) != 3 or not all(parts):
        raise UsageError(f"--runtime must be KIND:MODEL:EFFORT, got {selector!r}")
    kind, model, effort = parts
    if kind not in KINDS:
        raise UsageError(f"runtime kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if effort not in EFFORTS:
        raise UsageError(f"effort must be one of {', '.join(EFFORTS)}, got {effort!r}")
    return kind, model, effort


def read_prompt(value: str) -> str:
    """The prompt text: a file relative to the cwd or this script's folder, else the value itself."""
    for candidate in (Path(value), Path(__file__).resolve().parent / value):
        try:
            if candidate.is_file():
                return candidate.read_text(encoding="utf-8")
        except (OSError, ValueError):  # e.g. a name too long for the filesystem
            continue
    return value


def sample_index() -> int:
    raw = os.environ.get("ASSAY_SAMPLE", "0")
    try:
        return int(raw)
    except ValueError:
        raise UsageError(f"ASSAY_SAMPLE must be an integer, got {raw!r}") from None


def make_rng(selector: str, prompt: str, sample: int, seed: int) -> random.Random:
    material = "\0".join([selector, prompt, str(sample), str(seed)]).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(material).digest()[:8], "big"))


def observe(selector: str, prompt: str, sample: int, seed: int) -> dict:
    kind, model, effort = parse_selector(selector)
    rng = make_rng(selector, prompt, sample, seed)
    # Draw in a fixed order so every field is reproducible.
    failure_draw = rng.random()
    duration_noise = rng.uniform(1 - NOISE, 1 + NOISE)
    reasoning_noise = rng.uniform(0.9, 1.1)
    output_tokens = rng.randint(180, 420)

    requested = "high" if effort == "flaky" else effort
    observed = "medium" if requested == "low" else requested
    failed = effort == "flaky" and failure_draw < FLAKY_FAILURE_RATE

    duration = BASE_DURATION_MS[observed] * duration_noise * (CLI_SLOWDOWN if kind == "cli" else 1.0)
    input_tokens = SYSTEM_PROMPT_TOKENS + max(1, len(prompt.split()) * 4 // 3)
    reasoning_tokens = int(BASE_REASONING_TOKENS[observed] * reasoning_noise)
    if failed:  # the provider gave up part-way: shorter, fewer tokens, no answer
        duration *= 0.35
        reasoning_tokens //= 3
        output_tokens = 0
    cost = (
        input_tokens * PRICE_PER_TOKEN_USD["input"] + (output_tokens + reasoning_tokens) * PRICE_PER_TOKEN_USD["output"]
    )
    first_line = prompt.strip().splitlines()[0] if prompt.strip() else ""
    answer = "" if failed else f"[{model} {observed}] Answer to: {first_line[:80]}"

    return {
        "schema": SCHEMA,
        "runtime": {"kind": kind, "model": model, "selector": selector},
        "sample": sample,
        "execution": {
            "state": "failed" if failed else "completed",
            "exitReason": "provider_error" if failed else "stop",
        },
        "controls": {
            "reasoningEffort": {
                "requested": requested,
                "observed": {"state": "known", "value": observed},
            },
        },
        "metrics": {
            "durationMs": {"value": round(duration)},
            "usage": {
                "buckets": {
                    "inputTokens": input_tokens,
                    "outputTokens": output_tokens,
                    "reasoningTokens": reasoning_tokens,
                }
            },
            "costUsd": {"value": round(cost, 6)},
        },
        "answer": answer,
    }


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command != "observe":
            raise UsageError("missing command 'observe'")
        observation = observe(args.runtime, read_prompt(args.prompt), sample_index(), args.seed)
    except UsageError as exc:
        sys.stderr.write(USAGE)
        sys.stderr.write(f"fake_agent.py: error: {exc}\n")
        return 2
    sys.stdout.write(json.dumps(observation) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
