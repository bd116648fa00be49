"""Check a stored row again: the row's checks as the fixture has them now, on the samples a run
stored, without starting any command (``assay recheck``).

A stored sample keeps what its process left (exit code, the captured streams, its time), so the
checks (``execution.checks.check_sample``) can run on it again; ``verdicts.sample`` and
``verdicts.row`` decide, as in a run. What cannot be checked again is ERR and says why:

* a row new in the file (not in the run), or one whose samples another command produced (its
  command, template values, env or working folder changed: ``execution.produced``);
* a row whose checks read ``files`` (a sample's tmpdir is gone once it ends);
* a row with a sample whose output was cut at the capture limit, or masked (``redaction``: the
  checks saw the secret), when its checks read a stream (stdout, stderr, ``json``, ``ansi``, an
  exact stdout or stderr): they would be judged on part of it, or on other text.

A sample whose process gave no answer (a timeout, a cancellation, a command that could not start,
a missing working folder) stays as it was: no check changes that. An adaptive row is checked on the
samples it took, and its sampling note says so.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import replace

from fixtures_core.errors import CelError
from fixtures_core.execution.checks import check_sample, row_programs
from fixtures_core.execution.produced import changed_parts, produced_by
from fixtures_core.execution.rows import row_result, sample_setting, sampled_row, sampling_note
from fixtures_core.execution.sampling import Execution
from fixtures_core.parsing.template import TemplateError
from fixtures_core.redaction import MASK, redactor
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import RowSpec
from fixtures_core.verdicts import row as row_verdict

_STREAM_NAMES = re.compile(r"\b(stdout|stderr|output|json|ansi)\b")


def recheck_row(spec: RowSpec, stored: RowResult | None, recorded: dict[str, str] | None, source: str) -> RowResult:
    """``spec``'s result on the samples of ``stored`` (its raw row in run ``source``, None when the run has
    no such row); ``recorded``: what produced them (None when the run kept no record of it)."""
    if spec.error is not None:
        return row_result(spec, (), row_verdict.could_not_run(spec.error), "configuration")
    if stored is None:
        return row_result(spec, (), row_verdict.could_not_run(f"not in {source}: run it"))
    why = _not_checkable(spec, stored, recorded, source)
    if why is not None:
        return replace(row_result(spec, stored.samples, row_verdict.could_not_run(why)), evidence=stored.evidence)
    if not stored.samples:  # it ran no sample (skipped, a daemon that did not start): as it ended
        return stored
    with tempfile.TemporaryDirectory(prefix="assay-recheck-") as tmpdir:  # never written: ``tmpdir``'s value
        samples = tuple(_recheck_sample(spec, sample, tmpdir, source) for sample in stored.samples)
    stop = stored.error if stored.stopped is not None else _first_error(samples)
    if stop is None and not spec.adaptive and len(samples) < spec.repeat:
        stop = f"{source} took {len(samples)} of {spec.repeat} samples ({stored.error or 'it stopped'}): run it"
    result = row_result(spec, samples, row_verdict.ran(samples, stop, spec.pass_rate), stored.stopped)
    note = sampling_note(spec, samples)
    if note is not None:
        note = f"rechecked on the {len(samples)} samples {source} took: {note}"
    sampled = sampled_row(spec, samples, stored.sampled.extra if stored.sampled else 0)
    return replace(result, wall_ms=stored.wall_ms, sampling=note, sampled=sampled, evidence=stored.evidence)


def _not_checkable(spec: RowSpec, stored: RowResult, recorded: dict[str, str] | None, source: str) -> str | None:
    if recorded is None:
        return f"{source} did not record what produced its samples (it ran before recheck existed): run it"
    changed = changed_parts(recorded, produced_by(spec))
    if changed:
        return f"changed since {source}: the {', '.join(changed)}; run it"
    try:
        programs = row_programs(spec)
    except CelError:
        return None  # the samples say it, as in a run
    if programs.uses_files:
        return f"its checks read files, which {source} did not keep (a sample's tmpdir is gone): run it"
    if not _reads_streams(spec):
        return None
    cut = [s.index for s in stored.samples if s.truncated]
    if cut:
        return (
            f"sample {cut[0]}'s stored output was cut at the capture limit: its checks read the output, "
            "which cannot be judged on the whole text: run it"
        )
    masked = [s.index for s in stored.samples if MASK in s.stdout or MASK in s.stderr]
    if masked:  # its checks saw the secret the evidence holds as MASK
        return (
            f"sample {masked[0]}'s stored output was masked ({MASK}): its checks read the output, "
            "which cannot be judged on what was masked: run it"
        )
    return None


def _reads_streams(spec: RowSpec) -> bool:
    """The row's checks read a captured stream (all of them read only the exit code, time and values else)."""
    expect = spec.expect
    if expect.stdout is not None or expect.stderr is not None:
        return True
    expressions = [expect.cel or "", spec.indeterminate or "", *(m.extract for m in spec.metrics)]
    return any(_STREAM_NAMES.search(text) for text in expressions)


def _recheck_sample(spec: RowSpec, sample: SampleResult, tmpdir: str, source: str) -> SampleResult:
    if sample.command.status == "error" or sample.exit_code is None:
        return sample  # its process gave no answer (or never started): no check changes that
    try:
        values, env, _cwd = sample_setting(spec, sample.index, tmpdir, source)
    except TemplateError:
        return sample  # (what produced it is unchanged: it rendered when it ran)
    execution = Execution(
        sample.exit_code,
        sample.stdout.encode("utf-8", errors="surrogateescape"),
        sample.stderr.encode("utf-8", errors="surrogateescape"),
        sample.duration_ms,
        truncated=sample.truncated,
    )
    checked = check_sample(spec, sample.index, execution, tmpdir, values)
    return redactor(spec.redaction, env).sample(checked)


def _first_error(samples: tuple[SampleResult, ...]) -> str | None:
    errored = next((s for s in samples if s.status == "ERR"), None)
    return None if errored is None else f"sample {errored.index}: {errored.error}"
