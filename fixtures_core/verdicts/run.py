"""A run's own verdict, decided here and nowhere else: PASS, FAIL or ERR, SKIP for a dry run.

* ERR when the run could not complete (an error of its own: an interrupt, a
  cost budget that stopped rows, a finalize failure, a baseline it could not
  be compared with; or fewer rows finished than it planned), or when a row or
  an A/B suite erred.
* FAIL when a row failed, or an A/B suite's hard ship gate failed. In a suite
  with a hard gate, an arm row's FAIL (its own checks, a disqualification) is
  evidence for the gates, not a failure of the run: a worse arm is what such a
  suite measures (``evidence_only``). Without one nothing else decides, so
  arm rows count like any row (never green by default).
* PASS otherwise; a skipped row takes nothing from it.
* A dry run that did not err is SKIP: nothing was scored, its document never
  says PASS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from fixtures_core.parsing.suite import ARM_PROPERTY
from fixtures_core.results import RowResult, Status
from fixtures_core.verdicts.precedence import worst

if TYPE_CHECKING:  # the domain's later rooms, for their types only
    from fixtures_core.analysis.shipgate import SuiteOutcome


class _Closable(Protocol):
    @property
    def status(self) -> Status: ...

    @property
    def error(self) -> str | None: ...


R = TypeVar("R", bound=_Closable)


def evidence_only(row: RowResult, suites: Sequence[SuiteOutcome]) -> bool:
    """An arm row of a suite with a hard gate: its FAIL is evidence for the gates, not the run's verdict."""
    if row.properties.get(ARM_PROPERTY) is None:
        return False
    return any(suite.file == row.file and any(g.severity == "hard" for g in suite.gates) for suite in suites)


def failures(rows: Sequence[RowResult], suites: Sequence[SuiteOutcome]) -> list[RowResult]:
    """The FAIL rows behind the run's own verdict (every FAIL row but those that are evidence only)."""
    return [row for row in rows if row.status == "FAIL" and not evidence_only(row, suites)]


def run_status(rows: Sequence[RowResult], suites: Sequence[SuiteOutcome], incomplete: bool, dry_run: bool) -> Status:
    """The run's own verdict (module docstring); ``incomplete``: it could not complete."""
    errored: Status = "ERR" if incomplete or any(row.status == "ERR" for row in rows) else "PASS"
    failed: Status = "FAIL" if failures(rows, suites) else "PASS"
    status = worst(errored, failed, *(suite.verdict for suite in suites))
    return "SKIP" if dry_run and status == "PASS" else status


def errored(run: R, error: str) -> R:
    """``run`` as ERR with ``error``: something after its rows ended made it incomplete (an interrupt while
    it closed, a baseline it could not be compared with)."""
    return replace(run, status="ERR", error=error)  # type: ignore[type-var]
