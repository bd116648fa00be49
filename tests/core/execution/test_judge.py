"""The judge protocol (``fixtures_core.execution.judge``): blind labels, parsing, mapping back, swap.

Judges are small real Python scripts reading stdin and printing JSON.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.judge import (
    JudgeCall,
    JudgeSettings,
    judge_sample,
    labels_for,
    parse_output,
    provenance_of,
)
from fixtures_core.judgment import TIE, JudgeOutputError
from fixtures_core.results import Check, SampleResult
from fixtures_core.suite import JudgeSpec

AXES = ("spec", "quality")

# Prefers label A: 90 points for A, 10 for every other label.
ALWAYS_A = """
import json, sys
doc = json.load(sys.stdin)
print(json.dumps({"scores": {label: {"total": 90 if label == "A" else 10, "axes": {"spec": 1, "quality": 2}}
                             for label in doc["candidates"]}, "winner": "A", "model": "always-a v1"}))
"""
# Prefers the candidate whose stdout says "good", whatever its label.
BY_CONTENT = """
import json, sys
doc = json.load(sys.stdin)
scores = {label: {"total": 80 if "good" in c["stdout"] else 40, "axes": {"spec": 1, "quality": 1},
                  "findings": [] if "good" in c["stdout"] else ["weak"]}
          for label, c in doc["candidates"].items()}
winner = next(label for label, c in doc["candidates"].items() if "good" in c["stdout"])
print(json.dumps({"scores": scores, "winner": winner}))
"""
DUMP_INPUT = """
import json, sys, pathlib
doc = json.load(sys.stdin)
pathlib.Path(sys.argv[1]).write_text(json.dumps(doc))
print(json.dumps({"scores": {l: {"total": 1, "axes": {"spec": 0, "quality": 0}} for l in doc["candidates"]},
                  "winner": "tie"}))
"""


def judge_call(tmp_path: Path, script: str, *extra: str, swap: bool = False, axes: tuple[str, ...] = AXES) -> JudgeCall:
    path = tmp_path / "judge.py"
    path.write_text(script)
    spec = JudgeSpec(command=(sys.executable, str(path), *extra), line=1, axes=axes, swap=swap, timeout_s=30)
    return JudgeCall(spec, spec.command, "F1", {"task": "add a flag"}, str(tmp_path), "RUBRIC TEXT")


def settings(tmp_path: Path, seed: int = 7) -> JudgeSettings:
    return JudgeSettings(run_dir=tmp_path / "run", evidence_dir=tmp_path / "run", seed=seed, run_id="r")


def sample(stdout: str) -> SampleResult:
    return SampleResult(
        index=0, status="PASS", duration_ms=12.5, exit_code=0, stdout=stdout, stderr="", command=Check("pass")
    )


ARMS = {"variant": sample("good work"), "bare": sample("half done")}


def test_labels_over_twenty_cases_take_both_orders_and_the_seed_reproduces_them() -> None:
    cases = [f"case-{i}" for i in range(20)]
    first = [labels_for(1234, case, 0, ["variant", "bare"], blind=True) for case in cases]
    again = [labels_for(1234, case, 0, ["variant", "bare"], blind=True) for case in cases]
    other = [labels_for(99, case, 0, ["variant", "bare"], blind=True) for case in cases]

    assert first == again
    assert {labels["A"] for labels in first} == {"variant", "bare"}  # both labellings occur
    assert first != other
    for labels in first:
        assert sorted(labels.values()) == ["bare", "variant"] and sorted(labels) == ["A", "B"]


def test_labels_follow_declaration_order_when_not_blind() -> None:
    assert labels_for(1, "x", 0, ["variant", "bare", "l1"], blind=False) == {"A": "variant", "B": "bare", "C": "l1"}


def test_a_judge_that_always_prefers_a_scores_whichever_arm_was_labelled_a(
    tmp_path: Path, containment: Containment
) -> None:
    call = judge_call(tmp_path, ALWAYS_A)
    for seed in range(6):
        judgment = judge_sample(call, 0, ARMS, settings(tmp_path, seed), containment)
        a_arm = judgment.labels["A"]
        b_arm = judgment.labels["B"]
        assert judgment.error is None
        assert judgment.winner == a_arm
        assert (judgment.scores[a_arm].total, judgment.scores[b_arm].total) == (90.0, 10.0)
        assert judgment.provenance == "always-a v1"


def test_the_judge_reads_the_protocol_on_stdin(tmp_path: Path, containment: Containment) -> None:
    dumped = tmp_path / "input.json"
    call = judge_call(tmp_path, DUMP_INPUT, str(dumped))

    judgment = judge_sample(call, 0, ARMS, settings(tmp_path), containment)

    document = json.loads(dumped.read_text())
    assert judgment.winner == TIE
    assert set(document) == {"row", "rubric", "properties", "candidates"}
    assert (document["row"], document["rubric"], document["properties"]) == (
        "F1",
        "RUBRIC TEXT",
        {"task": "add a flag"},
    )
    candidate = document["candidates"]["A"]
    assert set(candidate) == {
        "diff", "changed_files", "verify", "stdout", "stderr", "duration_ms", "findings", "disqualified",
    }  # fmt: skip
    assert {document["candidates"][label]["stdout"] for label in "AB"} == {"good work", "half done"}
    folder = tmp_path / "run" / judgment.evidence
    assert json.loads((folder / "input.json").read_text()) == document
    assert json.loads((folder / "judgment.json").read_text())["seed"] == 7


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ("I think A is better.", "not JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"winner": "A"}', 'needs "scores"'),
        ('{"scores": {"A": {"total": 1, "axes": {"spec": 1, "quality": 1}}}, "winner": "A"}', "scores are for ['A']"),
        ('{"scores": {"A": {"total": "ninety", "axes": {}}, "B": {"total": 1}}, "winner": "A"}', "scores.A.total"),
        (
            '{"scores": {"A": {"total": 1, "axes": {"spec": 1}}, "B": {"total": 1, "axes": {"spec": 1, "quality": 1}}},'
            ' "winner": "A"}',
            "scores.A.axes lacks quality",
        ),  # fmt: skip
        (
            '{"scores": {"A": {"total": 1, "axes": {"spec": 1, "quality": 1}}, "B": {"total": 1, "axes": {"spec": 1,'
            ' "quality": 1}}}, "winner": "C"}',
            '"winner" must be one of',
        ),  # fmt: skip
        (  # 1.7e308 - -1.7e308 is no double: a margin would be infinite
            '{"scores": {"A": {"total": 1.7e308, "axes": {"spec": 1, "quality": 1}}, "B": {"total": 1, "axes":'
            ' {"spec": 1, "quality": -1e16}}}, "winner": "A"}',
            "scores.A.total must be within ±1e+15, got 1.7e+308",
        ),  # fmt: skip
        (
            '{"scores": {"A": {"total": 1, "axes": {"spec": 1, "quality": 1}}, "B": {"total": 1, "axes":'
            ' {"spec": 1, "quality": -1e16}}}, "winner": "A"}',
            "scores.B.axes.quality must be within ±1e+15, got -1e+16",
        ),  # fmt: skip
    ],
)
def test_output_of_another_shape_is_rejected_with_the_reason(output: str, reason: str) -> None:
    with pytest.raises(JudgeOutputError, match=None) as raised:
        parse_output(output, {"A": "variant", "B": "bare"}, AXES)
    assert reason in str(raised.value)


def test_one_fenced_json_block_is_accepted() -> None:
    body = {"scores": {"A": {"total": 3, "axes": {"spec": 1, "quality": 2}}, "B": {"total": 5, "axes": {"spec": 2,
            "quality": 3}, "disqualifier": True, "findings": ["silent catch"]}}, "winner": "B"}  # fmt: skip
    text = "Here is my verdict:\n```json\n" + json.dumps(body) + "\n```\n"

    answer = parse_output(text, {"A": "variant", "B": "bare"}, AXES)
    scores = answer.scores

    assert answer.winner == "bare" and answer.provenance is None and answer.rationale is None
    assert scores["bare"].disqualifier and scores["bare"].findings == ("silent catch",)
    assert scores["variant"].axes == {"spec": 1.0, "quality": 2.0}


def test_a_rationale_is_kept_as_text_and_must_be_text() -> None:
    body = {"scores": {"A": {"total": 3}, "B": {"total": 5}}, "winner": "B", "rationale": "B added the test."}
    answer = parse_output(json.dumps(body), {"A": "variant", "B": "bare"}, ())
    assert (answer.winner, answer.rationale) == ("bare", "B added the test.")
    with pytest.raises(JudgeOutputError, match='"rationale" must be text, got list'):
        parse_output(json.dumps({**body, "rationale": ["x"]}), {"A": "variant", "B": "bare"}, ())


def test_garbage_output_is_an_error_with_the_output_kept(tmp_path: Path, containment: Containment) -> None:
    call = judge_call(tmp_path, "print('The first one looks fine to me.')")

    judgment = judge_sample(call, 0, ARMS, settings(tmp_path), containment)

    assert judgment.winner is None and judgment.scores == {}
    assert judgment.error is not None
    assert judgment.error.startswith("judge output is not JSON of the judge protocol's shape: not JSON")
    assert judgment.error.endswith("(output kept in judge/F1/0/output.txt)")
    assert judgment.output == "The first one looks fine to me."
    assert (tmp_path / "run" / "judge" / "F1" / "0" / "output.txt").read_text() == "The first one looks fine to me.\n"


def test_a_failing_judge_process_is_an_error_naming_its_exit_code(tmp_path: Path, containment: Containment) -> None:
    call = judge_call(tmp_path, "import sys; print('quota exceeded', file=sys.stderr); sys.exit(3)")
    judgment = judge_sample(call, 0, ARMS, settings(tmp_path), containment)
    assert judgment.error is not None and judgment.error.startswith("judge exited with code 3: quota exceeded")


def test_swap_records_a_disagreement_as_a_tie(tmp_path: Path, containment: Containment) -> None:
    call = judge_call(tmp_path, ALWAYS_A, swap=True)

    judgment = judge_sample(call, 0, ARMS, settings(tmp_path), containment)

    # A wins each order, and A is a different arm in each: the judge disagrees with itself
    assert judgment.winner == TIE and judgment.disagreement
    assert judgment.swapped_winner == judgment.labels["B"]
    assert judgment.scores["variant"].total == judgment.scores["bare"].total == 50.0  # (90 + 10) / 2
    folder = tmp_path / "run" / judgment.evidence
    assert (folder / "input.json").exists() and (folder / "input-swapped.json").exists()


def test_swap_keeps_an_agreed_winner(tmp_path: Path, containment: Containment) -> None:
    call = judge_call(tmp_path, BY_CONTENT, swap=True)

    judgment = judge_sample(call, 0, ARMS, settings(tmp_path), containment)

    assert (judgment.winner, judgment.swapped_winner, judgment.disagreement) == ("variant", "variant", False)
    assert judgment.scores["variant"].total == 80.0 and judgment.scores["bare"].findings == ("weak",)


def test_the_provenance_command_is_recorded(tmp_path: Path, containment: Containment) -> None:
    spec = JudgeSpec(command=("true",), line=1, provenance="echo judge-model 4.2; echo more")
    assert provenance_of(spec, str(tmp_path), containment) == "judge-model 4.2\nmore"
    failing = JudgeSpec(command=("true",), line=1, provenance="echo nope >&2; exit 3")
    assert provenance_of(failing, str(tmp_path), containment) == "provenance command failed (exit code 3): nope"


def test_cases_whose_names_differ_only_in_unsafe_characters_keep_their_own_judge_files(tmp_path: Path) -> None:
    call = judge_call(tmp_path, ALWAYS_A)
    cases = ["a b", "a_b", "a/b"]

    with Containment() as containment:
        judgments = [judge_sample(replace(call, case=case), 0, ARMS, settings(tmp_path), containment) for case in cases]

    assert len({j.evidence for j in judgments}) == 3, [j.evidence for j in judgments]
    for case, judgment in zip(cases, judgments, strict=True):
        assert judgment.error is None, judgment.error
        sent = json.loads((tmp_path / "run" / judgment.evidence / "input.json").read_text())
        assert sent["row"] == case


def test_judge_files_are_replaced_whole_never_rewritten_in_place(tmp_path: Path) -> None:
    call = judge_call(tmp_path, ALWAYS_A, swap=True)
    with Containment() as containment:
        first = judge_sample(call, 0, ARMS, settings(tmp_path), containment)
        folder = tmp_path / "run" / first.evidence
        before = {path.name: path.stat().st_ino for path in folder.iterdir()}
        judge_sample(call, 0, ARMS, settings(tmp_path), containment)

    after = {path.name: path.stat().st_ino for path in folder.iterdir()}
    assert set(after) == set(before) >= {"input.json", "output.txt", "input-swapped.json", "judgment.json"}
    # A new file moved into place has a new inode; a file truncated and rewritten keeps its own.
    assert [name for name in after if after[name] == before[name]] == []
