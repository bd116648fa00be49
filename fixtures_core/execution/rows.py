"""Run one logical row: k samples on the run's sample slots, under one time budget.

The row's budget starts when it gets its first slot: every sample must end by
then + ``timeout`` (an engine whose samples run elsewhere starts it again when the
first sample gets there: ``execution.row_clock``). Samples of one row run in order, one after another (seed
01: a command may keep state between samples); a fixture or run that opts in
(``serial: false``, ``--parallel-samples``) lets them run at once. Continue after an ordinary FAIL (to
expose stochastic behaviour); stop after an ERR, a cancellation, or when the
row's time budget is gone, cancelling the row's samples in flight; when a
cost budget is reached no new sample starts. Sample indices are stable.

An adaptive row stops once its gates are decided (``sequential``). A row that shares the run's
sample budget (``execution.sample_budget``) may then go on past its max: once it reaches its own stop
point undecided, it takes left-over samples one at a time, each after the last one finished.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from fixtures_core.durations import format_duration
from fixtures_core.execution.attempt import needs_attempt, run_attempt
from fixtures_core.execution.checks import check_sample, missing_cwd_sample
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.pool import SamplePool, sample_pool
from fixtures_core.execution.row_clock import RowClock, running
from fixtures_core.execution.run_settings import RunSettings as RunSettings  # re-exported: runs build them
from fixtures_core.execution.sample_budget import SPENT
from fixtures_core.execution.sampling import Execution, execute
from fixtures_core.execution.slots import TIME_RAN_OUT, Lease
from fixtures_core.parsing.builtins import platform_values
from fixtures_core.parsing.template import TemplateError, render
from fixtures_core.redaction import redactor
from fixtures_core.results import RowResult, Sampled, SampleResult, Stop
from fixtures_core.sequential import decide, progress
from fixtures_core.spec import RowSpec
from fixtures_core.verdicts import row as row_verdict
from fixtures_core.verdicts.row import RowVerdict

_CANCELLED = "cancelled"  # a row's give-up reason while it waits for a slot: the run was cancelled
_NO_TEST = "a mean or regression gate is open, and no sequential test says when it has enough"
_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
# One sample of a row: (row, index, deadline, the row's containment scope) -> its result.
SampleRunner = Callable[[RowSpec, int, float, Containment], SampleResult]
# Told of each finished sample; may return the form the row keeps in memory from then on (its evidence is
# on disk): the run's memory then grows with the kept form, not with every sample's captured output.
SampleListener = Callable[[RowSpec, SampleResult], SampleResult | None]


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
        shutil.rmtree(tmpdir, ignore_errors=True)


def _execute_and_check(
    row: RowSpec, index: int, deadline: float, settings: RunSettings, containment: Containment, tmpdir: str
) -> tuple[SampleResult, Mapping[str, str]]:
    """The checked sample and the environment it ran with."""
    try:
        values, env, cwd = sample_setting(row, index, tmpdir, settings.run_id, daemon_port(row, settings))
        if needs_attempt(row, settings.dry_run):
            return run_attempt(row, index, deadline, values, env, cwd, tmpdir, settings, containment), env
        argv = [_carried(render(arg, values), arg, "an argument") for arg in row.argv]
    except TemplateError as exc:
        return check_sample(row, index, Execution(None, b"", b"", 0.0, error=f"template: {exc}"), tmpdir), os.environ
    if not os.path.isdir(cwd):
        return missing_cwd_sample(row, index, cwd), env
    execution = execute(
        argv, deadline=deadline, cwd=cwd, env=env, capture_limit=settings.capture_limit, containment=containment
    )
    return check_sample(row, index, execution, tmpdir, values), env


def daemon_port(row: RowSpec, settings: RunSettings) -> int | None:
    """The port of the row's file's daemon, when it has one that is serving."""
    started = settings.daemons.get(row.daemon.where) if row.daemon is not None else None
    return started.port if started is not None else None


def sample_setting(
    row: RowSpec, index: int, tmpdir: str, run_id: str = "", port: int | None = None
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
    if port is not None:  # the file's daemon's: ``{{ .port }}`` and ``$PORT``, as the daemon has them
        values["port"] = port
        env["PORT"] = str(port)
    env.update({k: v for k, v in platform.items() if k not in row.env})
    env.update({key: _carried(render(value, values), value, f"env {key}") for key, value in row.env.items()})
    env.update(ASSAY_RUN_ID=run_id, ASSAY_ROW=row.name, ASSAY_SAMPLE=str(index), ASSAY_TMPDIR=tmpdir)
    if row.ab is not None:  # an A/B suite's row: its case, and its arm (none in a suite without arms)
        env.update(ASSAY_CASE=row.ab.case, ASSAY_ARM=row.ab.arm or "")
    cwd = source_dir
    if row.cwd:
        expanded = os.path.expanduser(_expand_variables(render(row.cwd, values), env))
        cwd = os.path.normpath(os.path.join(source_dir, expanded))
    values.update(CWD=cwd, workDir=cwd)
    return values, env, cwd


def _carried(rendered: str, template: str, what: str) -> str:
    """``rendered`` when a process can carry it; TemplateError when a property put a NUL byte in it
    (the fixture's own text was checked before the run: ``parsing.encodable``)."""
    if "\0" in rendered:
        raise TemplateError(
            f"{what} rendered from {template!r} holds a NUL byte (\\0), which no process argument or environment "
            "can carry"
        )
    return rendered


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
            _values, env, cwd = sample_setting(row, 0, tmpdir, settings.run_id, daemon_port(row, settings))
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
    pool: SamplePool | None = None,
) -> RowResult:
    """Run every sample of ``row`` on ``pool``'s slots and combine them into one result.

    Without a pool the samples run one after another (a pool of one slot).
    """
    if pool is None:
        with sample_pool(1) as own:
            return run_row(row, settings, containment, sample_runner, on_sample, own)
    if row.error is not None:
        return _result(row, (), row_verdict.could_not_run(row.error), "configuration")
    if row.daemon is not None:
        started = settings.daemons.get(row.daemon.where)
        if started is None or started.error is not None:
            reason = started.error if started else f"daemon ({row.daemon.where}) not started"
            return _result(row, (), row_verdict.could_not_run(reason or "daemon not started"))
    finished = pool.resumed.rows.get(row.id)
    if finished is not None:
        return finished  # a resumed run keeps the rows that finished
    runner = sample_runner or (lambda r, i, d, scope: run_sample(r, i, d, settings, scope))
    scope = containment.scope()
    budget = pool.budget if pool.budget is not None and pool.budget.covers(row) else None
    if budget is not None:
        budget.begin(row)
    try:
        return _RowRun(row, settings, scope, runner, on_sample, pool).run()
    finally:
        if budget is not None:
            budget.finish(row)  # however it ended: what it did not take is left over
        scope.close()


class _RowRun:
    """One row in flight: it takes slots for its samples in index order, starts each on the pool's
    threads, and stops (cancelling its samples in flight) after an ERR, a cancellation or its budget."""

    def __init__(
        self,
        row: RowSpec,
        settings: RunSettings,
        scope: Containment,
        runner: SampleRunner,
        on_sample: SampleListener | None,
        pool: SamplePool,
    ) -> None:
        self.row, self.settings, self.scope, self.runner, self.on_sample, self.pool = (
            row, settings, scope, runner, on_sample, pool
        )  # fmt: skip
        self.keys = pool.slots.keys(row.properties)
        self.samples = {s.index: s for s in pool.resumed.samples.get(row.id, ())}
        self.changed = threading.Condition()
        self.in_flight = 0
        self.error: str | None = None  # why the row stopped: its first cause
        self.stopped: Stop | None = None  # the kind of that cause, when it is one
        self.crash: BaseException | None = None  # a runner that raised (an orchestration failure)
        errored = [s for s in self.samples.values() if s.status == "ERR"]
        if errored:  # a resumed row that had already stopped
            self.error = f"sample {errored[0].index}: {errored[0].error}"
            self.stopped = errored[0].stopped
        self.clock: RowClock | None = None  # the row's time budget, from its first slot
        self.began: float | None = None
        self.budget = pool.budget if pool.budget is not None and pool.budget.covers(row) else None
        self.past_stop = False  # a budgeted row reached its own stop point: its next samples are extras
        self.extra = kept_extra(row, self._sorted()) if self.budget else 0  # extra samples the budget granted
        self.refused: str | None = None  # why a budgeted row got no (more) extra samples

    def run(self) -> RowResult:
        row, pool = self.row, self.pool
        pending = [index for index in range(row.most_samples) if index not in self.samples]
        if not pending or self.error:
            return self._result()
        first = pool.slots.acquire((pool.rank(row), pending[0]), self.keys, self._before_start)
        if isinstance(first, str):
            if first != _CANCELLED and not self.samples:  # a budget was reached before the row began
                return _result(row, (), row_verdict.skipped(f"{first} before the row started"), "budget")
            self._stop(*self._stop_for(first), cancel=False)
            return self._result()
        self.began = time.monotonic()  # the row starts with its first slot
        self.clock = RowClock(row.timeout_s, self.began)
        if not self.samples:  # (a resumed row ran its skip command before)
            try:
                skipped = skip_reason(row, self.deadline, self.settings, self.scope)
            except _SkipTimedOut as exc:
                pool.slots.release(first)
                return _result(row, (), row_verdict.ran((), str(exc)), "timeout")
            if skipped is not None:
                pool.slots.release(first)
                return _result(row, (), row_verdict.skipped(skipped))  # a SKIP row's error says why it was skipped
        lease: Lease | str | None = first
        for index in pending:
            if lease is None and row.samples_in_order:
                self._wait_idle()  # the seed's order: the next sample starts after the last one ended
            step = self._next_step()
            if step == "stop":
                break  # an adaptive row whose gates are decided: more samples could not change its verdict
            if step == "extra":
                if isinstance(lease, Lease):
                    pool.slots.release(lease)  # never wait for the budget holding a slot another row needs
                    lease = None
                if not self._granted_extra():
                    break
            if lease is None:
                lease = pool.slots.acquire((pool.rank(row), index), self.keys, self._why_stop, self.deadline)
            if isinstance(lease, str) and step == "extra" and self._extra_refused(lease):
                lease = None
                break
            if isinstance(lease, str):
                if lease == TIME_RAN_OUT:
                    self._wait_idle()  # its samples in flight timed out too: the first of them says so
                self._stop(*self._stop_for(lease), cancel=False)
                lease = None
                break
            reason = self._why_stop()
            if reason is not None:
                if not (step == "extra" and self._extra_refused(reason)):
                    self._stop(*self._stop_for(reason), cancel=False)
                break  # (the slot is given back below)
            if step == "reserved" and self.budget is not None:
                self.budget.take(row)
            with self.changed:
                self.in_flight += 1
            context = contextvars.copy_context()  # the engine's context (a Prefect row task) goes with the sample
            pool.executor.submit(context.run, self._sample, index, lease)
            lease = None
        if isinstance(lease, Lease):
            pool.slots.release(lease)
        self._wait_idle()
        if self.crash is not None:
            raise self.crash
        return self._result()

    def _next_step(self) -> str:
        """What the row's next sample is: ``"stop"`` (the row is done), ``"reserved"`` (one of its max),
        or ``"extra"`` (a budgeted row past its own stop point asks the budget for a left-over one)."""
        row = self.row
        if not row.adaptive:
            return "reserved"
        if self.budget is None:  # an adaptive row stops once every gate is decided on its finished samples
            return "stop" if decide(row, self._sorted()).decided else "reserved"
        if not self.past_stop:
            decision = decide(row, self._sorted())
            if decision.decided and not decision.curtailed:
                return "stop"  # decided by its tests: decided rows stop as without a budget
            with self.changed:
                taken = len(self.samples) + self.in_flight  # (by count: a resumed row may lack an early index)
            if taken < row.repeat and not decision.decided:
                return "reserved"  # (a stop found when it takes its slot cuts the row short, as without a budget)
            self.past_stop = True  # at max, or the fixed-k answer is settled: the rest is left over
            self.budget.release(row)
        self._wait_idle()  # extras one at a time: each asks with every sample so far
        reason = self._why_stop()
        if reason is not None:  # the row has every sample it was due: only a cancellation or an error ends it so
            if reason == _CANCELLED:
                self._stop(*self._stop_for(reason), cancel=False)
            elif self.error is None:
                self.refused = self.refused or reason  # a cost budget
            return "stop"
        finished = self._sorted()
        if decide(row, finished, row.most_samples).decided:
            return "stop"
        if progress(row, finished) is None:
            self.refused = self.refused or _NO_TEST
            return "stop"
        return "extra"

    def _granted_extra(self) -> bool:
        """Wait for a left-over sample of the budget: True once granted (the row's time budget grows by
        one sample's share of it; the wait does not count), else the row takes no more."""
        assert self.budget is not None
        share = progress(self.row, self._sorted())
        assert share is not None
        refused = self.budget.extra(self.row, share, self._why_stop)
        if refused is None:
            self.extra += 1
            assert self.clock is not None  # (extras come after the row's first samples)
            self.clock.extend(self.row.timeout_s / self.row.repeat)
            return True
        if refused == _CANCELLED or self.error is not None:
            self._stop(*self._stop_for(refused), cancel=False)
        else:
            self.refused = refused  # the budget is spent, or a cost budget was reached: the row is complete
        return False

    def _extra_refused(self, reason: str) -> bool:
        """An extra sample could not take a slot: give it back. True when that only ends the row's extras
        (a cost budget, its time share): the row had every sample it was due, and is not cut short."""
        self._refund()
        if reason == _CANCELLED or self.error is not None:
            return False
        self.refused = "no time was left for it" if reason == TIME_RAN_OUT else reason
        return True

    def _refund(self) -> None:
        assert self.budget is not None
        self.budget.refund(self.row)
        self.extra -= 1

    def _before_start(self) -> str | None:
        """Why no sample of the row may start now: ``_CANCELLED``, or the cost budget that was reached."""
        if self.scope.cancelled.is_set():
            return _CANCELLED
        budget = self.pool.spending.exhausted(self.row)
        return f"budget exhausted: {budget}" if budget else None

    def _why_stop(self) -> str | None:
        with self.changed:
            if self.error is not None:
                return self.error
        return self._before_start()

    def _why_wait(self) -> str | None:
        """Why a sample waiting for a slot outside this process should not wait on: the row's stop
        reasons, or its time budget (``TIME_RAN_OUT``)."""
        reason = self._why_stop()
        if reason is None and time.monotonic() >= self.deadline:
            return TIME_RAN_OUT
        return reason

    def _stop_for(self, reason: str) -> tuple[str, Stop | None]:
        """The row's error and its kind for a stop found while taking a slot (``reason``: the row's
        own error, ``TIME_RAN_OUT``, or ``_before_start``'s), counting the samples started so far."""
        with self.changed:
            if self.error is not None:
                return self.error, self.stopped
            started = f"after {len(self.samples) + self.in_flight} of {self.row.most_samples} samples"
        if reason == TIME_RAN_OUT:
            return f"time budget {format_duration(self.row.timeout_s)} ran out {started}", "timeout"
        if reason == _CANCELLED:
            return f"cancelled {started}", "cancelled"
        return f"budget exhausted {started}: {reason.removeprefix('budget exhausted: ')}", "budget"

    def _stop(self, error: str, stopped: Stop | None, cancel: bool) -> None:
        """Stop the row once: no new sample starts; ``cancel`` also stops its samples in flight."""
        with self.changed:
            if self.error is not None:
                return
            self.error, self.stopped = error, stopped
        if cancel:
            self.scope.cancel()
        self.pool.slots.wake()

    def _sample(self, index: int, lease: Lease) -> None:
        gate = self.pool.gate.hold(self.keys, self._why_wait) if self.pool.gate else contextlib.nullcontext(True)
        try:
            with gate as held:
                sample = self._run(index) if held else None
            if sample is not None:
                self._record(sample)  # before the slot is free: the next taker sees a stop it caused
            elif self._why_wait() == TIME_RAN_OUT:  # it never started: say so, never "timed out ... killed"
                waited = ", ".join(f"{name}={value}" for name, value in self.keys)
                self._stop(
                    f"time budget {format_duration(self.row.timeout_s)} ran out waiting for a slot of "
                    f"{waited} (Prefect's global concurrency limits); sample {index} never started",
                    "timeout",
                    cancel=False,
                )
        except Exception as exc:  # the engine could not run or record it (its API, a disk, a bug): the row ends
            with self.changed:
                self.crash = self.crash or exc
            self._stop(f"sample {index}: {type(exc).__name__}: {exc}", None, cancel=True)
        finally:
            self.pool.slots.release(lease)
            with self.changed:
                self.in_flight -= 1
                self.changed.notify_all()

    def _run(self, index: int) -> SampleResult:
        assert self.clock is not None
        with running(self.clock):  # an engine that restarts the row's clock finds it there
            return self.runner(self.row, index, self.clock.deadline, self.scope)

    @property
    def deadline(self) -> float:
        """When the row's time budget runs out (monotonic); never before the row has its first slot."""
        return math.inf if self.clock is None else self.clock.deadline

    def _record(self, sample: SampleResult) -> None:
        with self.changed:
            error, stopped = self.error, self.stopped
        if error is not None and sample.stopped == "cancelled":  # the row's stop cancelled it: say which
            sample = replace(sample, error=f"cancelled: the row had stopped ({error})", stopped=stopped or "cancelled")
        with self.changed:
            self.samples[sample.index] = sample
        self.pool.spending.charge(self.row, sample)
        if self.on_sample is not None:
            kept = self.on_sample(self.row, sample)
            if kept is not None:
                with self.changed:
                    self.samples[sample.index] = kept
        if sample.status == "ERR":
            self._stop(f"sample {sample.index}: {sample.error}", sample.stopped, cancel=True)
        elif self.pool.spending.exhausted(self.row):
            self.pool.slots.wake()

    def _wait_idle(self) -> None:
        with self.changed:
            while self.in_flight:
                self.changed.wait()

    def _sorted(self) -> list[SampleResult]:
        return sorted(self.samples.values(), key=lambda s: s.index)

    def _result(self) -> RowResult:
        samples = tuple(self._sorted())
        wall_ms = None if self.began is None else round((time.monotonic() - self.began) * 1000, 3)
        result = _result(self.row, samples, row_verdict.ran(samples, self.error, self.row.pass_rate), self.stopped)
        sampled = sampled_row(self.row, samples, self.extra, self.refused) if self.budget else None
        note = sampled_note(self.row, samples, sampled, self.refused) if sampled else sampling_note(self.row, samples)
        return replace(result, wall_ms=wall_ms, sampling=note, sampled=sampled or sampled_row(self.row, samples))


def sampling_note(row: RowSpec, samples: tuple[SampleResult, ...]) -> str | None:
    """Why an adaptive row stopped where it did (None for a fixed one)."""
    if not row.adaptive:
        return None
    decision = decide(row, samples)
    if decision.decided:
        return decision.why
    return f"undecided at {len(samples)} of max {row.repeat} ({decision.why}): the fixed-k rule decides"


def kept_extra(row: RowSpec, samples: list[SampleResult]) -> int:
    """The extra samples among a resumed budgeted row's kept ones: those past its own stop point (its max,
    or where it was curtailed before; a row decided by its tests took none)."""
    for n in range(1, min(len(samples), row.repeat) + 1):
        decision = decide(row, samples[:n])
        if decision.decided:
            return len(samples) - n if decision.curtailed else 0
    return max(len(samples) - row.repeat, 0)


def sampled_row(
    row: RowSpec, samples: tuple[SampleResult, ...], extra: int = 0, refused: str | None = None
) -> Sampled | None:
    """How an adaptive row's sampling ended (None for a fixed one): decided by its tests, curtailed
    (the answer at its most samples is settled), undecided at its cap (the most it may take), or a
    budgeted row undecided when the budget had no sample left for it (or another reason, ``refused``)."""
    if not row.adaptive:
        return None
    cap = row.most_samples if row.budgeted else None
    decision = decide(row, samples, row.most_samples)
    if decision.decided:
        return Sampled("curtailed" if decision.curtailed else "decided", extra, cap)
    if len(samples) >= row.most_samples:
        return Sampled("cap", extra, cap)
    if extra == 0 and decide(row, samples).decided:
        return Sampled("curtailed", extra, cap)  # the fixed-k answer was settled, and no extra came
    return Sampled("budget" if refused == SPENT else "undecided", extra, cap)


def sampled_note(row: RowSpec, samples: tuple[SampleResult, ...], sampled: Sampled, refused: str | None) -> str:
    """Why a budgeted row stopped where it did, with its extra samples (``sampling_note``'s words)."""
    n, most = len(samples), row.most_samples
    took = f"{sampled.extra} extra sample{'s' if sampled.extra != 1 else ''} from the sample budget"
    decision = decide(row, samples, most)
    if decision.decided:
        return decision.why + (f"; {took}" if sampled.extra else "")
    if sampled.stop == "curtailed":  # at its own stop point, before max: the fixed-k answer is settled
        return f"{decide(row, samples).why}; no extra samples: {refused or SPENT}"
    rule = "the fixed-k rule decides" if n == row.repeat else f"the usual rule on its {n} samples decides"
    if sampled.stop == "cap":
        return f"undecided at its cap of {most} (max {row.repeat} + {most - row.repeat} extra) ({decision.why}): {rule}"
    if sampled.extra:
        return f"undecided after {n} ({decision.why}): {took}, then {refused or SPENT}; {rule}"
    return f"undecided at {n} of max {row.repeat} ({decision.why}); no extra samples: {refused or SPENT}; {rule}"


def crashed_row(row: RowSpec, exc: BaseException) -> RowResult:
    """An ERR result for a row whose execution raised (a bug, an I/O or orchestration
    failure): the run goes on and reports it, instead of losing every other row."""
    if isinstance(exc, OSError) and exc.filename is not None:  # a full disk, a folder gone: not a bug
        return _result(row, (), row_verdict.could_not_run(f"{exc.filename}: {exc.strerror or exc}"), "crashed")
    return _result(row, (), row_verdict.could_not_run(f"internal error: {type(exc).__name__}: {exc}"), "crashed")


def unfinished_row(
    row: RowSpec, samples: tuple[SampleResult, ...], reason: str, stopped: Stop = "crashed"
) -> RowResult:
    """An ERR result for a row its run could not finish (stopped at once, or its orchestration was
    lost), with the samples that did finish: ``--resume`` runs it again."""
    return _result(row, samples, row_verdict.ran(samples, reason), stopped)


def _result(
    row: RowSpec, samples: tuple[SampleResult, ...], verdict: RowVerdict, stopped: Stop | None = None
) -> RowResult:
    mask = redactor(row.redaction, os.environ)  # the fixture's own text is stored too: mask it alike
    return RowResult(
        id=row.id,
        file=row.fixture_id or row.file,
        name=row.name,
        line=row.line,
        status=verdict.status,
        repeat=row.repeat,
        command=tuple(mask.text(arg) for arg in row.argv),
        properties={key: mask.value(value) for key, value in row.properties.items()},
        samples=samples,
        outcomes=row_verdict.outcomes(samples),
        error=mask.optional(verdict.error),
        stopped=stopped,
    )


def row_result(
    row: RowSpec, samples: tuple[SampleResult, ...], verdict: RowVerdict, stopped: Stop | None = None
) -> RowResult:
    """The result of ``row`` with ``samples`` and its ``verdict`` (``verdicts.row``'s), its stored text masked."""
    return _result(row, samples, verdict, stopped)
