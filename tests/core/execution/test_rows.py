"""Running one logical row: k samples, serially, under one shared time budget.

Real subprocesses (``bash -c``) only. Timeouts are proven by status, message
and dead processes, never by how long they took.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from fixtures_core.analysis.finalize import finalize_rows
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row, run_sample, template_values
from fixtures_core.parsing.builtins import go_arch, go_os, platform_values
from fixtures_core.parsing.parser import parse_file
from fixtures_core.results import RowResult, SampleResult
from fixtures_core.spec import Expectation, MetricSpec, PropertyValue, RowSpec
from tests.processes import gone_soon, is_gone


def q(path: Path) -> str:
    return shlex.quote(str(path))


def shell_row(
    tmp_path: Path,
    script: str,
    *,
    name: str = "row",
    cel: str | None = None,
    exit_code: int = 0,
    repeat: int = 1,
    timeout_s: float = 30.0,
    metrics: Sequence[MetricSpec] = (),
    properties: dict[str, PropertyValue] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    skip: str | None = None,
    skip_command: str | None = None,
    argv: tuple[str, ...] | None = None,
) -> RowSpec:
    return RowSpec(
        file=str(tmp_path / "fixture.md"),
        line=9,
        name=name,
        argv=argv or ("bash", "-c", script),
        expect=Expectation(exit_code=exit_code, cel=cel),
        properties=properties or {},
        env=env or {},
        cwd=cwd,
        timeout_s=timeout_s,
        repeat=repeat,
        metrics=tuple(metrics),
        skip=skip,
        skip_command=skip_command,
    )


@pytest.fixture
def settings(tmp_path: Path) -> RunSettings:
    root = tmp_path / "tmp-root"
    root.mkdir()
    return RunSettings(run_id="run-123", tmp_root=str(root))


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def pid_files() -> Iterator[list[Path]]:
    files: list[Path] = []
    yield files
    for path in files:
        if path.exists() and path.read_text().strip():
            pid = int(path.read_text())
            if not is_gone(pid):
                os.kill(pid, 9)


# --- repeats ------------------------------------------------------------------------------------


def test_repeat_three_runs_three_times_into_one_result(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    counter = tmp_path / "counter"
    row = shell_row(tmp_path, f'echo "$ASSAY_SAMPLE" >> {q(counter)}; echo \'{{"ok": true}}\'', cel="json.ok", repeat=3)
    result = run_row(row, settings, containment)
    assert isinstance(result, RowResult)
    assert lines(counter) == ["0", "1", "2"]
    assert [s.index for s in result.samples] == [0, 1, 2]
    assert [s.status for s in result.samples] == ["PASS", "PASS", "PASS"]
    assert result.status == "PASS"
    assert result.repeat == 3
    assert result.error is None
    assert (result.outcomes.command, result.outcomes.assertions) == ("pass", "pass")


def test_parsed_fixture_row_repeats_and_checks(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    counter = tmp_path / "counter"
    text = f"""---
repeat: 2
---

### command: counter

```yaml
repeat: 3
```

```bash
echo "$ASSAY_SAMPLE" >> {q(counter)}
echo '{{"n": 1}}'
```

- cel: json.n == 1
"""
    (tmp_path / "fixture.md").write_text(text)
    (row,) = parse_file(tmp_path / "fixture.md").rows
    result = run_row(row, settings, containment)
    assert lines(counter) == ["0", "1", "2"]
    assert len(result.samples) == 3
    assert result.status == "PASS"


def test_on_sample_sees_every_sample_in_order(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    seen: list[tuple[str, int]] = []
    row = shell_row(tmp_path, "true", repeat=3)
    run_row(row, settings, containment, on_sample=lambda r, s: seen.append((r.name, s.index)))
    assert seen == [("row", 0), ("row", 1), ("row", 2)]


def test_skipped_row_runs_nothing(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    counter = tmp_path / "counter"
    row = shell_row(tmp_path, f"echo x >> {q(counter)}", repeat=3, skip="not on this OS")
    result = run_row(row, settings, containment)
    assert result.status == "SKIP"
    assert result.samples == ()
    assert not counter.exists()


# --- continue after FAIL, stop after ERR ---------------------------------------------------------------


def test_continues_after_an_ordinary_fail(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    counter = tmp_path / "counter"
    script = f'echo "$ASSAY_SAMPLE" >> {q(counter)}; [ "$ASSAY_SAMPLE" != 0 ]'
    result = run_row(shell_row(tmp_path, script, repeat=3), settings, containment)
    assert lines(counter) == ["0", "1", "2"]
    assert [s.status for s in result.samples] == ["FAIL", "PASS", "PASS"]
    assert result.status == "FAIL"
    assert result.error is None
    assert result.outcomes.command == "fail"


def test_continues_after_a_false_assertion(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    script = 'echo "{\\"ok\\": $([ "$ASSAY_SAMPLE" = 1 ] && echo false || echo true)}"'
    result = run_row(shell_row(tmp_path, script, cel="json.ok", repeat=3), settings, containment)
    assert [s.status for s in result.samples] == ["PASS", "FAIL", "PASS"]
    assert result.status == "FAIL"
    assert result.outcomes.assertions == "fail"


def test_stops_after_a_cel_runtime_error(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    counter = tmp_path / "counter"
    script = f'echo "$ASSAY_SAMPLE" >> {q(counter)}; echo \'{{"a": 1}}\''
    result = run_row(shell_row(tmp_path, script, cel="json.zz == 1", repeat=3), settings, containment)
    assert lines(counter) == ["0"]  # samples 1 and 2 never ran
    assert len(result.samples) == 1
    assert result.samples[0].status == "ERR"
    assert result.samples[0].error == "no such key: zz"
    assert result.status == "ERR"
    assert result.error == "sample 0: no such key: zz"
    assert result.outcomes.assertions == "error"


def test_err_outranks_an_earlier_fail(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    # sample 0 prints {"ok": false} (FAIL), sample 1 prints {} (ERR: no such key), sample 2 never runs
    counter = tmp_path / "counter"
    script = (
        f'echo "$ASSAY_SAMPLE" >> {q(counter)};'
        " if [ \"$ASSAY_SAMPLE\" = 0 ]; then echo '{\"ok\": false}'; else echo '{}'; fi"
    )
    result = run_row(shell_row(tmp_path, script, cel="json.ok", repeat=3), settings, containment)
    assert lines(counter) == ["0", "1"]
    assert [s.status for s in result.samples] == ["FAIL", "ERR"]
    assert result.status == "ERR"
    assert result.error == "sample 1: no such key: ok"


def test_missing_program_is_an_err_row(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    row = shell_row(tmp_path, "", argv=("assay-no-such-program-xyz",), repeat=3)
    result = run_row(row, settings, containment)
    assert result.status == "ERR"
    assert len(result.samples) == 1
    assert result.error == "sample 0: cannot start 'assay-no-such-program-xyz': No such file or directory"
    assert result.stopped is None  # an error, not a stop


# --- command failure outcomes -----------------------------------------------------------------


def test_exit_code_mismatch_leaves_assertions_and_metrics_not_evaluated(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    ms = MetricSpec(name="ms", extract="json.ms", unit="ms", file="fixture.md", line=3)
    row = shell_row(tmp_path, 'echo \'{"ok": true, "ms": 5}\'; exit 4', cel="json.ok", metrics=[ms], repeat=2)
    result = run_row(row, settings, containment)
    assert [s.status for s in result.samples] == ["FAIL", "FAIL"]
    sample = result.samples[0]
    assert sample.command.status == "fail"
    assert sample.command.error == "exit code 4, expected 0"
    assert sample.assertions is not None and sample.assertions.status == "not_evaluated"
    assert sample.metrics["ms"].status == "not_evaluated"
    (final,) = finalize_rows([row], [result])
    assert final.status == "FAIL"
    assert final.outcomes.command == "fail"
    assert final.outcomes.assertions == "not_evaluated"
    assert final.outcomes.metrics == "not_evaluated"
    assert final.metrics["ms"].status == "not_evaluated"


# --- the row's time budget ------------------------------------------------------------------------------


def test_budget_running_out_in_the_first_sample_is_err_and_kills_the_group(
    tmp_path: Path, settings: RunSettings, pid_files: list[Path], containment: Containment
) -> None:
    leader, child, counter = tmp_path / "leader.pid", tmp_path / "child.pid", tmp_path / "counter"
    pid_files += [leader, child]
    script = f"echo x >> {q(counter)}; echo $$ > {q(leader)}; sleep 60 & echo $! > {q(child)}; sleep 30"
    result = run_row(shell_row(tmp_path, script, repeat=3, timeout_s=1), settings, containment)
    assert result.status == "ERR"
    assert len(result.samples) == 1
    assert lines(counter) == ["x"]
    assert result.samples[0].status == "ERR"
    assert result.samples[0].exit_code is None
    assert result.error == "sample 0: timed out: the row's 1s budget ran out (the sample's processes were killed)"
    assert (result.stopped, result.samples[0].stopped) == ("timeout", "timeout")
    assert result.outcomes.command == "error"
    assert gone_soon(int(leader.read_text()))
    assert gone_soon(int(child.read_text()))
    # The same run goes on: another row in the same containment still runs.
    after = run_row(shell_row(tmp_path, "echo ok", name="next", cel='stdout == "ok\\n"'), settings, containment)
    assert after.status == "PASS"


def test_budget_is_shared_by_all_samples(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    # Each sample sleeps 0.6 s; a per-sample 1 s budget would let all three finish.
    counter = tmp_path / "counter"
    row = shell_row(tmp_path, f"echo x >> {q(counter)}; sleep 0.6", repeat=3, timeout_s=1)
    result = run_row(row, settings, containment)
    assert result.status == "ERR"
    assert len(lines(counter)) < 3
    assert result.error is not None and "1s budget ran out" in result.error
    assert result.stopped == "timeout"


# --- cancellation -----------------------------------------------------------------------------------


def test_cancel_kills_the_running_sample_and_ends_the_row_err(
    tmp_path: Path, settings: RunSettings, pid_files: list[Path], containment: Containment
) -> None:
    child, marker, counter = tmp_path / "child.pid", tmp_path / "started", tmp_path / "counter"
    pid_files.append(child)
    script = f"echo x >> {q(counter)}; sleep 60 & echo $! > {q(child)}; echo go > {q(marker)}; wait"
    row = shell_row(tmp_path, script, repeat=3, timeout_s=60)
    box: dict[str, RowResult] = {}
    worker = threading.Thread(target=lambda: box.update(result=run_row(row, settings, containment)))
    worker.start()
    for _ in range(500):  # bounded poll for the marker, not a timing assertion
        if marker.exists():
            break
        time.sleep(0.02)
    assert marker.exists()
    containment.cancel()
    worker.join(timeout=20)
    assert not worker.is_alive()
    result = box["result"]
    assert result.status == "ERR"
    assert len(result.samples) == 1
    assert lines(counter) == ["x"]
    assert result.error is not None and "cancelled" in result.error
    assert (result.stopped, result.samples[0].stopped) == ("cancelled", "cancelled")
    assert gone_soon(int(child.read_text()))


def test_rows_started_after_cancel_run_nothing(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    counter = tmp_path / "counter"
    containment.cancel()
    result = run_row(shell_row(tmp_path, f"echo x >> {q(counter)}", repeat=2), settings, containment)
    assert result.status == "ERR"
    assert result.samples == ()
    assert result.error == "cancelled after 0 of 2 samples"
    assert result.stopped == "cancelled"
    assert not counter.exists()


# --- environment, templates and the per-sample tmpdir ---------------------------------------------------


def test_sample_environment_and_templates(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    log = tmp_path / "log.jsonl"
    script = (
        "import json, os, sys\n"
        "env = {k: os.environ[k] for k in ('ASSAY_RUN_ID', 'ASSAY_ROW', 'ASSAY_SAMPLE', 'ASSAY_TMPDIR', 'MY_VAR')}\n"
        "record = dict(env, argv=sys.argv[1:], isdir=os.path.isdir(env['ASSAY_TMPDIR']))\n"
        f"open({str(log)!r}, 'a').write(json.dumps(record) + '\\n')\n"
    )
    row = shell_row(
        tmp_path,
        "",
        name="env row",
        repeat=2,
        argv=(sys.executable, "-c", script, "{{ .sample }}", "{{ .tmpdir }}", "{{ .model }}", "{{ .name }}"),
        properties={"model": "gpt-x"},
        env={"MY_VAR": "s{{ .sample }}-{{ .model }}"},
    )
    result = run_row(row, settings, containment)
    assert result.status == "PASS", result.error
    records = [json.loads(line) for line in lines(log)]
    assert len(records) == 2
    for index, record in enumerate(records):
        assert record["ASSAY_RUN_ID"] == "run-123"
        assert record["ASSAY_ROW"] == "env row"
        assert record["ASSAY_SAMPLE"] == str(index)
        assert record["MY_VAR"] == f"s{index}-gpt-x"
        assert record["argv"] == [str(index), record["ASSAY_TMPDIR"], "gpt-x", "env row"]
        assert record["isdir"] is True
        assert Path(record["ASSAY_TMPDIR"]).parent == Path(settings.tmp_root or "")
    tmpdirs = [r["ASSAY_TMPDIR"] for r in records]
    assert tmpdirs[0] != tmpdirs[1]  # a fresh one per sample
    assert not any(Path(t).exists() for t in tmpdirs)  # removed afterwards
    assert os.listdir(settings.tmp_root or "") == []


def test_assay_variables_cannot_be_overridden_by_row_env(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    row = shell_row(tmp_path, 'echo "$ASSAY_SAMPLE"', env={"ASSAY_SAMPLE": "99"}, cel='stdout == "0\\n"')
    assert run_row(row, settings, containment).status == "PASS"


def test_files_variable_sees_files_under_the_tmpdir(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    script = 'mkdir -p "$ASSAY_TMPDIR/out"; printf "sample-%s" "$ASSAY_SAMPLE" > "$ASSAY_TMPDIR/out/answer.txt"'
    cel = 'files["out/answer.txt"] == "sample-" + string(sample)'
    result = run_row(shell_row(tmp_path, script, cel=cel, repeat=2), settings, containment)
    assert [s.status for s in result.samples] == ["PASS", "PASS"]


def test_files_do_not_leak_between_samples(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    # Sample 0 writes a file; sample 1 must not see it (its tmpdir is fresh).
    script = '[ "$ASSAY_SAMPLE" = 0 ] && echo x > "$ASSAY_TMPDIR/only0.txt"; true'
    cel = '("only0.txt" in files) == (sample == 0)'
    result = run_row(shell_row(tmp_path, script, cel=cel, repeat=2), settings, containment)
    assert [s.status for s in result.samples] == ["PASS", "PASS"]


def test_cwd_is_templated(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    (tmp_path / "work-gpt").mkdir()
    row = shell_row(tmp_path, "pwd", cwd=str(tmp_path / "work-{{ .model }}"), properties={"model": "gpt"})
    result = run_row(row, settings, containment)
    assert result.samples[0].stdout == f"{tmp_path / 'work-gpt'}\n"


def test_template_values_offer_sample_names(tmp_path: Path) -> None:
    row = shell_row(tmp_path, "", properties={"prompt": "p.txt"})
    values = template_values(row, 3, "/tmp/x")
    folder = str(tmp_path.resolve())
    assert values == {
        "prompt": "p.txt",
        "name": "row",
        "sample": 3,
        "tmpdir": "/tmp/x",
        "sourceDir": folder,
        "CWD": folder,
        "workDir": folder,
        **platform_values(folder),
    }


# --- Gavel's environment: cwd, built-in variables, skip commands ---------------------------


def test_default_cwd_is_the_fixture_folder(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    row = shell_row(tmp_path, "pwd", cel="stdout.trim() == sourceDir && workDir == sourceDir")
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert (sample.status, sample.stdout.strip()) == ("PASS", str(tmp_path.resolve()))


def test_relative_cwd_is_resolved_from_the_fixture_folder(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    (tmp_path / "sub").mkdir()
    row = shell_row(tmp_path, "pwd", cwd="sub", cel='CWD.endsWith("/sub")')
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert (sample.status, sample.stdout.strip()) == ("PASS", str(tmp_path.resolve() / "sub"))


def test_missing_cwd_fails_the_sample_without_running(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    row = shell_row(tmp_path, "touch ran", cwd="nope", cel="true")
    result = run_row(row, settings, containment)
    assert result.status == "FAIL"
    (sample,) = result.samples
    assert (sample.command.status, sample.error) == ("fail", f"cwd {tmp_path.resolve() / 'nope'} does not exist")
    assert sample.assertions is not None and sample.assertions.status == "not_evaluated"
    assert not (tmp_path / "ran").exists()


def test_cwd_expands_variables_from_the_sample_environment(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "fixtures").mkdir()
    row = replace(
        shell_row(tmp_path / "fixtures", "pwd", cwd="$GIT_ROOT_DIR"), file=str(tmp_path / "fixtures" / "f.md")
    )
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert sample.stdout.strip() == str(tmp_path.resolve())


def test_platform_variables_are_in_the_environment_and_cel(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    (tmp_path / ".git").mkdir()
    row = shell_row(
        tmp_path,
        'echo "$GOOS/$GOARCH $GIT_ROOT_DIR $ROOT_DIR"',
        cel='stdout.trim() == GOOS + "/" + GOARCH + " " + GIT_ROOT_DIR + " " + ROOT_DIR && GO_ROOT_DIR == ""',
    )
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    root = str(tmp_path.resolve())
    assert (sample.status, sample.stdout.strip()) == ("PASS", f"{go_os()}/{go_arch()} {root} {root}")


def test_fixture_env_overrides_platform_variables_and_is_visible_to_cel(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    row = shell_row(tmp_path, 'echo "$GOOS"', env={"GOOS": "plan9", "TOKEN": "t"}, cel='TOKEN == "t" && name == "row"')
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert (sample.status, sample.stdout.strip()) == ("PASS", "plan9")


def test_ansi_facts_are_in_cel(tmp_path: Path, settings: RunSettings, containment: Containment) -> None:
    row = shell_row(tmp_path, r"printf '\033[31mred\033[0m\n'", cel='ansi.has_color && ansi.final_text == "red\\n"')
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert sample.status == "PASS", sample.error


@pytest.mark.parametrize(("command", "status"), [("test -d /", "SKIP"), ("test -d /no/such/dir", "PASS")])
def test_skip_command_skips_when_it_exits_zero(
    tmp_path: Path, settings: RunSettings, command: str, status: str, containment: Containment
) -> None:
    row = shell_row(tmp_path, "echo ran", skip_command=command)
    assert run_row(row, settings, containment).status == status


def test_skip_command_runs_in_the_row_cwd_with_its_env(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    (tmp_path / "marker").write_text("")
    row = shell_row(tmp_path, "echo ran", env={"WANT": "marker"}, skip_command='test -f "$WANT"')
    assert run_row(row, settings, containment).status == "SKIP"


def test_template_error_at_run_time_is_an_error_sample(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    row = shell_row(tmp_path, "", argv=("echo", "{{ .m.missing }}"), properties={"m": {"k": 1}})
    sample = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert sample.status == "ERR"
    assert sample.error is not None and "no value for .m.missing" in sample.error


def test_run_sample_removes_its_tmpdir_even_on_error(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    row = shell_row(tmp_path, 'echo "$ASSAY_TMPDIR"; echo notjson', cel="json.a == 1")
    sample: SampleResult = run_sample(row, 0, time.monotonic() + 20, settings, containment)
    assert sample.status == "ERR"
    assert not Path(sample.stdout.splitlines()[0]).exists()


def test_a_property_with_shell_syntax_reaches_a_shell_command_as_one_literal_argument(
    tmp_path: Path, containment: Containment
) -> None:
    marker = tmp_path / "pwned"
    prompt = f"it's x'; touch {marker}; echo '"
    text = f"| Name | Command | Args | prompt |\n|---|---|---|---|\n| q | printf %s | {{{{ .prompt }}}} | {prompt} |\n"
    (tmp_path / "f.md").write_text(text)
    (row,) = parse_file(tmp_path / "f.md").rows
    result = run_row(row, RunSettings(run_id="t"), containment)
    assert result.status == "PASS", result.error
    assert result.samples[0].stdout == prompt
    assert not marker.exists()


# --- the row's clock (an engine that restarts it: Dask) -----------------------------------------------------


def test_an_engine_restarting_the_rows_clock_gives_its_later_samples_the_whole_budget_from_there(
    tmp_path: Path, settings: RunSettings, containment: Containment
) -> None:
    from fixtures_core.execution import row_clock

    row = shell_row(tmp_path, "true", repeat=3, timeout_s=60)
    given: list[float] = []
    arrived: list[float] = []

    def far_away(spec: RowSpec, index: int, deadline: float, scope: Containment) -> SampleResult:
        """A sample that runs elsewhere: its first one gets there 100 s late (its way there is not the row's)."""
        given.append(deadline)
        clock = row_clock.current()
        assert clock is not None  # the row's clock, where its runner runs
        if index == 0:
            arrived.append(time.monotonic() + 100)
            clock.restart(arrived[0])
            clock.restart(arrived[0] + 50)  # once: a second arrival changes nothing
        return run_sample(spec, index, clock.deadline, settings, scope)

    result = run_row(row, settings, containment, sample_runner=far_away)
    assert result.status == "PASS" and len(result.samples) == 3
    first, *later = given
    assert first < arrived[0]  # before it got there: the budget from the row's first slot bounds the way
    assert later == [pytest.approx(arrived[0] + 60)] * 2  # the whole 60 s budget from the arrival, once
    assert row_clock.current() is None  # outside a sample's runner: no row's clock
