"""Run one logical row: k samples, serially, under one time budget.

Continue after an ordinary FAIL (to expose stochastic behaviour); stop after
an ERR, a cancellation, or when the row's budget is gone.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.durations import format_duration
from fixtures_core.execution.checks import check_sample
from fixtures_core.execution.sampling import DEFAULT_CAPTURE_LIMIT, ProcessGroups, execute
from fixtures_core.parsing.template import render
from fixtures_core.redaction import redactor
from fixtures_core.results import Outcomes, RowResult, SampleResult, Status, combine_outcomes, worst
from fixtures_core.spec import RowSpec


@dataclass(frozen=True)
class RunSettings:
    """What every sample of a run shares."""

    run_id: str
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    tmp_root: str | None = None
    keep_tmp: bool = False


SampleRunner = Callable[[RowSpec, int, float], SampleResult]
SampleListener = Callable[[RowSpec, SampleResult], None]


def run_sample(row: RowSpec, index: int, deadline: float, settings: RunSettings, groups: ProcessGroups) -> SampleResult:
    """Execute and check sample ``index`` of ``row`` before ``deadline`` (monotonic)."""
    tmpdir = tempfile.mkdtemp(prefix=f"assay-{index}-", dir=settings.tmp_root)
    try:
        values = template_values(row, index, tmpdir)
        env = dict(os.environ)
        env.update({key: render(value, values) for key, value in row.env.items()})
        env.update(ASSAY_RUN_ID=settings.run_id, ASSAY_ROW=row.name, ASSAY_SAMPLE=str(index), ASSAY_TMPDIR=tmpdir)
        cwd = os.path.expanduser(os.path.expandvars(render(row.cwd, values))) if row.cwd else None
        execution = execute(
            [render(arg, values) for arg in row.argv],
            deadline=deadline,
            cwd=cwd,
            env=env,
            capture_limit=settings.capture_limit,
            groups=groups,
        )
        # Checks see the real output; everything kept from here on is masked.
        return redactor(row.redaction, env).sample(check_sample(row, index, execution, tmpdir))
    finally:
        if not settings.keep_tmp:
            shutil.rmtree(tmpdir, ignore_errors=True)


def template_values(row: RowSpec, index: int, tmpdir: str) -> dict[str, object]:
    """What ``{{ .name }}`` can refer to in one sample."""
    values: dict[str, object] = dict(row.properties)
    values.update(
        name=row.name, sample=index, tmpdir=tmpdir, sourceDir=row.source_dir or str(Path(row.file).resolve().parent)
    )
    return values


def run_row(
    row: RowSpec,
    settings: RunSettings,
    groups: ProcessGroups,
    sample_runner: SampleRunner | None = None,
    on_sample: SampleListener | None = None,
) -> RowResult:
    """Run every sample of ``row`` and combine them into one result."""
    if row.skip:
        return _result(row, (), "SKIP", row.skip)  # a SKIP row's error says why it was skipped
    runner = sample_runner or (lambda r, i, d: run_sample(r, i, d, settings, groups))
    deadline = time.monotonic() + row.timeout_s
    samples: list[SampleResult] = []
    error: str | None = None
    for index in range(row.repeat):
        if groups.cancelled.is_set():
            error = f"cancelled after {index} of {row.repeat} samples"
            break
        if time.monotonic() >= deadline:
            error = f"time budget {format_duration(row.timeout_s)} ran out after {index} of {row.repeat} samples"
            break
        sample = runner(row, index, deadline)
        samples.append(sample)
        if on_sample is not None:
            on_sample(row, sample)
        if sample.status == "ERR":
            error = f"sample {index}: {sample.error}"
            break
    statuses: list[Status] = [s.status for s in samples]
    status = worst("ERR" if error else "PASS", *statuses)
    return _result(row, tuple(samples), status, error)


def crashed_row(row: RowSpec, exc: BaseException) -> RowResult:
    """An ERR result for a row whose execution raised (a bug, an I/O or orchestration
    failure): the run goes on and reports it, instead of losing every other row."""
    return _result(row, (), "ERR", f"internal error: {type(exc).__name__}: {exc}")


def _result(row: RowSpec, samples: tuple[SampleResult, ...], status: Status, error: str | None) -> RowResult:
    mask = redactor(row.redaction, os.environ)  # the fixture's own text is stored too: mask it alike
    return RowResult(
        id=row.id,
        file=row.fixture_id or row.file,
        name=row.name,
        line=row.line,
        status=status,
        repeat=row.repeat,
        command=tuple(mask.text(arg) for arg in row.argv),
        properties={key: mask.value(value) for key, value in row.properties.items()},
        samples=samples,
        outcomes=Outcomes(
            command=combine_outcomes([s.command.status for s in samples]),
            assertions=combine_outcomes([s.assertions.status for s in samples if s.assertions is not None]),
        ),
        error=mask.optional(error),
    )
