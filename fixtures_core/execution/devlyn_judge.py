"""devlyn's judge protocol: the prompt ``judge.sh`` builds, and the reply it reads.

The judge gets one text on stdin: the rubric, the case's ``spec.md`` and
``expected.json``, and per blind label (A, B, C) the arm's diff (pipeline
tells removed) and its ``verify.json``. It replies with JSON holding
``a_score``, ``b_score`` (``c_score`` with three arms) as whole numbers
0-100, per-label breakdowns of four axes 0-25, ``critical_findings``,
``disqualifiers`` and ``winner``; the last such object in its output counts.
As judge.sh does, an axis outside 0-25 is clamped and recorded, and an arm's
score and spec axis are capped by its verification: at most
``floor(100 * verify_score)`` and ``floor(25 * verify_score)``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fixtures_core.judgment import TIE, ArmScore, JudgeOutput, JudgeOutputError

AXES = ("spec", "constraint", "scope", "quality")
AXIS_MAX = 25
_LETTERS = ("A", "B", "C")
# Lines that would tell the judge which arm ran the pipeline (judge.sh strips them).
_TELLS = (
    re.compile(r"^diff --git.*\.devlyn/.*$", re.M),
    re.compile(r"^chore\(pipeline\):.*$", re.M),
    re.compile(r"^\.devlyn/.*$", re.M),
    re.compile(r"^Co-Authored-By:.*$", re.M),
)


@dataclass(frozen=True)
class Slot:
    """What the judge sees of one arm under its blind label."""

    label: str
    diff: str
    verify: Mapping[str, object]  # the arm's verify.json


def sanitize_diff(diff: str) -> str:
    """The diff without files under ``.devlyn/`` and without lines that name the pipeline."""
    kept, skip = [], False
    for line in diff.splitlines(keepends=True):
        if line.startswith("diff --git "):
            skip = ".devlyn/" in line
            if skip:
                continue
        if not skip:
            kept.append(line)
    text = "".join(kept)
    for tell in _TELLS:
        text = tell.sub("", text)
    return text


def prompt(rubric: str, spec: str, expected: str, slots: Sequence[Slot]) -> str:
    """The judge's whole input, as judge.sh writes ``judge-prompt.txt``."""
    letters = [slot.label for slot in slots]
    keys = [f"{letter.lower()}_score" for letter in letters]
    breakdowns = [f"{letter.lower()}_breakdown" for letter in letters]
    scores = ",\n  ".join(f'"{key}": <int 0-100>' for key in keys)
    axes = ", ".join(f'"{axis}": 0-25' for axis in AXES)
    breakdown_lines = ",\n  ".join(f'"{b}": {{{axes}, "notes": "<3-5 bullets>"}}' for b in breakdowns)
    findings = ", ".join(f'"{letter}": ["..."]' for letter in letters)
    flags = ", ".join(f'"{letter}": bool' for letter in letters)
    reasons = ", ".join(f'"{letter}_reason": "..."' for letter in letters)
    winners = " | ".join(f'"{letter}"' for letter in letters) + ' | "tie"'
    who = "Three engineers" if len(slots) == 3 else "Two engineers"
    sections = "\n".join(
        f"=== IMPLEMENTATION {slot.label} ===\nDiff:\n```diff\n{sanitize_diff(slot.diff)}\n```\n"
        f"Verification results:\n```json\n{json.dumps(_without_arm(slot.verify), indent=2)}\n```\n"
        for slot in slots
    )
    return f"""You are a blind code-review judge. {who} implemented the same spec. You do NOT know which \
implementation came from which process — grade them only on the merits of the code and its behavior.

Apply the 4-axis rubric from RUBRIC.md below. Each axis is 0-25, total 100. Score every implementation \
independently — do not let one arm's score anchor another's. The judge's job is to apply the rubric absolutely; \
relative ordering falls out from the absolute scores.

Return STRICT JSON only — no prose outside the JSON. Format:

{{
  {scores},
  "winner": {winners},
  {breakdown_lines},
  "critical_findings": {{{findings}}},
  "disqualifiers": {{{flags}, {reasons}}},
  "overall_reasoning": "<5-8 sentences>"
}}

=== RUBRIC ===
{rubric}

=== SPEC ===
{spec}

=== EXPECTED (machine-readable acceptance) ===
{expected}

{sections}
Return the JSON and nothing else.
"""


def _without_arm(verify: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in verify.items() if k != "arm"}


@dataclass(frozen=True)
class Reply:
    """A parsed reply: the scores by arm (clamped and capped), the winner, and what judge.sh records."""

    output: JudgeOutput
    document: dict[str, object]  # the chosen JSON with judge.sh's additions (judge.json)


def parse_reply(text: str, labels: Mapping[str, str], verify_scores: Mapping[str, float]) -> Reply:
    """The last JSON object in ``text`` with ``a_score`` and ``b_score``, mapped from labels to arms;
    JudgeOutputError when there is none or a score or disqualifier is malformed."""
    chosen = _last_judgment(text)
    letters = [letter for letter in _LETTERS if letter in labels]
    invalid = [f"{x.lower()}_score" for x in letters if not _is_score(chosen.get(f"{x.lower()}_score"))]
    if invalid:
        raise JudgeOutputError(f"invalid judge score value(s): {', '.join(invalid)} (whole numbers 0-100)")
    flags = chosen.get("disqualifiers")
    flags = flags if isinstance(flags, dict) else {}
    bad = [x for x in letters if x in flags and not isinstance(flags[x], bool)]
    if bad:
        raise JudgeOutputError(f"invalid judge disqualifier value(s): {', '.join(bad)} (true or false)")
    invalid_cells = _clamp_axes(chosen)
    caps = _cap_by_verification(chosen, labels, verify_scores)
    findings = chosen.get("critical_findings")
    findings = findings if isinstance(findings, dict) else {}
    scores = {}
    for letter in letters:
        breakdown = chosen.get(f"{letter.lower()}_breakdown")
        axes = breakdown if isinstance(breakdown, dict) else {}
        listed = findings.get(letter, [])
        listed = listed if isinstance(listed, list) else [listed] if listed else []
        reason = str(flags.get(f"{letter}_reason", "") or "")
        total = chosen[f"{letter.lower()}_score"]
        assert isinstance(total, int)  # checked above
        scores[labels[letter]] = ArmScore(
            total=float(total),
            axes={axis: float(axes[axis]) for axis in AXES if _is_number(axes.get(axis))},
            disqualifier=flags.get(letter) is True,
            findings=tuple(str(item) for item in listed),
            disqualifier_reason=reason if flags.get(letter) is True and reason else None,
            axes_invalid=sum(cell["breakdown"] == f"{letter.lower()}_breakdown" for cell in invalid_cells),
        )
    winner = chosen.get("winner")
    arm = labels[winner] if isinstance(winner, str) and winner in labels else TIE
    reasoning = chosen.get("overall_reasoning")
    document = {
        **chosen,
        "_blind_mapping": {letter: labels[letter] for letter in letters},
        "_axis_validation": {
            "out_of_range_count": len(invalid_cells),
            "out_of_range_cells": invalid_cells,
            "axis_range": [0, AXIS_MAX],
        },
        "_verify_score_caps": caps,
        "scores_by_arm": {labels[x]: chosen[f"{x.lower()}_score"] for x in letters},
        "findings_by_arm": {labels[x]: list(scores[labels[x]].findings) for x in letters},
        "disqualifiers_by_arm": {
            labels[x]: {"disqualifier": flags.get(x) is True, "reason": str(flags.get(f"{x}_reason", "") or "")}
            for x in letters
        },
        "winner_arm": arm,
    }
    output = JudgeOutput(scores, arm, rationale=reasoning if isinstance(reasoning, str) and reasoning else None)
    return Reply(output, document)


def _last_judgment(text: str) -> dict[str, object]:
    decoder = json.JSONDecoder()
    for position in reversed([i for i, char in enumerate(text) if char == "{"]):
        try:
            found, _end = decoder.raw_decode(text[position:])
        except ValueError:
            continue
        if isinstance(found, dict) and "a_score" in found and "b_score" in found:
            return found
    raise JudgeOutputError('no JSON object with "a_score" and "b_score" in the judge output')


def _clamp_axes(chosen: dict[str, object]) -> list[dict[str, object]]:
    """Axis cells outside 0-25, each clamped in place (judge.sh's ``_axis_validation``)."""
    cells: list[dict[str, object]] = []
    for letter in _LETTERS:
        key = f"{letter.lower()}_breakdown"
        breakdown = chosen.get(key)
        if not isinstance(breakdown, dict):
            continue
        for axis in AXES:
            if axis not in breakdown:
                continue
            value = breakdown[axis]
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= AXIS_MAX:
                continue
            cells.append({"breakdown": key, "axis": axis, "value": value})
            number = int(value) if _is_number(value) else 0
            breakdown[axis] = max(0, min(AXIS_MAX, number))
    return cells


def _cap_by_verification(
    chosen: dict[str, object], labels: Mapping[str, str], verify_scores: Mapping[str, float]
) -> list[dict[str, object]]:
    """Cap each arm's score and spec axis by the share of its verification commands that passed."""
    caps = []
    for letter in _LETTERS:
        arm = labels.get(letter)
        if arm is None or arm not in verify_scores:
            continue
        share = max(0.0, min(1.0, verify_scores[arm]))
        score_key, breakdown_key = f"{letter.lower()}_score", f"{letter.lower()}_breakdown"
        score_cap, spec_cap = math.floor(100 * share), math.floor(25 * share)
        raw_score = chosen.get(score_key)
        breakdown = chosen.get(breakdown_key)
        raw_spec = breakdown.get("spec") if isinstance(breakdown, dict) else None
        row: dict[str, object] = {
            "letter": letter,
            "arm": arm,
            "verify_score": share,
            "score_cap": score_cap,
            "spec_cap": spec_cap,
            "raw_score": raw_score,
            "raw_spec": raw_spec,
            "score_capped": False,
            "spec_capped": False,
        }
        if _is_score(raw_score) and isinstance(raw_score, int) and raw_score > score_cap:
            chosen[score_key] = score_cap
            row["score_capped"] = True
        if isinstance(breakdown, dict) and _is_number(raw_spec) and float(raw_spec) > spec_cap:  # type: ignore[arg-type]
            breakdown["spec"] = spec_cap
            row["spec_capped"] = True
        caps.append(row)
    return caps


def _is_score(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
