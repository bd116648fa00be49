"""devlyn's ship gates (seed 04's RUBRIC.md, as devlyn's ``ship-gate.py`` applies them) as CEL gates.

The arms are the suite's: ``first`` and ``second`` are ``compare`` (variant
and bare), ``solo`` the third arm when there is one (devlyn's L1,
``solo_claude``). Numbered as seed 04 numbers them:

1. no disqualifier in the first arm;
2. every ``e2e`` fixture (devlyn's F9) has a margin of +5 or more;
3. at least 7 gated fixtures (known limits apart) have a margin of +5 or
   more, headroom-aware: a fixture where the second arm is within 5 points of
   100 and the L1 arm scored 95 or more, clean, is left out of the count;
4. no fixture's first-arm score fell more than 5 points below the shipped run's;
5. (soft) the suite margin dropped no more than 3 points against the shipped run's;
6. (soft) no fixture that had a margin above +5 in the shipped run has one of 0 or less;
7. (soft) the first arm's critical-finding catch rate did not fall against the shipped run's.

devlyn's harness adds, and so do these: the judge's axis scores within
0-25; with an L1 arm, no L1 disqualifier, every e2e fixture with an L1
margin of +5 or more, 7 headroom-available fixtures with an L1 margin of +5,
and (soft) an L1 suite margin of +5 or more.
"""

from __future__ import annotations

from fixtures_core.suite import GateSpec

MARGIN_FLOOR = 5.0
COVERAGE = 7
REGRESSION_FLOOR = 5.0
SUITE_DROP = 3.0


def devlyn_gates(
    first: str, second: str, solo: str | None, line: int, accept_missing: bool = False
) -> tuple[GateSpec, ...]:
    """The default gates of a suite read from devlyn's fixture folders; ``accept_missing`` (a suite in
    bootstrap, devlyn's ``--accept-missing``) drops the coverage floors and lets the e2e fixture be missing."""
    a, b = _arm(first), _arm(second)
    e2e = 'rows.filter(r, has(r.properties.category) && r.properties.category == "e2e")'
    gated = "rows.filter(r, !r.known_limit)"
    gates = [
        _hard(f"no {first} disqualifier", f'rows.all(r, !("{first}" in r.arms) || !{a}.disqualified)', line),
        _hard(
            f"every e2e fixture (F9) has {first} margin >= +5",
            ("" if accept_missing else f"{e2e}.size() > 0 && ")
            + f"{e2e}.all(r, has(r.margin) && r.margin >= {MARGIN_FLOOR})",
            line,
        ),
        _hard(
            f"at least {COVERAGE} gated fixtures have {first} margin >= +5 (headroom-aware)",
            f"{gated}.filter(r, has(r.margin)).size() == 0 || {gated}.filter(r, has(r.margin) && "
            f"r.margin >= {MARGIN_FLOOR} && !({_headroom(b, _arm(solo) if solo else a)})).size() >= {COVERAGE}",
            line,
        ),
        _hard(
            f"no fixture's {first} score fell more than 5 points below shipped",
            f"rows.all(r, r.known_limit || !has({a}.score) || !has({a}.baseline_score) || "
            f"{a}.score - {a}.baseline_score >= -{REGRESSION_FLOOR})",
            line,
        ),
        _hard(
            "the judge's axis scores are within 0-25", "rows.all(r, r.arms.all(k, r.arms[k].axes_invalid == 0))", line
        ),
    ]
    if solo is not None:
        s = _arm(solo)
        solo_margin = f"has({s}.score) && has({b}.score) && {s}.score - {b}.score >= {MARGIN_FLOOR}"
        gates += [
            _hard(f"no {solo} disqualifier", f'rows.all(r, !("{solo}" in r.arms) || !{s}.disqualified)', line),
            _hard(
                f"every e2e fixture (F9) has {solo} margin over {second} >= +5", f"{e2e}.all(r, {solo_margin})", line
            ),
            _hard(
                f"at least {COVERAGE} headroom-available fixtures have {solo} margin over {second} >= +5",
                f"{gated}.filter(r, has({s}.score) && has({b}.score)).size() == 0 || "
                f"{gated}.filter(r, {solo_margin} && !({_headroom(b, s)})).size() >= {COVERAGE}",
                line,
            ),
        ]
    if accept_missing:
        gates = [g for g in gates if not g.name.startswith(f"at least {COVERAGE} ")]
    gates += [
        _soft(
            "the suite margin dropped no more than 3 points vs shipped",
            "!has(suite.baseline_margin) || !has(suite.margin) || "
            f"suite.margin - suite.baseline_margin >= -{SUITE_DROP}",
            line,
        ),
        _soft(
            "no fixture lost its margin (above +5 in shipped, 0 or less now)",
            "rows.all(r, !has(r.baseline_margin) || r.baseline_margin <= 5.0 || (has(r.margin) && r.margin > 0.0))",
            line,
        ),
        _soft(
            f"the critical-finding catch rate of {first} did not fall vs shipped",
            f'!has(suite.baseline_catch_rate) || !("{first}" in suite.baseline_catch_rate) || '
            f'!("{first}" in suite.catch_rate) || '
            f'suite.catch_rate["{first}"] >= suite.baseline_catch_rate["{first}"]',
            line,
        ),
    ]
    if solo is not None:
        gates.append(
            _soft(
                f"the {solo} suite margin over {second} is +5 or more",
                f'!("{solo}" in suite.margins) || suite.margins["{solo}"] >= {MARGIN_FLOOR}',
                line,
            )
        )
    return tuple(gates)


def _arm(name: str) -> str:
    return f'r.arms["{name}"]'


def _headroom(second: str, solo: str) -> str:
    """The case leaves no headroom: the second arm within 5 points of 100, the L1 arm at 95 or more
    and clean (no disqualifier, critical finding or timeout)."""
    return (
        f"has({second}.score) && 100.0 - {second}.score < 5.0 && has({solo}.score) && {solo}.score >= 95.0 && "
        f"!{solo}.disqualified && {solo}.critical.size() == 0 && !{solo}.timed_out"
    )


def _hard(name: str, cel: str, line: int) -> GateSpec:
    return GateSpec(name=name, cel=cel, severity="hard", line=line)


def _soft(name: str, cel: str, line: int) -> GateSpec:
    return GateSpec(name=name, cel=cel, severity="soft", line=line)
