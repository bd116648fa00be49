"""A deterministic judge for the example devlyn benchmark, speaking devlyn's judge protocol.

It reads the prompt devlyn's judge.sh writes (the rubric, the spec, and per blind label the diff
and verify.json) on stdin, scores each implementation on RUBRIC.md's four axes, and prints the
JSON judge.sh expects. A real judge is an LLM CLI reading the same prompt (`codex exec -`).
"""

import json
import re
import sys

AXIS = 25
SECTION = re.compile(
    r"=== IMPLEMENTATION ([ABC]) ===\nDiff:\n```diff\n(.*?)\n```\nVerification results:\n```json\n(.*?)\n```", re.S
)
IN_SCOPE = re.compile(r"^(cli\.py|greet\.py|tests/.*)$")


def score(diff, verify):
    commands = verify["commands"]
    passed = sum(1 for c in commands if c["pass"])
    hits = [h for h in verify["forbidden_pattern_hits"] if h["severity"] == "disqualifier"]
    changed = re.findall(r"^diff --git a/(\S+) ", diff, re.M)
    outside = [path for path in changed if not IN_SCOPE.match(path)]
    tested = any(path.startswith("tests/") for path in changed)
    axes = {
        "spec": round(AXIS * passed / len(commands)) if commands else AXIS,
        "constraint": max(0, AXIS - 4 * len(hits)),
        "scope": max(0, AXIS - 5 * len(outside)),
        "quality": AXIS if tested or "greet.py" in changed else AXIS - 8,
    }
    findings = [f"{h['description']} (forbidden pattern)" for h in hits]
    findings += [f"changed {path} outside the task's scope" for path in outside]
    return axes, findings, bool(hits)


def main():
    prompt = sys.stdin.read()
    reply = {"critical_findings": {}, "disqualifiers": {}}
    totals = {}
    for label, diff, verify in SECTION.findall(prompt):
        axes, findings, disqualified = score(diff, json.loads(verify))
        key = label.lower()
        totals[label] = sum(axes.values())
        reply[f"{key}_score"] = totals[label]
        reply[f"{key}_breakdown"] = {**axes, "notes": "; ".join(findings) or "meets the rubric"}
        reply["critical_findings"][label] = findings
        reply["disqualifiers"][label] = disqualified
        reply["disqualifiers"][f"{label}_reason"] = findings[0] if disqualified else ""
    standing = {label: total for label, total in totals.items() if not reply["disqualifiers"][label]}
    best = max(standing.values(), default=None)
    leaders = [label for label, total in standing.items() if total == best]
    reply["winner"] = leaders[0] if len(leaders) == 1 else "tie"
    reply["overall_reasoning"] = "; ".join(f"{label}: {total} points" for label, total in sorted(totals.items()))
    json.dump(reply, sys.stdout)


if __name__ == "__main__":
    main()
