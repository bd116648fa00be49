"""Check one finished sample: command expectations, the CEL assertion, metrics.

Per seed 01: when the command expectations fail, the assertion and metric
extraction are ``not_evaluated``; otherwise both run independently on the
same context, so a false assertion keeps its metric values.
"""

from __future__ import annotations

import functools
import math
import operator
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from fixtures_core.cel import (
    EVERY_VALUE,
    CelValue,
    MapReads,
    Program,
    compile_expression,
    conjuncts,
    declarable_properties,
    engine_text,
    map_reads,
    parse_json,
)
from fixtures_core.durations import format_duration
from fixtures_core.execution.ansi import ansi_facts
from fixtures_core.execution.sampling import Execution
from fixtures_core.limits import LimitExceeded
from fixtures_core.parsing.builtins import cel_names
from fixtures_core.results import Check, MetricValue, SampleResult
from fixtures_core.spec import RowSpec
from fixtures_core.text import excerpt
from fixtures_core.verdicts import sample as sample_verdict
from fixtures_core.verdicts.sample import Ran

FILES_LIMIT = 1024 * 1024
# What ``files`` holds in all: hard links or copies of one large file would otherwise multiply memory.
FILES_TOTAL_LIMIT = 64 * 1024 * 1024
_EXCERPT = 120
_ANSI_WORD = re.compile(r"\bansi\b")
# Not "process group": containment stops a sample's cgroup, process group and token-marked processes alike.
_KILLED = "the sample's processes were killed"
_CEL_TYPES = {bool: "bool", str: "string", bytes: "bytes", bytearray: "bytes", list: "list", dict: "map"}


@dataclass(frozen=True)
class RowPrograms:
    """A row's compiled expressions (compiled once per process, cached)."""

    assertion: Program | None
    indeterminate: Program | None
    metrics: Mapping[str, Program]
    clauses: tuple[Program, ...] = ()  # the assertion's top-level ``&&`` operands, when it has two or more

    @property
    def uses_json(self) -> bool:
        return any(p.uses_json for p in self._all())

    @property
    def uses_files(self) -> bool:
        return self.files_reads is not None

    @property
    def files_reads(self) -> MapReads | None:
        """Which values of ``files`` the row's expressions can read (None when none names ``files``)."""
        found = [reads for p in self._all() if (reads := map_reads(p.expression, "files")) is not None]
        return None if not found else functools.reduce(operator.or_, found)

    @property
    def uses_ansi(self) -> bool:
        return any(_ANSI_WORD.search(p.expression) for p in self._all())

    def _all(self) -> list[Program]:
        found = [p for p in (self.assertion, self.indeterminate) if p is not None]
        return found + list(self.metrics.values())


def row_programs(row: RowSpec) -> RowPrograms:
    """Compile every expression of a row (raises CelError; validation reports it first)."""
    names = cel_names(row)
    clauses = conjuncts(row.expect.cel) if row.expect.cel else []
    return RowPrograms(
        assertion=compile_expression(row.expect.cel, names) if row.expect.cel else None,
        indeterminate=compile_expression(row.indeterminate, names) if row.indeterminate else None,
        metrics={m.name: compile_expression(m.extract, names) for m in row.metrics},
        clauses=tuple(compile_expression(c, names) for c in clauses) if len(clauses) > 1 else (),
    )


def check_sample(
    row: RowSpec,
    index: int,
    execution: Execution,
    tmpdir: str,
    names: Mapping[str, object] | None = None,
    extra: Mapping[str, object] | None = None,
) -> SampleResult:
    """Turn a finished execution into a sample result; ``names`` are the row's CEL names and values
    besides the sample's own (env variables, properties, built-ins, in rising precedence); ``extra``
    adds variables of the sample's own (an A/B attempt's evidence)."""
    stdout = execution.stdout.decode("utf-8", errors="replace")
    stderr = execution.stderr.decode("utf-8", errors="replace")
    ran = Ran(index, round(execution.duration_ms, 3), execution.exit_code, stdout, stderr, execution.truncated)
    process_error = _process_error(row, execution)
    if process_error is not None:
        return sample_verdict.process_failed(ran, process_error, execution.stopped)
    command_failure = _command_failure(row, execution.exit_code, stdout, stderr)
    programs = row_programs(row)
    if command_failure is not None:
        assertion_text = row.expect.cel if programs.assertion else None
        return sample_verdict.command_failed(ran, command_failure, assertion_text, list(programs.metrics))
    context = _context(row, index, stdout, stderr, execution, programs, names)
    unreadable = None
    if programs.files_reads is not None:
        files = read_files(tmpdir, reads=programs.files_reads)
        context["files"] = files.texts
        unreadable = files.error
    context.update(extra or {})
    not_json = _not_json(stdout) if programs.uses_json and "json" not in context else ""
    if execution.truncated:
        not_json += " (stdout was cut at the capture limit)"
    assertion = _assert(programs.assertion, context, not_json, programs.clauses) if programs.assertion else None
    metrics = {name: _extract(name, program, context, not_json, index) for name, program in programs.metrics.items()}
    indeterminate = _indeterminate(programs.indeterminate, context, not_json)
    errors = [str(c.error) for c in (assertion, indeterminate) if c is not None and c.status == "error"]
    if unreadable is not None:  # what the checks saw of ``files`` is incomplete: no verdict on it
        errors.append(unreadable)
    # A non-gating metric (gate: false) never fails or errors a row: its error stays on its value only.
    gating = {m.name for m in row.metrics if m.gate}
    errors += [f"metric {name}: {m.error}" for name, m in metrics.items() if m.status == "error" and name in gating]
    undecided = indeterminate is not None and indeterminate.status == "pass"
    return sample_verdict.checked(ran, assertion, metrics, errors, undecided)


def _process_error(row: RowSpec, execution: Execution) -> str | None:
    if execution.timed_out:
        return f"timed out: the row's {format_duration(row.timeout_s)} budget ran out ({_KILLED})"
    if execution.cancelled:
        return f"cancelled ({_KILLED})"
    return execution.error


def missing_cwd_sample(row: RowSpec, index: int, cwd: str) -> SampleResult:
    """A sample whose working directory does not exist: its command expectation failed (as in Gavel), it never ran."""
    ran = Ran(index, 0.0, None, "", "")
    reason = f"cwd {cwd} does not exist"
    return sample_verdict.command_failed(ran, reason, row.expect.cel, [m.name for m in row.metrics])


def dry_run_sample(row: RowSpec, index: int, reason: str) -> SampleResult:
    """A sample a dry run did not run (nothing to prepare, or the command not started)."""
    return sample_verdict.not_run(Ran(index, 0.0, None, "", ""), reason, row.expect.cel, [m.name for m in row.metrics])


def _command_failure(row: RowSpec, exit_code: int | None, stdout: str, stderr: str) -> str | None:
    expect = row.expect
    if exit_code != expect.exit_code:
        return f"exit code {exit_code}, expected {expect.exit_code}"
    for stream, actual, wanted, golden in (
        ("stdout", stdout, expect.stdout, expect.stdout_file),
        ("stderr", stderr, expect.stderr, expect.stderr_file),
    ):
        if wanted is None:
            continue
        if golden is not None:  # a golden file is compared exactly, as Gavel does
            if actual != wanted:
                return f"{stream} {excerpt(actual, _EXCERPT)!r} differs from golden file {golden}"
        # A table cell cannot hold a trailing newline, so trailing newlines are not compared.
        elif actual.rstrip("\r\n") != wanted.rstrip("\r\n"):
            return f"{stream} {excerpt(actual, _EXCERPT)!r} is not the expected {excerpt(wanted, _EXCERPT)!r}"
    return None


def _context(
    row: RowSpec,
    index: int,
    stdout: str,
    stderr: str,
    execution: Execution,
    programs: RowPrograms,
    names: Mapping[str, object] | None,
) -> dict[str, object]:
    declared = declarable_properties(cel_names(row))
    values = names if names is not None else row.properties
    context: dict[str, object] = {name: value for name, value in values.items() if name in declared}
    context.update(
        {
            "stdout": stdout,
            "output": stdout,
            "stderr": stderr,
            "exitCode": execution.exit_code if execution.exit_code is not None else -1,
            "duration_ms": execution.duration_ms,
            "sample": index,
            "properties": dict(row.properties),
        }
    )
    if programs.uses_ansi:
        context["ansi"] = ansi_facts(stdout, stderr)
    if programs.uses_json:
        parsed = _parse_observation(stdout)
        if parsed is not None:
            context["json"] = parsed
    return context


def _not_json(stdout: str) -> str:
    """Why ``json`` is missing from a sample's context (the error path only: it parses again)."""
    try:
        parse_json(stdout.strip())
    except LimitExceeded as exc:
        return f"stdout is {exc}"
    except ValueError:
        pass
    return f"stdout is not a JSON object or array: {excerpt(stdout, _EXCERPT)!r}"


def _parse_observation(stdout: str) -> object | None:
    text = stdout.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        parsed = parse_json(text)
    except ValueError:  # LimitExceeded too: _not_json says which
        return None
    return parsed if isinstance(parsed, (dict, list)) else None


@dataclass(frozen=True)
class SampleFiles:
    """The files a sample wrote under its tmpdir: path -> text (as the engine takes it, ``cel.engine_text``),
    and path -> why it could not be read."""

    texts: dict[str, object]
    unreadable: dict[str, str]
    left_out: int = 0  # files not read because ``files`` already held its total
    total: int = FILES_TOTAL_LIMIT

    @property
    def error(self) -> str | None:
        """The sample's error when a file or folder could not be read, naming the first few, or when
        the files together are more than ``files`` holds."""
        if self.left_out:
            return (
                f"files: the sample's files hold more than {self.total / (1024 * 1024):g} MiB in all; "
                f"{self.left_out} file(s) left out, so files is incomplete"
            )
        if not self.unreadable:
            return None
        named = [f"{path} ({why})" for path, why in sorted(self.unreadable.items())]
        more = f" and {len(named) - 3} more" if len(named) > 3 else ""
        return f"files: cannot read {', '.join(named[:3])}{more}, so files is incomplete"


def read_files(
    root: str, limit: int = FILES_LIMIT, total: int = FILES_TOTAL_LIMIT, reads: MapReads = EVERY_VALUE
) -> SampleFiles:
    """Text of the regular files a sample wrote under its tmpdir, each capped at ``limit`` bytes and
    all together at ``total`` (the files beyond it are counted in ``left_out``, never read).

    Only the files whose text the row's expressions can read (``reads``) are read: every other one is
    there as a key (its text is never seen, so it is held as ""), and its size or a failure to read it
    changes nothing. A file read costs memory twice (the text here, and the engine's copy of it while
    an expression runs): reading only what is read keeps a sample that writes much but checks one
    file small.

    A FIFO, socket or device is not a file with text (reading it could block or never end) and a
    dangling symlink or a file deleted meanwhile is not there: none is in ``texts``. A file or
    folder that is there and cannot be read is in ``unreadable``, never dropped without a word.
    """
    found: dict[str, object] = {}
    unreadable: dict[str, str] = {}

    def note(path: str, exc: OSError) -> None:
        unreadable[os.path.relpath(path, root)] = exc.strerror or type(exc).__name__

    def note_folder(exc: OSError) -> None:
        if not isinstance(exc, FileNotFoundError):  # a folder deleted meanwhile is not there
            note(os.fsdecode(exc.filename) if exc.filename is not None else root, exc)

    held, left_out = 0, 0
    for folder, _dirs, names in os.walk(root, onerror=note_folder):
        for name in names:
            path = os.path.join(folder, name)
            try:
                status = os.stat(path)
                if not stat.S_ISREG(status.st_mode):
                    continue
                if not reads.wants(os.path.relpath(path, root)):
                    found[os.path.relpath(path, root)] = ""
                    continue
                if held + min(status.st_size, limit) > total:
                    left_out += 1
                    continue
                with open(path, "rb") as handle:
                    data = handle.read(min(limit, total - held))
            except FileNotFoundError:
                continue  # a dangling symlink, or deleted since it was listed
            except OSError as exc:
                note(path, exc)
                continue
            held += len(data)
            found[os.path.relpath(path, root)] = engine_text(data)
    return SampleFiles(found, unreadable, left_out, total)


def _evaluate(program: Program, context: Mapping[str, object], not_json: str) -> CelValue:
    """Evaluate; ``not_json`` is the message when the expression needs ``json`` and stdout is not JSON."""
    result = program.evaluate(context)
    if result.error == "no value for 'json'":
        return CelValue(error=not_json)
    return result


def _assert(program: Program, context: Mapping[str, object], not_json: str, clauses: tuple[Program, ...] = ()) -> Check:
    """The assertion's outcome; a false one names its first false top-level ``&&`` clause."""
    result = _evaluate(program, context, not_json)
    if result.error is not None:
        return Check("error", result.error, program.expression)
    if not isinstance(result.value, bool):
        return Check("error", f"must be true or false, got {result.value!r}", program.expression)
    if result.value:
        return Check("pass", None, program.expression)
    return Check("fail", _false_clause(program, clauses, context), program.expression)


def _false_clause(program: Program, clauses: tuple[Program, ...], context: Mapping[str, object]) -> str | None:
    """What made a false assertion false: ``clause N of M is false: TEXT`` for the first clause that is
    false on its own (evaluated in order, as ``&&`` would: a later clause may rely on an earlier one,
    e.g. ``has(json.a) && json.a > 1``), then, for a comparison, what each side was (``json.a was
    "medium"``); a single comparison says only the latter."""
    if not clauses:
        return program.seen(context)
    for number, clause in enumerate(clauses, 1):
        if clause.evaluate(context).value is False:
            seen = clause.seen(context)
            return f"clause {number} of {len(clauses)} is false: {clause.expression}" + (f"; {seen}" if seen else "")
    return None


def _indeterminate(program: Program | None, context: Mapping[str, object], not_json: str) -> Check | None:
    if program is None:
        return None
    result = _assert(program, context, not_json)
    if result.status == "error":
        return Check("error", f"indeterminate: {result.error}", program.expression)
    return result


def _extract(name: str, program: Program, context: Mapping[str, object], not_json: str, index: int) -> MetricValue:
    result = _evaluate(program, context, not_json)
    if result.error is not None:
        return MetricValue("error", error=f"sample {index}: {program.expression} failed: {result.error}")
    value = result.value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = "null" if value is None else f"{_CEL_TYPES.get(type(value), type(value).__name__)} {value!r}"
        return MetricValue("error", error=f"sample {index}: {program.expression} gave {shown}, not a number")
    if not math.isfinite(value):
        return MetricValue("error", error=f"sample {index}: {program.expression} gave {value}, not a finite number")
    return MetricValue("pass", value=float(value) if isinstance(value, float) else value)
