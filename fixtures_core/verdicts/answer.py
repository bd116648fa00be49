"""A run's answer: two verdicts, never mixed, and the one exit code they give.

* The run's own verdict (``RunResult.status``): PASS, FAIL or ERR from its
  rows and its A/B suites' hard ship gates; SKIP for a dry run that did not
  err (nothing was scored, shown as ``DRY RUN``).
* With a baseline, the gate's answer (``Comparison.regressed``): did this run
  regress against the saved run? A row that failed in both runs is not a
  regression (seed 03).

The exit code: 2 for ERR; with a baseline, 1 when the run regressed or a hard
ship gate failed (a failed ship gate blocks a release whatever the baseline
says), else 0; without one, 1 for FAIL, else 0. Every report (terminal,
``show``, ``history``, HTML, summary, JUnit, Prefect) shows these same values
through ``Verdict``; none derives them on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from fixtures_core.results import RowResult, Status
from fixtures_core.text import counted, listed
from fixtures_core.verdicts.run import failures

if TYPE_CHECKING:  # the domain's later rooms, for their types only
    from fixtures_core.analysis.baseline import Comparison
    from fixtures_core.analysis.shipgate import SuiteOutcome


class VerdictedRun(Protocol):
    """What a verdict reads of a run (``rundoc.RunResult`` is one, and builds its Verdict from here)."""

    @property
    def status(self) -> Status: ...

    @property
    def error(self) -> str | None: ...

    @property
    def comparison(self) -> Comparison | None: ...

    @property
    def suites(self) -> tuple[SuiteOutcome, ...]: ...

    @property
    def rows(self) -> tuple[RowResult, ...]: ...

    @property
    def options(self) -> Mapping[str, object]: ...

    @property
    def dry_run(self) -> bool: ...


__all__ = ["Verdict", "verdict_of"]

DRY_RUN = "DRY RUN"


@dataclass(frozen=True)
class Verdict:
    """A run's two answers and its exit code.

    status:       the run's own verdict (SKIP: a dry run that did not err).
    dry_run:      nothing in the run was scored.
    baseline:     the saved run the gate compared with; None when there was no comparison.
    regressed:    the gate's answer: True regressed, False no regression, None not compared.
    failed_gates: hard ship gates that failed, as ``'name' (suite file)``.
    exit_code:    what the command exits with (module docstring).
    reasons:      why the run is not a plain PASS, one short phrase each (errors first).
    deciding:     ids of the FAIL rows that take part in the exit code: with a baseline, those that
                  passed there (a pass -> fail always gates) and, when the run regressed, those new
                  since it (they lowered the suite rates); without one, every FAIL row except an
                  arm row of a suite with a hard gate (its FAIL is evidence for the gates).
    passed:       what decided a run with no reason against it, in words: its rows, or its suites'
                  hard ship gates, and what did not count (arm rows that failed, soft gates that warned).
    """

    status: Status
    dry_run: bool
    baseline: str | None
    regressed: bool | None
    failed_gates: tuple[str, ...]
    exit_code: int
    reasons: tuple[str, ...]
    deciding: frozenset[str] = frozenset()
    passed: str = "every row passed"

    @property
    def shown(self) -> str:
        """The run's own verdict as people read it: ``DRY RUN`` for a dry run, never a green PASS."""
        return DRY_RUN if self.dry_run and self.status in ("PASS", "SKIP") else self.status

    @property
    def gate(self) -> str | None:
        """The gate's answer in words (``no regression against shipped.json``); None without one."""
        if self.regressed is None:
            return None
        return f"{'regression' if self.regressed else 'no regression'} against {self.baseline}"

    @property
    def gate_word(self) -> str:
        """The gate's answer as one word for tables: ``regressed``, ``no regression`` or ``-``."""
        return "-" if self.regressed is None else "regressed" if self.regressed else "no regression"

    @property
    def answer(self) -> str:
        """Both answers and the exit code on one line: ``FAIL · no regression against shipped · exit 0``."""
        return " · ".join([self.shown, *([self.gate] if self.gate else []), f"exit {self.exit_code}"])

    @property
    def why(self) -> str:
        """One sentence: what made the run's answer, or that everything passed."""
        if self.reasons:
            return "; ".join(self.reasons)
        if self.dry_run and self.status != "ERR":
            return "dry run: nothing was scored, the wiring held"
        return self.passed + (f"; no regression against {self.baseline}" if self.regressed is False else "")


def verdict_of(run: VerdictedRun) -> Verdict:
    """The answer of ``run`` (see the module docstring)."""
    status = run.status
    compared = run.comparison if run.comparison is not None and run.comparison.error is None else None
    regressed = compared.regressed if compared is not None and status != "ERR" else None
    failed_gates = tuple(
        f"'{gate.name}' ({suite.file})"
        for suite in run.suites
        for gate in suite.gates
        if gate.severity == "hard" and gate.status == "fail"
    )
    if status == "ERR":
        code = 2
    elif regressed is not None:
        code = 1 if regressed or failed_gates else 0
    else:
        code = 1 if status == "FAIL" else 0
    own = _own_failures(run)
    deciding = own
    if regressed is not None and compared is not None:
        broken = {(change.file, change.row) for change in compared.changes if change.gating}
        added = set(compared.added) if regressed else set()  # new failing rows lowered the rates that gated
        deciding = [row for row in own if (row.file, row.name) in broken or row.id in added]
    return Verdict(
        status=status,
        dry_run=run.dry_run,
        baseline=_baseline_name(run) if regressed is not None else None,
        regressed=regressed,
        failed_gates=failed_gates,
        exit_code=code,
        reasons=_reasons(run, own, regressed),
        deciding=frozenset(row.id for row in deciding),
        passed=_passed(run, own),
    )


def _own_failures(run: VerdictedRun) -> list[RowResult]:
    """The FAIL rows behind the run's own verdict (``verdicts.run.failures``)."""
    return failures(run.rows, run.suites)


def _baseline_name(run: VerdictedRun) -> str | None:
    """The baseline as the user named it (``shipped``), else where it was read from."""
    named = run.options.get("baseline")
    if isinstance(named, str):
        return named
    return run.comparison.baseline if run.comparison is not None else None


def _reasons(run: VerdictedRun, failed: Sequence[RowResult], regressed: bool | None) -> tuple[str, ...]:
    found = []
    if run.error:
        found.append(f"error: {run.error}")
    found += _row_phrase("errored", [row for row in run.rows if row.status == "ERR"])
    found += [
        f"ship gate '{gate.name}' ({suite.file}) could not be evaluated"
        for suite in run.suites
        for gate in suite.gates
        if gate.status == "error"
    ]
    found += _row_phrase("failed", failed)
    found += _gates_phrase(run)
    if regressed:
        found.append(f"regression against {_baseline_name(run)}")
    elif regressed is False and failed:
        found.append(f"no row that passed in {_baseline_name(run)} fails now")
    return tuple(found)


def _passed(run: VerdictedRun, own: Sequence[RowResult]) -> str:
    """What decided a run that nothing failed, in words that hold: its rows, or its hard ship gates
    (and then the arm rows that failed their own checks are named as evidence, never as passed)."""
    gated = [suite for suite in run.suites if any(gate.severity == "hard" for gate in suite.gates)]
    hard = [gate for suite in gated for gate in suite.gates if gate.severity == "hard"]
    ids = {row.id for row in own}
    evidence = [row for row in run.rows if row.status == "FAIL" and row.id not in ids]
    ran = [row for row in run.rows if row.status != "SKIP"]
    skipped = len(run.rows) - len(ran)
    parts = []
    if not evidence:
        parts.append(
            "every row passed" if not skipped else f"every row that ran passed ({counted(skipped, 'row')} skipped)"
        )
    if hard:
        parts.append(f"the hard ship gate '{hard[0].name}' passed" if len(hard) == 1 else "every hard ship gate passed")
    if evidence:
        names = listed([f"'{row.name}'" for row in evidence])
        their = "its" if len(evidence) == 1 else "their"
        parts.append(f"{counted(len(evidence), 'arm row')} failed {their} own checks, evidence for the gates: {names}")
    soft = [
        "'" + gate.name + "'"
        for suite in run.suites
        for gate in suite.gates
        if gate.severity == "soft" and gate.status == "fail"
    ]
    if soft:
        parts.append(f"soft ship gate{'s' if len(soft) > 1 else ''} {listed(soft)} warned")
    return "; ".join(parts)


def _row_phrase(what: str, rows: Sequence[RowResult]) -> list[str]:
    if not rows:
        return []
    names = listed([f"'{row.name}'" for row in rows])
    return [f"{counted(len(rows), 'row')} {what}: {names}"]


def _gates_phrase(run: VerdictedRun) -> list[str]:
    """``hard ship gate 'a' (suite.md) failed``; the gates of one suite named once with its file."""
    phrases = []
    for suite in run.suites:
        names = [f"'{gate.name}'" for gate in suite.gates if gate.severity == "hard" and gate.status == "fail"]
        if names:
            noun = "hard ship gate" if len(names) == 1 else "hard ship gates"
            phrases.append(f"{noun} {', '.join(names)} ({suite.file}) failed")
    return phrases
