"""A deterministic judge for the example suite: it scores from verification results and findings.

It speaks assay's judge protocol: one JSON document on stdin (the case, the
rubric, the case's properties, candidates labelled A and B), one JSON
document on stdout (scores per axis, total, disqualifier, findings, winner).
A real judge is an LLM CLI reading the same document; see README "A/B suites".
"""

import fnmatch
import json
import sys

AXIS = 25


def score(candidate, properties):
    verify = candidate["verify"]
    passed = sum(1 for v in verify if v["passed"])
    spec = round(AXIS * passed / len(verify)) if verify else 0
    disqualifiers = [f for f in candidate["findings"] if f.startswith("disqualifier")]
    critical = [f for f in candidate["findings"] if f.startswith("critical")]
    constraint = max(0, AXIS - 4 * len(disqualifiers))
    allowed = properties.get("scope", "*").split()
    outside = [f for f in candidate["changed_files"] if not any(fnmatch.fnmatch(f, glob) for glob in allowed)]
    scope = max(0, AXIS - 5 * len(outside))
    tested = any(f.startswith("tests/") for f in candidate["changed_files"])
    quality = max(0, AXIS - 5 * len(critical) - (0 if tested or properties.get("tests") == "no" else 8))
    findings = disqualifiers + critical + [f"changed {f} outside the task's scope" for f in outside]
    if not tested and properties.get("tests") != "no":
        findings.append("no test added")
    axes = {"spec": spec, "constraint": constraint, "scope": scope, "quality": quality}
    return {"axes": axes, "total": sum(axes.values()), "disqualifier": bool(disqualifiers), "findings": findings}


def main():
    document = json.load(sys.stdin)
    scores = {label: score(c, document["properties"]) for label, c in document["candidates"].items()}
    eligible = {label: s["total"] for label, s in scores.items() if not s["disqualifier"]}
    best = max(eligible.values(), default=None)
    leaders = [label for label, total in eligible.items() if total == best]
    winner = leaders[0] if len(leaders) == 1 else "tie"
    rationale = "; ".join(
        f"{label}: {s['total']} points" + (f" ({', '.join(s['findings'])})" if s["findings"] else "")
        for label, s in sorted(scores.items())
    )
    answer = {"scores": scores, "winner": winner, "model": "examples/ab/judge.py (deterministic)"}
    json.dump({**answer, "rationale": rationale}, sys.stdout)


if __name__ == "__main__":
    main()
