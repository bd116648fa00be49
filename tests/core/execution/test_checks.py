"""Checking one sample: command expectations, the CEL assertion, metric extraction.

Executions come from real processes where the process matters; where only the
check matters, an ``Execution`` value is written out directly (it is a plain
record of what a process did). CEL is always the real engine.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.cel import EVERY_VALUE, MapReads
from fixtures_core.execution import checks
from fixtures_core.execution.checks import (
    SampleFiles,
    check_sample,
    dry_run_sample,
    missing_cwd_sample,
    read_files,
    row_programs,
)
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.execution.sampling import Execution, execute
from fixtures_core.reports import describe
from fixtures_core.results import MetricValue, SampleResult
from fixtures_core.spec import Expectation, MetricSpec, PropertyValue, RowSpec


def metric(name: str, extract: str) -> MetricSpec:
    return MetricSpec(name=name, extract=extract, unit="u", file="f.md", line=2)


def make_row(
    *,
    cel: str | None = None,
    exit_code: int = 0,
    stdout: str | None = None,
    stderr: str | None = None,
    metrics: Sequence[MetricSpec] = (),
    properties: dict[str, PropertyValue] | None = None,
    indeterminate: str | None = None,
    timeout_s: float = 90.0,
) -> RowSpec:
    return RowSpec(
        file="f.md",
        line=7,
        name="row",
        argv=("agent",),
        expect=Expectation(exit_code=exit_code, stdout=stdout, stderr=stderr, cel=cel),
        properties=properties or {},
        metrics=tuple(metrics),
        indeterminate=indeterminate,
        timeout_s=timeout_s,
    )


def ran(stdout: str = "", stderr: str = "", exit_code: int | None = 0, **extra: object) -> Execution:
    return Execution(exit_code, stdout.encode(), stderr.encode(), 12.5, **extra)  # type: ignore[arg-type]


def check(row: RowSpec, execution: Execution, tmpdir: str = "/nonexistent", index: int = 0) -> SampleResult:
    return check_sample(row, index, execution, tmpdir)


# --- command expectations ------------------------------------------------------------------


def test_exit_code_mismatch_fails_and_skips_assertion_and_metrics() -> None:
    row = make_row(cel="json.ok == true", metrics=[metric("tokens", "json.n")])
    sample = check(row, ran('{"ok": true, "n": 5}', exit_code=1))
    assert sample.status == "FAIL"
    assert sample.command.status == "fail"
    assert sample.command.error == "exit code 1, expected 0"
    assert sample.assertions is not None
    assert sample.assertions.status == "not_evaluated"
    assert sample.assertions.expression == "json.ok == true"
    assert sample.metrics == {"tokens": MetricValue("not_evaluated")}
    assert sample.error == "exit code 1, expected 0"


def test_expected_nonzero_exit_code_passes() -> None:
    sample = check(make_row(exit_code=2), ran(exit_code=2))
    assert sample.status == "PASS"
    assert sample.command.status == "pass"
    assert sample.assertions is None


def test_exact_stdout_ignores_trailing_newlines_only() -> None:
    assert check(make_row(stdout="hello"), ran("hello\n")).status == "PASS"
    failed = check(make_row(stdout="hello"), ran("hello world\n"))
    assert failed.status == "FAIL"
    assert failed.command.error == "stdout 'hello world' is not the expected 'hello'"


def test_exact_stderr_is_checked() -> None:
    failed = check(make_row(stderr="warn"), ran("", "boom\n"))
    assert failed.status == "FAIL"
    assert failed.command.error == "stderr 'boom' is not the expected 'warn'"


def test_long_stdout_is_excerpted_in_the_message() -> None:
    failed = check(make_row(stdout="x"), ran("y" * 500))
    assert failed.command.error is not None
    assert "y" * 120 + "…" in failed.command.error
    assert "y" * 121 not in failed.command.error


# --- process errors ---------------------------------------------------------------------------


def test_timed_out_execution_is_an_error_naming_the_budget() -> None:
    sample = check(make_row(timeout_s=90), ran(exit_code=None, timed_out=True))
    assert sample.status == "ERR"
    assert sample.command.status == "error"
    assert sample.error == "timed out: the row's 1m30s budget ran out (the sample's processes were killed)"


def test_cancelled_execution_is_an_error() -> None:
    sample = check(make_row(), ran(exit_code=None, cancelled=True))
    assert sample.status == "ERR"
    assert sample.error == "cancelled (the sample's processes were killed)"


def test_execution_that_could_not_start_is_an_error() -> None:
    execution = execute(["assay-no-such-program-xyz"], deadline=time.monotonic() + 10)
    sample = check(make_row(cel="true"), execution)
    assert sample.status == "ERR"
    assert sample.error is not None and sample.error.startswith("cannot start 'assay-no-such-program-xyz'")


# --- CEL assertion -----------------------------------------------------------------------------


def test_true_assertion_passes() -> None:
    sample = check(make_row(cel='json.state == "completed"'), ran('{"state": "completed"}'))
    assert sample.status == "PASS"
    assert sample.assertions is not None and sample.assertions.status == "pass"


def test_false_assertion_fails_without_an_error_and_says_what_was_seen() -> None:
    sample = check(make_row(cel='json.state == "completed"'), ran('{"state": "failed"}'))
    assert (sample.status, sample.error) == ("FAIL", None)  # a false check, not an error
    assert sample.assertions is not None
    assert sample.assertions.status == "fail"
    assert sample.assertions.error == 'json.state was "failed"'  # the literal side is in the expression
    assert describe.sample_reason(sample) == 'CEL assertion false (json.state was "failed")'


def test_a_false_comparison_of_two_values_reports_both_sides() -> None:
    sample = check(make_row(cel="json.used <= json.budget.tokens"), ran('{"used": 1200, "budget": {"tokens": 1000}}'))
    assert sample.assertions is not None
    assert sample.assertions.error == "json.used was 1200, json.budget.tokens was 1000"


def test_the_reasoning_effort_clause_names_the_value_it_saw() -> None:
    cel = 'exitCode == 0 && json.controls.reasoningEffort.observed.value == "low"'
    seen = '{"controls": {"reasoningEffort": {"observed": {"value": "medium"}}}}'
    sample = check(make_row(cel=cel), ran(seen))
    assert sample.assertions is not None
    assert sample.assertions.error == (
        'clause 2 of 2 is false: json.controls.reasoningEffort.observed.value == "low"; '
        'json.controls.reasoningEffort.observed.value was "medium"'
    )


def test_a_false_expression_that_is_no_comparison_says_nothing_more() -> None:
    for cel, out in (("json.ok", '{"ok": false}'), ("!json.ok", '{"ok": true}'), ('"a" in json.tags', '{"tags": []}')):
        sample = check(make_row(cel=cel), ran(out))
        assert sample.assertions is not None and sample.status == "FAIL"
        assert sample.assertions.error == ("json.tags was []" if " in " in cel else None), cel
    assert sample.error is None


def test_a_false_conjunction_names_its_first_false_clause() -> None:
    cel = 'exitCode == 0 && json.state == "completed" && json.n > 3'
    sample = check(make_row(cel=cel), ran('{"state": "failed", "n": 1}'))
    assert (sample.status, sample.error) == ("FAIL", None)
    assert sample.assertions is not None
    assert sample.assertions.error == 'clause 2 of 3 is false: json.state == "completed"; json.state was "failed"'
    assert describe.sample_reason(sample) == (
        'CEL assertion false (clause 2 of 3 is false: json.state == "completed"; json.state was "failed")'
    )


def test_clauses_are_checked_in_order_so_a_guard_protects_the_next() -> None:
    sample = check(make_row(cel="has(json.n) && json.n > 3"), ran('{"a": 1}'))
    assert sample.assertions is not None and sample.assertions.error == "clause 1 of 2 is false: has(json.n)"


def test_a_conjunction_under_or_is_not_split() -> None:
    sample = check(make_row(cel="exitCode == 1 || exitCode == 2 && true"), ran("{}"))
    assert sample.assertions is not None and (sample.assertions.status, sample.assertions.error) == ("fail", None)


def test_missing_key_is_an_error_not_false() -> None:
    sample = check(make_row(cel="json.zz == 1"), ran('{"a": 1}'))
    assert sample.status == "ERR"
    assert sample.assertions is not None
    assert sample.assertions.status == "error"
    assert sample.assertions.error == "no such key: zz"
    assert sample.error == "no such key: zz"


def test_non_boolean_assertion_is_an_error() -> None:
    sample = check(make_row(cel="json.a"), ran('{"a": 1}'))
    assert sample.status == "ERR"
    assert sample.error == "must be true or false, got 1"


def test_json_use_on_non_json_stdout_says_so_and_shows_stdout() -> None:
    sample = check(make_row(cel="json.a == 1"), ran("Traceback: boom\n"))
    assert sample.status == "ERR"
    assert sample.error == "stdout is not a JSON object or array: 'Traceback: boom'"


def test_json_scalar_stdout_is_not_an_observation() -> None:
    sample = check(make_row(cel="json == 42"), ran("42\n"))
    assert sample.status == "ERR"
    assert sample.error is not None and "not a JSON object or array" in sample.error


def test_truncated_json_says_it_was_cut() -> None:
    sample = check(make_row(cel="json.a == 1"), ran('{"a": 1, "b": "xxxx', truncated=True))
    assert sample.status == "ERR"
    assert sample.truncated is True
    assert sample.error is not None and "cut at the capture limit" in sample.error


def test_json_array_stdout_is_parsed() -> None:
    assert check(make_row(cel="size(json) == 2 && json[1].x == 2"), ran('[{"x": 1}, {"x": 2}]')).status == "PASS"


def test_text_assertions_do_not_need_json() -> None:
    row = make_row(cel='stdout.contains("ready") && output == stdout && stderr == "w\\n" && exitCode == 0')
    assert check(row, ran("not json, ready\n", "w\n")).status == "PASS"


def test_context_has_sample_duration_and_properties() -> None:
    row = make_row(
        cel='sample == 4 && duration_ms > 12.0 && selector == "api:x" && properties.selector == "api:x"',
        properties={"selector": "api:x"},
    )
    assert check(row, ran(), index=4).status == "PASS"
    assert check(row, ran(), index=3).status == "FAIL"


def test_json_ints_and_floats_compare_across_types() -> None:
    assert check(make_row(cel="json.x == 1 && json.y == 2"), ran('{"x": 1.0, "y": 2}')).status == "PASS"


def test_invalid_utf8_output_is_replaced_not_fatal() -> None:
    execution = Execution(0, b"ok \xff\n", b"", 1.0)
    sample = check(make_row(cel='stdout.startsWith("ok")'), execution)
    assert sample.status == "PASS"
    assert sample.stdout == "ok \ufffd\n"


# --- metric extraction ----------------------------------------------------------------------------


def test_json_is_parsed_for_metrics_without_any_assertion() -> None:
    row = make_row(metrics=[metric("tokens", "json.usage.tokens"), metric("ms", "json.ms")])
    sample = check(row, ran('{"usage": {"tokens": 1234}, "ms": 56.5}'))
    assert sample.status == "PASS"
    assert sample.assertions is None
    assert sample.metrics["tokens"] == MetricValue("pass", value=1234)
    assert isinstance(sample.metrics["tokens"].value, int)
    assert sample.metrics["ms"].status == "pass"
    assert sample.metrics["ms"].value == pytest.approx(56.5)


def test_false_assertion_keeps_its_metric_values() -> None:
    row = make_row(cel='json.state == "completed"', metrics=[metric("ms", "json.ms")])
    sample = check(row, ran('{"state": "failed", "ms": 812}'))
    assert sample.status == "FAIL"
    assert sample.metrics["ms"] == MetricValue("pass", value=812)


def test_metric_can_use_text_and_properties() -> None:
    row = make_row(metrics=[metric("len", "size(stdout) * factor")], properties={"factor": 2})
    assert check(row, ran("abcd")).metrics["len"].value == 8


@pytest.mark.parametrize(
    ("extract", "stdout", "shown"),
    [
        ("json.v", '{"v": null}', "gave null, not a number"),
        ("json.v", '{"v": true}', "gave bool True, not a number"),
        ("json.v", '{"v": "12"}', "gave string '12', not a number"),
        ("json.v", '{"v": [1]}', "gave list [1], not a number"),
        ("json.v", '{"v": NaN}', "gave nan, not a finite number"),
        ('double("NaN")', "{}", "gave nan, not a finite number"),
        ('double("Infinity")', "{}", "gave inf, not a finite number"),
        ("-1.0 / 0.0", "{}", "gave -inf, not a finite number"),
        ("json.zz", '{"v": 1}', "failed: no such key: zz"),
    ],
)
def test_metric_errors_name_metric_sample_and_what_came_back(extract: str, stdout: str, shown: str) -> None:
    row = make_row(metrics=[metric("tokens", extract)])
    sample = check(row, ran(stdout), index=2)
    assert sample.status == "ERR"
    value = sample.metrics["tokens"]
    assert value.status == "error"
    assert value.value is None
    assert value.error == f"sample 2: {extract} {shown}"
    assert sample.error == f"metric tokens: sample 2: {extract} {shown}"


def test_metric_on_non_json_stdout_says_so() -> None:
    sample = check(make_row(metrics=[metric("ms", "json.ms")]), ran("plain text"))
    assert sample.status == "ERR"
    assert sample.metrics["ms"].error == "sample 0: json.ms failed: stdout is not a JSON object or array: 'plain text'"


def test_assertion_and_metric_errors_are_both_reported() -> None:
    row = make_row(cel="json.missing", metrics=[metric("ms", "json.ms")])
    sample = check(row, ran('{"ms": null}'))
    assert sample.status == "ERR"
    assert sample.error == "no such key: missing; metric ms: sample 0: json.ms gave null, not a number"


def test_non_gating_metric_error_is_recorded_but_never_errors_the_sample() -> None:
    cost = replace(metric("cost", "json.cost"), gate=False)
    row = make_row(cel="json.ok", metrics=[metric("ms", "json.ms"), cost])
    sample = check(row, ran('{"ok": true, "ms": 7}'), index=1)
    assert sample.status == "PASS"
    assert sample.error is None
    assert sample.metrics["ms"] == MetricValue("pass", value=7)
    assert sample.metrics["cost"] == MetricValue("error", error="sample 1: json.cost failed: no such key: cost")


def test_non_gating_metric_error_keeps_a_false_assertion_a_fail() -> None:
    row = make_row(cel="json.ok", metrics=[replace(metric("cost", "json.cost"), gate=False)])
    sample = check(row, ran('{"ok": false}'))
    assert sample.status == "FAIL"
    assert sample.error is None
    assert sample.metrics["cost"].status == "error"


def test_gating_metric_error_still_errors_beside_a_non_gating_one() -> None:
    row = make_row(metrics=[metric("ms", "json.ms"), replace(metric("cost", "json.cost"), gate=False)])
    sample = check(row, ran("{}"))
    assert sample.status == "ERR"
    assert sample.error == "metric ms: sample 0: json.ms failed: no such key: ms"


def test_row_with_a_failing_non_gating_metric_runs_every_sample_and_passes(
    tmp_path: Path, containment: Containment
) -> None:
    script = 'import json; print(json.dumps({"ok": True, "ms": 3}))'
    cost = replace(metric("cost", "json.cost"), gate=False)
    row = replace(
        make_row(cel="json.ok", metrics=[metric("ms", "json.ms"), cost]),
        argv=(sys.executable, "-c", script),
        repeat=3,
    )
    result = run_row(row, RunSettings(run_id="run-1", tmp_root=str(tmp_path)), containment)
    assert result.status == "PASS"
    assert result.error is None
    assert [s.status for s in result.samples] == ["PASS", "PASS", "PASS"]
    assert [s.metrics["cost"].status for s in result.samples] == ["error", "error", "error"]
    assert [s.metrics["ms"].value for s in result.samples] == [3, 3, 3]


def test_one_bad_metric_does_not_discard_the_good_one() -> None:
    row = make_row(metrics=[metric("good", "json.a"), metric("bad", "json.b")])
    sample = check(row, ran('{"a": 3, "b": "x"}'))
    assert sample.metrics["good"] == MetricValue("pass", value=3)
    assert sample.metrics["bad"].status == "error"


# --- indeterminate ---------------------------------------------------------------------------------


def test_indeterminate_marks_the_sample_without_changing_its_status() -> None:
    row = make_row(cel="json.ok", indeterminate='json.reason == "rate_limited"')
    marked = check(row, ran('{"ok": true, "reason": "rate_limited"}'))
    assert marked.status == "PASS" and marked.indeterminate is True
    plain = check(row, ran('{"ok": true, "reason": "none"}'))
    assert plain.status == "PASS" and plain.indeterminate is False


def test_indeterminate_error_is_an_error() -> None:
    sample = check(make_row(indeterminate="json.zz == 1"), ran("{}"))
    assert sample.status == "ERR"
    assert sample.error == "indeterminate: no such key: zz"


# --- files ---------------------------------------------------------------------------------------


def test_files_variable_sees_what_the_sample_wrote(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "answer.txt").write_text("42\n")
    (tmp_path / "top.json").write_text('{"a": 1}')
    row = make_row(cel='files["out/answer.txt"] == "42\\n" && size(files) == 2', metrics=[metric("n", "size(files)")])
    sample = check(row, ran(), tmpdir=str(tmp_path))
    assert sample.status == "PASS"
    assert sample.metrics["n"].value == 2


def test_read_files_caps_each_file(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"a" * 5000)
    (tmp_path / "small.txt").write_bytes(b"bb")
    assert read_files(str(tmp_path), limit=1000).texts == {"big.txt": "a" * 1000, "small.txt": "bb"}


def test_read_files_skips_fifos_instead_of_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "result.txt").write_text("done")
    box: dict[str, SampleFiles] = {}
    reader = threading.Thread(target=lambda: box.update(found=read_files(str(tmp_path))), daemon=True)
    reader.start()
    reader.join(timeout=10)
    if reader.is_alive():  # unblock the reader so the test process can exit
        with open(tmp_path / "pipe", "w"):
            pass
        pytest.fail("read_files blocked on a FIFO")
    assert box["found"] == SampleFiles({"result.txt": "done"}, {})  # a FIFO holds no text: not a file of files


def test_a_file_that_cannot_be_read_makes_the_sample_an_error(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("done")
    # Reading /proc/self/mem from offset 0 fails with EIO, whoever runs the test (root too).
    (tmp_path / "mem").symlink_to("/proc/self/mem")
    row = make_row(cel='files["result.txt"] == "done" && files.all(k, k == "mem" || files[k] != "")')
    sample = check(row, ran(), tmpdir=str(tmp_path))
    # The assertion held over what was read, but what was read is not all there is: no verdict.
    assert sample.status == "ERR"
    assert sample.error == "files: cannot read mem (Input/output error), so files is incomplete"
    assert sample.assertions is not None and sample.assertions.status == "pass"


def test_a_file_no_expression_reads_is_a_key_whatever_its_text(tmp_path: Path) -> None:
    (tmp_path / "result.txt").write_text("done")
    (tmp_path / "mem").symlink_to("/proc/self/mem")  # unreadable: never read, since nothing reads its text
    row = make_row(cel='files["result.txt"] == "done" && "mem" in files && size(files) == 2')
    assert check(row, ran(), tmpdir=str(tmp_path)).status == "PASS"


def test_only_the_files_an_expression_reads_are_read_and_held(tmp_path: Path) -> None:
    """One small result and 100 hard links to a 1 MiB file: 100 MiB, more than ``files`` holds in all."""
    (tmp_path / "result.txt").write_text("done")
    original = tmp_path / "big.bin"
    original.write_bytes(b"\xff" * 1024 * 1024)
    for number in range(99):
        os.link(original, tmp_path / f"link-{number:02}.bin")
    reads_one = make_row(
        cel='files["result.txt"] == "done" && size(files) == 101', metrics=[metric("n", "size(files)")]
    )
    sample = check(reads_one, ran(), tmpdir=str(tmp_path))
    assert sample.status == "PASS" and sample.metrics["n"].value == 101
    found = read_files(str(tmp_path), reads=row_programs(reads_one).files_reads)  # type: ignore[arg-type]
    assert found.texts["result.txt"] == "done" and found.texts["big.bin"] == "" and found.left_out == 0
    # Reading every text (a computed key) holds them all: past the total, the sample is ERR as before.
    reads_all = make_row(cel='files.all(k, files[k] != "")')
    assert check(reads_all, ran(), tmpdir=str(tmp_path)).error == (
        "files: the sample's files hold more than 64 MiB in all; 37 file(s) left out, so files is incomplete"
    )  # 64 of the 1 MiB files fit, and result.txt (4 bytes) before them or after: 101 - 64 = 37


def test_a_non_ascii_text_reaches_cel_as_the_same_string(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_bytes("héllo 😀".encode() + b"\xff")  # an undecodable byte is U+FFFD
    row = make_row(cel='files["out.txt"] == "héllo 😀\\ufffd" && files["out.txt"].size() == 8', metrics=[
        metric("n", 'files["out.txt"].size()')])  # fmt: skip
    sample = check(row, ran(), tmpdir=str(tmp_path))
    assert sample.status == "PASS" and sample.metrics["n"].value == 8


def test_a_folder_that_cannot_be_listed_is_named(tmp_path: Path) -> None:
    # 20 nested folders of 250 characters: the deepest path is past PATH_MAX, so it cannot be listed.
    folder = os.open(tmp_path, os.O_RDONLY)
    for _ in range(20):
        os.mkdir("d" * 250, dir_fd=folder)
        inner = os.open("d" * 250, os.O_RDONLY, dir_fd=folder)
        os.close(folder)
        folder = inner
    os.close(os.open("lost.txt", os.O_WRONLY | os.O_CREAT, dir_fd=folder))
    os.close(folder)
    (tmp_path / "top.txt").write_text("t")
    found = read_files(str(tmp_path))
    assert found.texts == {"top.txt": "t"}
    [(path, why)] = found.unreadable.items()
    assert path.startswith("d" * 250 + "/") and why == "File name too long"


def test_a_dangling_symlink_is_no_file_and_no_error(tmp_path: Path) -> None:
    (tmp_path / "gone").symlink_to(tmp_path / "never-written")
    (tmp_path / "result.txt").write_text("done")
    assert read_files(str(tmp_path)) == SampleFiles({"result.txt": "done"}, {})
    assert check(make_row(cel="size(files) == 1"), ran(), tmpdir=str(tmp_path)).status == "PASS"


def test_row_programs_know_what_context_they_need() -> None:
    assert row_programs(make_row(cel="stdout == ''")).uses_json is False
    assert row_programs(make_row(cel="stdout == ''")).uses_files is False
    assert row_programs(make_row(metrics=[metric("m", "json.a")])).uses_json is True
    assert row_programs(make_row(cel="has(files.x)")).uses_files is True
    assert row_programs(make_row(metrics=[metric("n", "size(files)")])).uses_files is True
    both = make_row(cel='files["a.txt"] != ""', metrics=[metric("n", "size(files)"), metric("m", "files.log.size()")])
    assert row_programs(both).files_reads == MapReads(keys=frozenset(["a.txt", "log"]))
    assert row_programs(make_row(cel='files["a"] != "" && files.exists(k, files[k] == "")')).files_reads == EVERY_VALUE


def test_a_property_named_like_files_does_not_read_files(monkeypatch: pytest.MonkeyPatch) -> None:
    row = make_row(cel='profiles == "default" && myfiles == 2', properties={"profiles": "default", "myfiles": 2})
    assert row_programs(row).uses_files is False

    def never(root: str) -> SampleFiles:
        raise AssertionError(f"read_files({root!r}) called")

    monkeypatch.setattr(checks, "read_files", never)
    assert check(row, ran(), tmpdir="/nonexistent").status == "PASS"


def test_a_real_process_checked_end_to_end(tmp_path: Path) -> None:
    script = 'import json; print(json.dumps({"state": "completed", "ms": 41.5}))'
    execution = execute([sys.executable, "-c", script], deadline=time.monotonic() + 20)
    row = make_row(cel='json.state == "completed"', metrics=[metric("ms", "json.ms")])
    sample = check(row, execution, tmpdir=str(tmp_path))
    assert sample.status == "PASS"
    assert sample.exit_code == 0
    assert sample.metrics["ms"].value == pytest.approx(41.5)


# --- hostile observations ----------------------------------------------------------------------


def test_stdout_json_nested_too_deep_is_an_error_that_says_so() -> None:
    depth = 10_000  # past Python's recursion limit: once a RecursionError that lost the sample
    sample = check(make_row(cel="json.size() > 0"), ran("[" * depth + "]" * depth))
    assert sample.status == "ERR"
    assert sample.error == "stdout is JSON nested deeper than 256 levels"


def test_a_metric_beyond_a_double_is_an_extraction_error_of_that_sample() -> None:
    sample = check(make_row(metrics=[metric("m", "json.m")]), ran('{"m": 1' + "0" * 400 + "}"))
    assert sample.status == "ERR"
    assert sample.metrics["m"].status == "error"
    assert sample.metrics["m"].error == "sample 0: json.m gave inf, not a finite number"


# --- samples that never ran ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("never_ran", "status", "command", "reason"),
    [
        (lambda row: dry_run_sample(row, 3, "dry run"), "SKIP", "not_evaluated", "dry run"),
        (lambda row: missing_cwd_sample(row, 3, "/nowhere"), "FAIL", "fail", "cwd /nowhere does not exist"),
    ],
)
def test_a_sample_that_never_ran_checks_nothing_and_says_why(
    never_ran: Callable[[RowSpec], SampleResult], status: str, command: str, reason: str
) -> None:
    row = make_row(cel="json.ok", metrics=[metric("tokens", "json.n")])

    sample = never_ran(row)

    assert (sample.index, sample.status, sample.passed, sample.error) == (3, status, False, reason)
    assert (sample.command.status, sample.command.error) == (command, reason)
    assert sample.assertions is not None and sample.assertions.status == "not_evaluated"
    assert sample.metrics == {"tokens": MetricValue("not_evaluated")}
    assert (sample.exit_code, sample.duration_ms, sample.stdout, sample.stderr) == (None, 0.0, "", "")


def test_read_files_holds_at_most_its_total_and_says_what_it_left_out(tmp_path: Path) -> None:
    """One 1 MiB file and 99 hard links to it: ``files`` would hold 100 MiB without a total."""
    original = tmp_path / "big.txt"
    original.write_bytes(b"x" * 1024 * 1024)
    for number in range(99):
        os.link(original, tmp_path / f"link-{number:02}.txt")
    found = read_files(str(tmp_path), total=10 * 1024 * 1024)
    assert len(found.texts) == 10 and sum(len(text) for text in found.texts.values()) == 10 * 1024 * 1024
    assert found.left_out == 90
    assert found.error == (
        "files: the sample's files hold more than 10 MiB in all; 90 file(s) left out, so files is incomplete"
    )
