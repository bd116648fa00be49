"""Which cases broke a ship gate that failed, so a report can name them beside the gate.

A gate is any CEL over ``rows`` and ``suite`` (``analysis.shipgate``), so the
cases are found from the gate's own text, without guessing at its meaning:

* every macro over the cases, ``R.all(r, P)``, ``R.exists_one(r, P)`` or a
  count ``R.filter(r, P).size() >= N`` (N of 2 or more), with ``R`` starting
  at ``rows`` (``rows`` itself, or ``rows.filter(...)``), is evaluated as
  ``R.filter(r, !(P)).map(r, r.name)``: the cases of ``R`` for which ``P``
  does not hold are those that broke it (did not meet ``all``, did not count).
  Any other ``filter`` selects the cases a gate is about (``e2e``
  fixtures, cases that are no known limit) and names none;
* ``exists`` names no case from its predicate (every case but one fails it),
  so a gate that names a case in a string literal (``r.name == "F9-e2e"``)
  names that case.

A gate over ``suite`` figures alone names no case. A predicate that cannot
be evaluated on its own names nothing rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fixtures_core.analysis.shipgate import GateResult, SuiteOutcome, gate_context
from fixtures_core.cel import code_positions, compile_expression, conjuncts, operands
from fixtures_core.errors import CelError
from fixtures_core.parsing.suite import GATE_VARIABLES

_MACRO = re.compile(r"\.(all|filter|exists_one)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_STRING = re.compile(r"""(["'])((?:\\.|(?!\1).)*)\1""")
_RECEIVER = re.compile(r"[A-Za-z0-9_.]")
# ``.size() >= N`` (N >= 2) or ``.size() > N`` (N >= 1) right after a filter: it counts the cases that meet it.
_COUNTED = re.compile(r"\s*\.size\(\)\s*(?:>=\s*(?:[2-9]|\d{2,})|>\s*(?:[1-9]|\d{2,}))")


def breaking_cases(gate: GateResult, outcome: SuiteOutcome) -> tuple[str, ...]:
    """The cases that broke a failed gate, in case order ((): it passed, or names no case)."""
    if gate.status != "fail":
        return ()
    names: dict[str, None] = {}
    context = gate_context(outcome)
    for receiver, variable, predicate in _macros(gate.cel):
        names.update(dict.fromkeys(_unmet(receiver, variable, predicate, context)))
    cases = [case.name for case in outcome.cases]
    named = [text for _quote, text in _STRING.findall(gate.cel) if text in cases]
    names.update(dict.fromkeys(named))
    return tuple(case for case in cases if case in names)


def gate_seen(gate: GateResult, outcome: SuiteOutcome) -> str | None:
    """What the comparisons of a failed gate saw (``suite.margin - suite.baseline_margin was -5``): each
    ``||`` alternative is false when the gate is, and in each, the first false ``&&`` clause that is a
    comparison says what its sides were. None when no comparison says anything."""
    if gate.status != "fail":
        return None
    context = gate_context(outcome)
    told: dict[str, None] = {}
    for alternative in _disjuncts(gate.cel):
        for clause in conjuncts(alternative):
            try:
                program = compile_expression(clause, GATE_VARIABLES)
            except CelError:
                break
            if program.evaluate(context).value is not False:
                continue
            seen = program.seen(context, longest=_SIDE_CHARS)
            if seen:
                told[seen] = None
            break
    return "; ".join(told) or None


_SIDE_CHARS = 60  # a longer side (a whole filter) says less than the gate's name


def _disjuncts(cel: str) -> list[str]:
    """The top-level ``||`` operands of ``cel`` (one item when there is none, or a ``?:`` at the top)."""
    kept = [part for part in operands(cel, "||", looser=("?",)) or () if part]
    return kept or [cel.strip()]


def _macros(cel: str) -> list[tuple[str, str, str]]:
    """(receiver, variable, predicate) of each macro call over the cases in ``cel``."""
    found = []
    for match in _MACRO.finditer(cel):
        if _inside_string(cel, match.start()):
            continue
        receiver = _receiver(cel, match.start())
        if not re.match(r"rows\b", receiver):
            continue
        close = _closing(cel, cel.index("(", match.start()))
        if close is None:
            continue
        if match.group(1) == "filter" and not _COUNTED.match(cel, close + 1):
            continue  # a selection of the cases the gate is about
        predicate = cel[match.end() : close].strip()
        found.append((receiver, match.group(2), predicate))
    return found


def _receiver(cel: str, dot: int) -> str:
    """The expression a ``.macro(`` call at ``dot`` applies to: names, dots and bracketed calls back to
    where it starts."""
    index = dot
    while index > 0:
        char = cel[index - 1]
        if char in ")]":
            opening = _opening(cel, index - 1)
            if opening is None:
                break
            index = opening
        elif _RECEIVER.match(char):
            index -= 1
        else:
            break
    return cel[index:dot]


def _opening(cel: str, close: int) -> int | None:
    pairs = {")": "(", "]": "["}
    depth = 0
    for index in range(close, -1, -1):
        char = cel[index]
        if char in ")]":
            depth += 1
        elif char in "([":
            depth -= 1
            if depth == 0:
                return index if pairs[cel[close]] == char else None
    return None


def _closing(cel: str, opening: int) -> int | None:
    """The index of the bracket that closes the one at ``opening`` (brackets in strings do not count)."""
    return next((index for index, depth in code_positions(cel, opening) if depth == 0 and cel[index] in ")]}"), None)


def _inside_string(cel: str, position: int) -> bool:
    """True when ``position`` is inside a string literal of ``cel``."""
    return next((index != position for index, _ in code_positions(cel) if index >= position), True)


def _unmet(receiver: str, variable: str, predicate: str, context: dict[str, object]) -> Sequence[str]:
    expression = f"{receiver}.filter({variable}, !({predicate})).map({variable}, {variable}.name)"
    try:
        program = compile_expression(expression, GATE_VARIABLES)
    except CelError:
        return ()
    result = program.evaluate(context)
    if result.error is not None or not isinstance(result.value, list):
        return ()
    return [str(name) for name in result.value]
