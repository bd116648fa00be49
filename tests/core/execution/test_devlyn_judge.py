"""devlyn's judge protocol: the prompt judge.sh builds and the reply it reads (clamps, caps, labels)."""

from __future__ import annotations

import json

import pytest

from fixtures_core.execution.devlyn_judge import Slot, parse_reply, prompt, sanitize_diff
from fixtures_core.judgment import TIE, JudgeOutputError

LABELS = {"A": "bare", "B": "variant"}
DIFF = """diff --git a/bin/cli.js b/bin/cli.js
+const loud = true;
diff --git a/.devlyn/state.json b/.devlyn/state.json
+{"phase": "verify"}
Co-Authored-By: the pipeline
"""


def reply(**fields: object) -> str:
    base: dict[str, object] = {
        "a_score": 70,
        "b_score": 90,
        "winner": "B",
        "a_breakdown": {"spec": 20, "constraint": 20, "scope": 15, "quality": 15, "notes": ""},
        "b_breakdown": {"spec": 25, "constraint": 25, "scope": 20, "quality": 20, "notes": ""},
        "critical_findings": {"A": ["silent catch in cli.js"], "B": []},
        "disqualifiers": {"A": False, "B": False, "A_reason": "", "B_reason": ""},
        "overall_reasoning": "B is complete.",
    }
    return json.dumps({**base, **fields})


def test_the_prompt_has_judge_shs_sections_and_no_pipeline_tells() -> None:
    slots = [Slot("A", DIFF, {"verify_score": 1.0, "arm": "bare"}), Slot("B", "", {"verify_score": 0.5})]

    text = prompt("RUBRIC TEXT", "SPEC TEXT", '{"x": 1}', slots)

    assert text.startswith("You are a blind code-review judge. Two engineers implemented the same spec.")
    assert '"a_score": <int 0-100>,\n  "b_score": <int 0-100>,\n  "winner": "A" | "B" | "tie",' in text
    assert (
        "=== RUBRIC ===\nRUBRIC TEXT\n\n=== SPEC ===\nSPEC TEXT\n\n=== EXPECTED (machine-readable acceptance) ==="
        in text
    )
    assert "=== IMPLEMENTATION A ===\nDiff:\n```diff\ndiff --git a/bin/cli.js b/bin/cli.js\n+const loud" in text
    assert ".devlyn" not in text and "Co-Authored-By" not in text  # files under .devlyn/ and tells are dropped
    assert '"arm"' not in text  # verify.json without the arm's name
    assert text.rstrip().endswith("Return the JSON and nothing else.")


def test_three_arms_make_a_three_engineer_prompt() -> None:
    slots = [Slot(label, "", {}) for label in "ABC"]
    text = prompt("", "", "", slots)
    assert "Three engineers" in text and '"c_score": <int 0-100>' in text and '"C": bool' in text


def test_sanitize_keeps_other_files_whole() -> None:
    assert sanitize_diff(DIFF) == "diff --git a/bin/cli.js b/bin/cli.js\n+const loud = true;\n"


def test_a_reply_is_mapped_from_labels_to_arms() -> None:
    parsed = parse_reply("banner\n" + reply(), LABELS, {"bare": 1.0, "variant": 1.0})

    output = parsed.output
    assert output.winner == "variant"
    assert (output.scores["bare"].total, output.scores["variant"].total) == (70.0, 90.0)
    assert output.scores["bare"].findings == ("silent catch in cli.js",)
    assert output.scores["variant"].axes == {"spec": 25.0, "constraint": 25.0, "scope": 20.0, "quality": 20.0}
    assert output.rationale == "B is complete."
    assert parsed.document["scores_by_arm"] == {"bare": 70, "variant": 90}
    assert parsed.document["_blind_mapping"] == {"A": "bare", "B": "variant"}


def test_the_last_judgment_in_the_output_counts() -> None:
    text = reply(a_score=10) + "\nthinking again...\n" + reply(a_score=60)
    assert parse_reply(text, LABELS, {}).output.scores["bare"].total == 60.0


def test_a_score_is_capped_by_the_arms_verification() -> None:
    # bare passed 2 of 3 commands: its score is capped at floor(100 * 2/3) = 66 and spec at floor(25 * 2/3) = 16
    parsed = parse_reply(reply(a_score=70), LABELS, {"bare": 2 / 3, "variant": 1.0})

    bare = parsed.output.scores["bare"]
    assert (bare.total, bare.axes["spec"]) == (66.0, 16.0)
    caps = parsed.document["_verify_score_caps"]
    assert isinstance(caps, list) and caps[0]["score_capped"] is True and caps[0]["raw_score"] == 70


def test_an_axis_outside_its_range_is_clamped_and_counted() -> None:
    breakdown = {"spec": 30, "constraint": -1, "scope": 20, "quality": 20.0, "notes": ""}
    parsed = parse_reply(reply(b_breakdown=breakdown), LABELS, {})

    variant = parsed.output.scores["variant"]
    assert variant.axes == {"spec": 25.0, "constraint": 0.0, "scope": 20.0, "quality": 20.0}
    assert variant.axes_invalid == 3  # 30, -1 and 20.0 (a float is not a whole axis score)
    assert parsed.output.scores["bare"].axes_invalid == 0


def test_a_disqualifier_and_its_reason_belong_to_the_arm() -> None:
    flags = {"A": True, "A_reason": "fabricated verification", "B": False, "B_reason": ""}
    scores = parse_reply(reply(disqualifiers=flags), LABELS, {}).output.scores
    assert (scores["bare"].disqualifier, scores["bare"].disqualifier_reason) == (True, "fabricated verification")
    assert not scores["variant"].disqualifier


def test_an_unknown_winner_is_a_tie() -> None:
    assert parse_reply(reply(winner="Z"), LABELS, {}).output.winner == TIE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no json here", 'no JSON object with "a_score" and "b_score"'),
        (reply(a_score=101), "invalid judge score value(s): a_score"),
        (reply(b_score=True), "invalid judge score value(s): b_score"),
        (reply(disqualifiers={"A": "yes"}), "invalid judge disqualifier value(s): A"),
    ],
)
def test_a_malformed_reply_is_an_error(text: str, message: str) -> None:
    with pytest.raises(JudgeOutputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_reply(text, LABELS, {})
