"""A ship gate's answer, decided here and nowhere else: pass, fail, error, or not evaluated, with
what decided it.

A gate is a CEL expression over ``rows`` (the cases of an A/B suite, as
``analysis.shipgate.gate_context`` gives them) and ``suite`` (its figures).
It answers only on data:

* a dry run scores nothing: every gate is **not evaluated**;
* a saved run judged on another rubric, judge prompt or fixture set is not
  compared with this run (seed 04: the rubric is the comparability anchor):
  a gate that reads its figures (``baseline_margin``, ``baseline_score``,
  ``baseline_catch_rate``) is **not evaluated**, saying why;
* a gate that names (in a string literal) a case this run did not select is
  **not evaluated** ("n/a"): it would be judged on a case that is not there;
* on a subset (a run that left out cases of its suite: fixture ids, ``--filter``)
  a gate about cases that did not run is **not evaluated** ("n/a"), never
  failed: one that counts cases (``R.filter(r, P).size() >= N``: a coverage
  floor over the whole suite), one that selects a kind of case
  (``rows.filter(r, P)``) that a left-out case is of (``CaseFacts``: the
  e2e fixture that did not run), and one that compares the suite's figures
  with the saved run's (``suite.baseline_*``: figures over other cases). A
  gate over every case (``rows.all``) reads the cases that ran;
* a gate reads the cases it names, else every case of the suite; when one of
  them has no data (it erred, or its judgment failed) the gate is **not
  evaluated**, naming them: its answer would be a guess. Skipped cases are
  left out (and named); a gate with no case left is not evaluated;
* otherwise its CEL decides: true **pass**, false **fail**, an evaluation
  error or a value that is no bool **error** (it fails closed).

A failed gate names every case that broke it, with what the gate saw of each
(``breaking``); a gate over suite figures says what its comparisons saw
(``seen``). A gate that reads a case whose arm was disqualified says so
(``notes``). The cases a gate names are found from its own text:

* every macro over the cases, ``R.all(r, P)``, ``R.exists_one(r, P)`` or a
  count ``R.filter(r, P).size() >= N`` (N of 2 or more), with ``R`` starting
  at ``rows``, is evaluated as ``R.filter(r, !(P))``: the cases of ``R`` for
  which ``P`` does not hold broke it. Any other ``filter`` selects the cases a
  gate is about and names none;
* ``exists`` names no case from its predicate, so a gate that names a case in
  a string literal (``r.name == "F9-e2e"``) names that case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fixtures_core.cel import code_positions, compile_expression, conjuncts, operands
from fixtures_core.errors import CelError
from fixtures_core.parsing.suite import GATE_VARIABLES
from fixtures_core.results import Outcome, Status
from fixtures_core.suite import SHIPPED_FIGURE, GateSeverity, GateSpec

DRY_RUN = "dry run: nothing was scored"
_SIDE_CHARS = 60  # a longer side (a whole filter) says less than the gate's name
_MACRO = re.compile(r"\.(all|filter|exists_one)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_STRING = re.compile(r"""(["'])((?:\\.|(?!\1).)*)\1""")
_RECEIVER = re.compile(r"[A-Za-z0-9_.]")
# ``.size() >= N`` (N >= 2) or ``.size() > N`` (N >= 1) right after a filter: it counts the cases that meet it.
_COUNTED = re.compile(r"\s*\.size\(\)\s*(?:>=\s*(?:[2-9]|\d{2,})|>\s*(?:[1-9]|\d{2,}))")
_READS_SCORES = re.compile(r"\b(margin|margins|score|average)\b")
_SUITE_FIGURE_OF_SHIPPED = re.compile(r"\bsuite\.baseline_\w+")


@dataclass(frozen=True)
class Breach:
    """A case that broke a gate, and what the gate saw of it (``r.margin was -12``; None: nothing to say)."""

    case: str
    seen: str | None = None

    def __str__(self) -> str:
        return f"{self.case} ({self.seen})" if self.seen else self.case


@dataclass(frozen=True)
class GateResult:
    """A ship gate evaluated on a run.

    status:   pass, fail, error, or not_evaluated.
    error:    why it could not be evaluated, or was not (None when it passed or failed).
    breaking: a failed gate: every case that broke it, with what the gate saw of each.
    seen:     a failed gate: what its comparisons saw of the suite's figures.
    notes:    what a reader must know of its answer: the cases it read whose arm was disqualified,
              the skipped cases it left out.
    """

    name: str
    cel: str
    severity: GateSeverity
    status: Outcome
    error: str | None = None
    breaking: tuple[Breach, ...] = ()
    seen: str | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CaseData:
    """What a gate must know of a case beyond its CEL value: whether it has data, and its disqualified arms."""

    name: str
    status: Status
    error: str | None = None
    disqualified: Mapping[str, str] | None = None  # arm -> what disqualified it


@dataclass(frozen=True)
class GateInputs:
    """What a suite's gates read: the CEL context (``rows``: the cases with data), every case of the
    run's suite, the cases of the suite this run did not select (and what a gate reads of them before they
    run: name, properties, known_limit), and whether it was a dry run."""

    context: Mapping[str, object]
    cases: Sequence[CaseData]
    unrun: Sequence[str] = ()
    dry_run: bool = False
    unrun_rows: Sequence[Mapping[str, object]] = ()  # the left-out cases as a gate's CEL sees them before they run
    incomparable: str | None = None  # why the saved run is not comparable with this one (``RUBRIC.md changed``)


def evaluate(gate: GateSpec, inputs: GateInputs) -> GateResult:
    """The gate's answer (module docstring)."""
    if inputs.dry_run:
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", DRY_RUN)
    if inputs.incomparable is not None and SHIPPED_FIGURE.search(gate.cel):
        reason = f"not comparable ({inputs.incomparable}): the saved run's figures are not compared"
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", reason)
    named = _named(gate.cel, [*(c.name for c in inputs.cases), *inputs.unrun])
    unrun = [name for name in named if name in inputs.unrun]
    if unrun:
        cases = ", ".join(f"'{case}'" for case in unrun)
        reason = f"n/a: it names {cases}, which this run did not run"
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", reason)
    about = _about_left_out(gate.cel, inputs) if inputs.unrun else None
    if about is not None:
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", about)
    read = [case for case in inputs.cases if not named or case.name in named]
    missing = [case for case in read if case.status == "ERR"]
    left_out = [case.name for case in read if case.status == "SKIP"]
    notes = _notes(gate.cel, read, left_out)
    if missing:
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", _no_data(missing), notes=notes)
    if len(left_out) == len(read):
        reason = f"no data: none of its {len(read)} case{'s' if len(read) != 1 else ''} ran"
        return GateResult(gate.name, gate.cel, gate.severity, "not_evaluated", reason, notes=notes)
    try:
        program = compile_expression(gate.cel, GATE_VARIABLES)
    except CelError as exc:
        return GateResult(gate.name, gate.cel, gate.severity, "error", f"gate '{gate.name}': {exc}", notes=notes)
    result = program.evaluate(inputs.context)
    if result.error is not None:
        why = f"gate '{gate.name}' could not be evaluated: {result.error}"
        return GateResult(gate.name, gate.cel, gate.severity, "error", why, notes=notes)
    if not isinstance(result.value, bool):
        why = f"gate '{gate.name}' must be true or false, got {result.value!r}"
        return GateResult(gate.name, gate.cel, gate.severity, "error", why, notes=notes)
    if result.value:
        return GateResult(gate.name, gate.cel, gate.severity, "pass", notes=notes)
    breaking = _breaking(gate.cel, inputs.context, [case.name for case in inputs.cases])
    seen = _seen(gate.cel, inputs.context)
    return GateResult(gate.name, gate.cel, gate.severity, "fail", breaking=breaking, seen=seen, notes=notes)


def _about_left_out(cel: str, inputs: GateInputs) -> str | None:
    """Why a gate of a subset is about cases that did not run (module docstring), or None."""
    left_out = _listed(inputs.unrun)
    if any(kind == "count" for kind, _v, _p in _over_cases(cel)):
        return f"n/a: it counts cases across the whole suite, and this run left out {left_out}"
    suite = inputs.context.get("suite")
    shipped = isinstance(suite, Mapping) and any(str(key).startswith("baseline_") for key in suite)
    if shipped and _SUITE_FIGURE_OF_SHIPPED.search(cel):  # without a saved run there is nothing to compare
        return f"n/a: it compares the suite's figures with the saved run's, and this run left out {left_out}"
    for kind, variable, predicate in _over_cases(cel):
        if kind != "selection":
            continue
        selected = _unmet("rows", variable, f"!({predicate})", {**inputs.context, "rows": list(inputs.unrun_rows)})
        if selected:
            return f"n/a: it is about {_listed([name for name, _value in selected])}, which this run did not run"
    return None


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(f"'{name}'" for name in names[:5])
    return shown + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _over_cases(cel: str) -> list[tuple[str, str, str]]:
    """(kind, variable, predicate) of each ``filter`` over ``rows``: a ``count`` (``.size() >= N``, N of 2 or
    more) or a ``selection`` of the cases a gate is about (a filter of ``rows`` itself)."""
    found = []
    for match in _MACRO.finditer(cel):
        if match.group(1) != "filter" or _inside_string(cel, match.start()):
            continue
        receiver = _receiver(cel, match.start())
        close = _closing(cel, cel.index("(", match.start()))
        if not re.match(r"rows\b", receiver) or close is None:
            continue
        predicate = cel[match.end() : close].strip()
        if _COUNTED.match(cel, close + 1):
            found.append(("count", match.group(2), predicate))
        elif receiver == "rows":
            found.append(("selection", match.group(2), predicate))
    return found


def _named(cel: str, cases: Sequence[str]) -> list[str]:
    """The cases a gate names in its string literals, in the order given."""
    literals = {text for _quote, text in _STRING.findall(cel)}
    return [case for case in dict.fromkeys(cases) if case in literals]


def _no_data(missing: Sequence[CaseData]) -> str:
    told = "; ".join(f"{case.name}: {case.error}" if case.error else case.name for case in missing)
    noun = "case has" if len(missing) == 1 else "cases have"
    return f"no data: {len(missing)} {noun} no result ({told})"


def _notes(cel: str, read: Sequence[CaseData], left_out: Sequence[str]) -> tuple[str, ...]:
    notes = []
    if _READS_SCORES.search(cel):  # a disqualified arm's score is no answer: say it was read
        for case in read:
            for arm, why in (case.disqualified or {}).items():
                notes.append(f"{case.name}: {arm} was disqualified ({why}); it loses the case whatever its score")
    if left_out:
        notes.append("left out, skipped: " + ", ".join(left_out))
    return tuple(notes)


# --- the cases that broke a failed gate --------------------------------------------------


def _breaking(cel: str, context: Mapping[str, object], cases: Sequence[str]) -> tuple[Breach, ...]:
    """Every case that broke a failed gate, in case order, with what the gate saw of it."""
    found: dict[str, str | None] = {}
    for receiver, variable, predicate in _macros(cel):
        for name, value in _unmet(receiver, variable, predicate, context):
            found.setdefault(name, _case_seen(variable, predicate, value, context))
    for name in _named(cel, cases):
        found.setdefault(name, None)
    return tuple(Breach(case, found[case]) for case in cases if case in found)


def _case_seen(variable: str, predicate: str, value: object, context: Mapping[str, object]) -> str | None:
    """What the false comparisons of ``predicate`` saw of one case, in its own terms: ``margin was -12``,
    ``variant.score - variant.baseline_score was -10`` (``r.`` and ``r.arms["..."]`` left out)."""
    said = _said(predicate, {**context, variable: value}, (*GATE_VARIABLES, variable))
    if said is None:
        return None
    arm = re.compile(rf"\b{re.escape(variable)}\.arms(?:\[\"([^\"]+)\"\]|\.(\w+))")
    said = arm.sub(lambda found: found.group(1) or found.group(2), said)
    return re.sub(rf"\b{re.escape(variable)}\.", "", said)


def _seen(cel: str, context: Mapping[str, object]) -> str | None:
    """What the comparisons of a failed gate saw of the suite's figures, in their own terms (``margin -
    baseline_margin was -5``: ``suite.`` left out); None when no comparison says anything (a macro: its
    cases say it)."""
    said = _said(cel, context, GATE_VARIABLES)
    return re.sub(r"\bsuite\.", "", said) if said is not None else None


def _said(expression: str, context: Mapping[str, object], names: Sequence[str]) -> str | None:
    """What a false expression's comparisons saw: each ``||`` alternative is false when the whole is, and in
    each the first false ``&&`` clause says what the sides of its comparison were (an ``||`` inside it, in turn)."""
    told: dict[str, None] = {}
    expression = expression.strip()
    while expression.startswith("(") and _closing(expression, 0) == len(expression) - 1:
        expression = expression[1:-1].strip()  # (a || b): its alternatives
    for alternative in _disjuncts(expression):
        for clause in conjuncts(alternative):
            try:
                program = compile_expression(clause, names)
            except CelError:
                break
            if program.evaluate(context).value is not False:
                continue
            seen = program.seen(context, longest=_SIDE_CHARS)
            if seen is None and clause.strip() != expression:
                seen = _said(clause, context, names)
            if seen:
                told[seen] = None
            break
    return "; ".join(told) or None


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


def _unmet(receiver: str, variable: str, predicate: str, context: Mapping[str, object]) -> list[tuple[str, object]]:
    """(name, value) of the cases of ``receiver`` for which ``predicate`` does not hold."""
    expression = f"{receiver}.filter({variable}, !({predicate}))"
    try:
        program = compile_expression(expression, GATE_VARIABLES)
    except CelError:
        return []
    result = program.evaluate(context)
    if result.error is not None or not isinstance(result.value, list):
        return []
    return [(str(case["name"]), case) for case in result.value if isinstance(case, dict) and "name" in case]
