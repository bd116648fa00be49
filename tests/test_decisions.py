"""One decision, one place: only ``fixtures_core/verdicts/`` decides a status, and only
``fixtures_core/reports/status_words.py`` says how one reads.

Read from the source (an AST walk over fixtures_core/ and flows/):

* a status is decided where a result's ``status`` (or a suite's ``verdict``) is set to a status word
  (``status="ERR"``, ``replace(row, status="FAIL" if ... else "PASS")``), where one is returned from a
  function that gives a ``Status``, or where statuses are combined (``worst``, ``combine_outcomes``);
  the places that may, and which are allowed to read a combination (a metric's outcome), are listed;
* a status is given a colour where a status word and a colour stand in one mapping (``{"PASS": "green"}``),
  or a colour is written beside a status word in a call (``Text("FAIL", style="red")``).

Each check is shown to find a planted decision (``test_the_checks_find_a_second_place``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fixtures_core", "flows")
OWNERS = ("fixtures_core/verdicts/",)
WORDS_OWNER = "fixtures_core/reports/status_words.py"
STATUSES = {"PASS", "FAIL", "ERR", "SKIP"}
GATE_OUTCOMES = {"pass", "fail", "error", "not_evaluated"}
COMBINERS = {"worst"}
# A metric's outcome (its threshold and its comparison with the baseline row) is an evaluation the row's
# verdict reads (``verdicts.row.with_metrics``), not a status: finalize combines the two.
COMBINING_READERS = {"fixtures_core/analysis/finalize.py": {"combine_outcomes"}}
COLOURS = {"green", "red", "magenta", "yellow", "dim", "#2e7d32", "#c62828", "#8e24aa", "#9e9e9e", "#ef6c00"}


def product_files() -> Iterator[tuple[str, ast.Module]]:
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            yield relative, ast.parse(path.read_text(), relative)


def _words(node: ast.AST | None) -> set[str]:
    """The string constants an expression can give (a literal, either branch of a conditional)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.IfExp):
        return _words(node.body) | _words(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_words(value) for value in node.values))
    return set()


def decisions(relative: str, tree: ast.Module) -> list[str]:
    """Where ``tree`` decides a status (``relative:line: what``)."""
    found = []
    allowed = COMBINING_READERS.get(relative, set())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name in COMBINERS | {"combine_outcomes"} - allowed:
                found.append(f"{relative}:{node.lineno}: combines statuses with {name}()")
            # A check's or a metric's outcome is an evaluation; a gate's is its answer (verdicts.gates).
            words = STATUSES | (GATE_OUTCOMES if name == "GateResult" else set())
            for keyword in node.keywords:
                if keyword.arg in ("status", "verdict") and _words(keyword.value) & words:
                    found.append(f"{relative}:{node.lineno}: sets {keyword.arg}={ast.unparse(keyword.value)}")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "Status" in ast.unparse(node.returns or []):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Return) and _words(inner.value) & STATUSES:
                    found.append(f"{relative}:{inner.lineno}: {node.name} returns {ast.unparse(inner.value)}")
    return found


def colourings(relative: str, tree: ast.Module) -> list[str]:
    """Where ``tree`` gives a status word a colour (``relative:line: what``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys, values = set().union(*map(_words, node.keys)), set().union(*map(_words, node.values))
            if keys & (STATUSES | GATE_OUTCOMES) and values & COLOURS:
                found.append(f"{relative}:{node.lineno}: maps statuses to colours")
        if isinstance(node, ast.Call):
            given = set().union(set(), *map(_words, node.args))
            styled = set().union(set(), *(_words(k.value) for k in node.keywords if k.arg in ("style", "colour")))
            if given & STATUSES and styled & COLOURS:
                found.append(f"{relative}:{node.lineno}: colours a status in a call")
    return found


def test_only_verdicts_decide_a_status() -> None:
    found = [
        decision
        for relative, tree in product_files()
        if not relative.startswith(OWNERS)
        for decision in decisions(relative, tree)
    ]
    assert found == []


def test_only_status_words_colour_a_status() -> None:
    found = [c for relative, tree in product_files() if relative != WORDS_OWNER for c in colourings(relative, tree)]
    assert found == []


def test_the_checks_find_a_second_place() -> None:
    planted = ast.parse(
        "from dataclasses import replace\n"
        "def judged(row) -> Status:\n"
        "    return 'PASS' if row.ok else 'FAIL'\n"
        "def scored(row):\n"
        "    return replace(row, status='ERR' if row.broken else row.status)\n"
        "def both(a, b):\n"
        "    return worst(a, b)\n"
        "GATE = GateResult('g', 'true', 'hard', status='pass')\n"
        "STYLE = {'PASS': 'green', 'FAIL': 'red'}\n"
        "shown = Text('FAIL', style='red')\n"
    )
    assert {line.split(": ", 1)[1] for line in decisions("planted.py", planted)} == {
        "judged returns 'PASS' if row.ok else 'FAIL'",
        "sets status='ERR' if row.broken else row.status",
        "combines statuses with worst()",
        "sets status='pass'",
    }
    assert len(colourings("planted.py", planted)) == 2
