"""The words, badges and colours of every status in every output, decided here and nowhere else.

Every report (terminal, ``show``, HTML, Markdown, JUnit, the frame) and the
Prefect states show a status through a ``Look``: its word, and its tone,
which gives its colour in each medium (a rich style, a CSS class, a hex
colour). The statuses themselves are decided in ``verdicts``; this module
only says how each one reads.

* A row reads its status, ``(flaky)`` after it when some but not all of its
  samples passed. An A/B arm row that ended its case reads how it ended:
  ``WON``, ``LOST``, ``TIE`` or ``DISQUALIFIED`` (never ``PASS`` beside a
  loss); its own ERR, SKIP or FAIL comes first. A lost or tied arm is no
  failure (the other arm winning is what a suite measures): its tone is
  neutral grey, never green.
* A case reads its Verdict column; a case that broke a hard gate is red and
  one that broke a soft gate amber, whatever its word: never green.
* A gate reads ``ok``, ``FAILED`` (hard), ``WARNED`` (soft: it never blocks),
  ``ERROR`` or ``NOT EVALUATED``, with why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from fixtures_core.analysis.shipgate import CaseOutcome, SuiteOutcome
from fixtures_core.results import CaseResult, MetricSummary, Outcome, RowResult, Status
from fixtures_core.verdicts.answer import DRY_RUN, Verdict
from fixtures_core.verdicts.gates import Breach, GateResult

Tone = Literal["pass", "fail", "error", "skip", "neutral", "warn"]

_HEX: dict[Tone, str] = {
    "pass": "#2e7d32",
    "fail": "#c62828",
    "error": "#8e24aa",
    "skip": "#9e9e9e",
    "neutral": "#616161",
    "warn": "#ef6c00",
}
_RICH: dict[Tone, str] = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "skip": "dim",
    "neutral": "bright_black",
    "warn": "yellow",
}
_STATUS_TONE: dict[str, Tone] = {"PASS": "pass", "FAIL": "fail", "ERR": "error", "SKIP": "skip"}
_ARM: dict[CaseResult, tuple[str, Tone]] = {
    "won": ("WON", "pass"),
    "lost": ("LOST", "neutral"),
    "tie": ("TIE", "neutral"),
    "disqualified": ("DISQUALIFIED", "fail"),
}
_CASE_TONE: dict[str, Tone] = {
    "PASS": "pass",
    "EXPECTED (known-limit)": "pass",
    "LOSS": "neutral",
    "TIE": "neutral",
    "DISQUALIFIED": "fail",
    "WARNING (known-limit)": "warn",
    "READY": "skip",
    "FAIL": "fail",
    "ERR": "error",
    "SKIP": "skip",
}
_STATUSES: tuple[Status, ...] = ("PASS", "FAIL", "ERR", "SKIP")
_SYMBOLS: dict[Status, str] = {"PASS": "✓", "FAIL": "✗", "ERR": "E", "SKIP": "-"}
_OUTCOME_TONE: dict[Outcome, Tone] = {"pass": "pass", "fail": "fail", "error": "error", "not_evaluated": "skip"}


@dataclass(frozen=True)
class Look:
    """How a status reads: its word, and its tone (the colour it takes in every medium)."""

    word: str
    tone: Tone

    @property
    def style(self) -> str:
        """The terminal's colour (a rich style)."""
        return _RICH[self.tone]

    @property
    def colour(self) -> str:
        """The colour on a page or in a plot (hex)."""
        return _HEX[self.tone]

    @property
    def css(self) -> str:
        """The page's class for a badge or a box of this tone."""
        return f"tone-{self.tone}"

    @property
    def settled(self) -> bool:
        """Nothing went wrong: it passed, did not run by design, or lost or tied a case (no failure).
        Prefect shows these Completed; JUnit shows no failure or error."""
        return self.tone in ("pass", "skip", "neutral")


def status(value: Status) -> Look:
    """A sample's (or any plain) status."""
    return Look(value, _STATUS_TONE[value])


def of_word(word: str) -> Look | None:
    """The look of a status given as text (a stored run's verdict); None for a word that is no status."""
    found = next((status for status in _STATUSES if status == word), None)
    return status(found) if found is not None else None


_WOULD_HAVE: dict[str, str] = {
    "PASS": "would have passed",
    "FAIL": "would have failed",
    "ERR": "would have erred",
    "SKIP": "would have been skipped",
}


def would_have(value: str) -> str:
    """What a status found by a backtest says of a night that ran before the check changed."""
    return _WOULD_HAVE.get(value, f"would have been {value}")


def symbol(value: Status | None, flaky: bool = False) -> str:
    """A status as one character in a strip of runs: ✓ ✗ E -, ``~`` flaky, ``·`` absent."""
    return "·" if value is None else "~" if flaky else _SYMBOLS[value]


def outcome(value: Outcome) -> Look:
    """A check's outcome (a sample's dot in a plot): pass, fail, error, not evaluated."""
    return Look(value.replace("_", " "), _OUTCOME_TONE[value])


def row(found: RowResult) -> Look:
    """A row as every output shows it (module docstring)."""
    if found.status in ("ERR", "SKIP"):
        return status(found.status)
    if found.case_result is not None and (found.status == "PASS" or found.case_result == "disqualified"):
        word, tone = _ARM[found.case_result]
        return Look(word, tone)
    flaky = found.stochastic is not None and found.stochastic.row_class == "flaky"
    return Look(found.status + (" (flaky)" if flaky else ""), _STATUS_TONE[found.status])


def arm(result: CaseResult) -> Look:
    """How an arm ended its case."""
    word, tone = _ARM[result]
    return Look(word, tone)


def case(found: CaseOutcome, suite: SuiteOutcome) -> Look:
    """A case's Verdict column; red when it broke a hard gate, amber a soft one."""
    broke = {gate.severity for gate in suite.gates for breach in gate.breaking if breach.case == found.name}
    tone = _CASE_TONE.get(found.verdict, "neutral")
    if "hard" in broke and tone != "error":
        tone = "fail"
    elif "soft" in broke and tone in ("pass", "neutral", "skip"):
        tone = "warn"
    return Look(found.verdict, tone)


def broken_by(found: CaseOutcome, gates: Sequence[GateResult]) -> tuple[GateResult, ...]:
    """The failed gates ``found`` broke."""
    return tuple(gate for gate in gates if any(breach.case == found.name for breach in gate.breaking))


def gate(found: GateResult) -> Look:
    """``ok``, ``FAILED`` (hard), ``WARNED`` (soft), ``ERROR`` or ``NOT EVALUATED``."""
    if found.status == "pass":
        return Look("ok", "pass")
    if found.status == "fail":
        return Look("FAILED", "fail") if found.severity == "hard" else Look("WARNED", "warn")
    if found.status == "error":
        return Look("ERROR", "error")
    return Look("NOT EVALUATED", "skip")


def gate_text(found: GateResult) -> str:
    """A gate's answer in words, with what decided it: ``FAILED: broken by F2 (r.margin was -12)``,
    ``NOT EVALUATED: no data: ...``, ``ok``."""
    details = gate_details(found)
    return gate(found).word + (": " + "; ".join(details) if details else "")


def gate_details(
    found: GateResult,
    text: Callable[[str], str] = str,
    breach: Callable[[Breach], str] = str,
    notes: bool = True,
) -> list[str]:
    """What decided a gate's answer, one phrase each: why it was not evaluated (or erred), the cases that
    broke it with what was seen of each, what its comparisons saw, and (``notes``) its notes. ``text`` and
    ``breach`` format the plain words and each case (a page escapes one and marks the other)."""
    details = []
    if found.status in ("error", "not_evaluated") and found.error:
        details.append(text(found.error))
    if found.breaking:
        details.append(text("broken by ") + text(", ").join(breach(case) for case in found.breaking))
    if found.seen:
        details.append(text(f"seen: {found.seen}"))
    if notes:
        details += [text(note) for note in found.notes]
    return details


def suite(found: SuiteOutcome) -> Look:
    """A suite's ship decision: its verdict, ``DRY RUN`` for a dry run (never a green PASS)."""
    if not found.dry_run:
        return status(found.verdict)
    return Look(DRY_RUN, "skip") if found.verdict == "PASS" else Look(f"{DRY_RUN} {found.verdict}", "error")


def verdict(found: Verdict) -> Look:
    """The run's own verdict as ``Verdict.shown`` says it (``DRY RUN`` for a dry run that did not err: grey)."""
    return Look(found.shown, "skip") if found.shown == DRY_RUN else status(found.status)


def metric(found: MetricSummary) -> Look:
    """A metric's mark: ``informational`` (it never gates), ``✗ why``, ``error: why``, ``not evaluated``, ``ok``."""
    if not found.gate:
        return Look("informational", "skip")
    if found.status == "fail":
        return Look("✗ " + (found.error or "failed"), "fail")
    if found.status == "error":
        return Look("error: " + (found.error or ""), "error")
    if found.status == "not_evaluated":
        return Look("not evaluated" + (f": {found.error}" if found.error else ""), "skip")
    return Look("ok", "pass")


def badge_css() -> str:
    """The page's badge and box colours, one rule per tone."""
    return "".join(f".tone-{tone}{{background:{hex_}}}" for tone, hex_ in _HEX.items()) + "".join(
        f".box-tone-{tone}{{border-color:{hex_}}}" for tone, hex_ in _HEX.items()
    )
