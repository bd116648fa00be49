"""Run one logical row: k samples, serially, under one time budget.

Continue after an ordinary FAIL (to expose stochastic behaviour); stop after
an ERR, a cancellation, or when the row's budget is gone.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.durations import format_duration
from fixtures_core.execution.attempt import needs_attempt, run_attempt
from fixtures_core.execution.checks import check_sample, missing_cwd_sample
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import DEFAULT_CAPTURE_LIMIT, Execution, execute
from fixtures_core.parsing.builtins import platform_values
from fixtures_core.parsing.template import TemplateError, render
from fixtures_core.redaction import redactor
from fixtures_core.results import Outcomes, RowResult, SampleResult, Status, combine_outcomes, worst
from fixtures_core.spec import RowSpec


@dataclass(frozen=True)
class RunSettings:
    """What every sample of a run shares.

    evidence_dir: the run's folder, where A/B attempts keep their evidence.
    dry_run:      attempts prepare, set up and verify, but never start the command.
    """

    run_id: str
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    tmp_root: str | None = None
    keep_tmp: bool = False
    evidence_dir: str | None = None
    dry_run: bool = False


_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
SampleRunner = Callable[[RowSpec, int, float], SampleResult]
SampleListener = Callable[[RowSpec, SampleResult], None]


def run_sample(
    row: RowSpec, index: int, deadline: float, settings: RunSettings, containment: Containment
) -> SampleResult:
    """Execute and check sample ``index`` of ``row`` before ``deadline`` (monotonic)."""
    tmpdir = tempfile.mkdtemp(prefix=f"assay-{index}-", dir=settings.tmp_root)
    try:
        sample, env = _execute_and_check(row, index, deadline, settings, containment, tmpdir)
        # Checks saw the real output; everything kept from here on is masked.
        return redactor(row.redaction, env).sample(sample)
    finally:
        if not settings.keep_tmp:
            shutil.rmtree(tmpdir, ignore_errors=True)


def _execute_and_check(
    row: RowSpec, index: int, deadline: float, settings: RunSettings, containment: Containment, tmpdir: str
) -> tuple[SampleResult, Mapping[str, str]]:
    """The checked sample and the environment it ran with."""
    try:
        values, env, cwd = sample_setting(row, index, tmpdir, settings.run_id)
        if needs_attempt(row, settings.dry_run):
            return run_attempt(row, index, deadline, values, env, cwd, tmpdir, settings, containment), env
        argv = [render(arg, values) for arg in row.argv]
    except TemplateError as exc:
        return check_sample(row, index, Execution(None, b"", b"", 0.0, error=f"template: {exc}"), tmpdir), os.environ
    if not os.path.isdir(cwd):
        return missing_cwd_sample(row, index, cwd), env
    execution = execute(
        argv, deadline=deadline, cwd=cwd, env=env, capture_limit=settings.capture_limit, containment=containment
    )
    return check_sample(row, index, execution, tmpdir, values), env


def sample_setting(
    row: RowSpec, index: int, tmpdir: str, run_id: str = ""
) -> tuple[dict[str, object], dict[str, str], str]:
    """A sample's template values, environment and working directory (raises TemplateError).

    As in Gavel: the platform variables (``GOOS``, ``GIT_ROOT_DIR``, ...) are
    set unless the fixture's env sets them, and the working directory is the
    fixture's folder, or ``cwd`` resolved from it.
    """
    source_dir = row.source_dir or str(Path(row.file).resolve().parent)
    platform = platform_values(source_dir)
    values = template_values(row, index, tmpdir)
    env = dict(os.environ)
    env.update({k: v for k, v in platform.items() if k not in row.env})
    env.update({key: render(value, values) for key, value in row.env.items()})
    env.update(ASSAY_RUN_ID=run_id, ASSAY_ROW=row.name, ASSAY_SAMPLE=str(index), ASSAY_TMPDIR=tmpdir)
    cwd = source_dir
    if row.cwd:
        expanded = os.path.expanduser(_expand_variables(render(row.cwd, values), env))
        cwd = os.path.normpath(os.path.join(source_dir, expanded))
    values.update(CWD=cwd, workDir=cwd)
    return values, env, cwd


def template_values(row: RowSpec, index: int, tmpdir: str) -> dict[str, object]:
    """What ``{{ .name }}`` can refer to in one sample (env variables, properties, built-ins)."""
    source_dir = row.source_dir or str(Path(row.file).resolve().parent)
    values: dict[str, object] = {**row.env, **row.properties, **platform_values(source_dir)}
    values.update(name=row.name, sample=index, tmpdir=tmpdir, sourceDir=source_dir, CWD=source_dir, workDir=source_dir)
    return values


def _expand_variables(text: str, env: Mapping[str, str]) -> str:
    """``$NAME`` and ``${NAME}`` from ``env``; unknown names stay as written."""
    return _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def skip_reason(row: RowSpec, deadline: float, settings: RunSettings, containment: Containment) -> str | None:
    """Why the row is skipped: its static reason, or its skip command exiting 0 (run with bash, as in Gavel)."""
    if row.skip or not row.skip_command:
        return row.skip
    with tempfile.TemporaryDirectory(prefix="assay-skip-", dir=settings.tmp_root) as tmpdir:
        try:
            _values, env, cwd = sample_setting(row, 0, tmpdir, settings.run_id)
        except TemplateError:
            return None  # the row's own samples report the template error
        execution = execute(
            ["bash", "-c", row.skip_command],
            deadline=deadline,
            cwd=cwd if os.path.isdir(cwd) else None,
            env=env,
            capture_limit=4096,
            containment=containment,
        )
    if execution.timed_out:
        raise _SkipTimedOut(f"skip command {row.skip_command!r} did not finish within the row's time budget")
    return f"skip command exited 0: {row.skip_command}" if execution.exit_code == 0 else None


class _SkipTimedOut(Exception):
    """The skip command used up the row's budget."""


def run_row(
    row: RowSpec,
    settings: RunSettings,
    containment: Containment,
    sample_runner: SampleRunner | None = None,
    on_sample: SampleListener | None = None,
) -> RowResult:
    """Run every sample of ``row`` and combine them into one result."""
    deadline = time.monotonic() + row.timeout_s
    try:
        skipped = skip_reason(row, deadline, settings, containment)
        if skipped is not None:
            return _result(row, (), "SKIP", skipped)  # a SKIP row's error says why it was skipped
    except _SkipTimedOut as exc:
        return _result(row, (), "ERR", str(exc))
    runner = sample_runner or (lambda r, i, d: run_sample(r, i, d, settings, containment))
    samples: list[SampleResult] = []
    error: str | None = None
    for index in range(row.repeat):
        if containment.cancelled.is_set():
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
