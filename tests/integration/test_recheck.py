"""``assay recheck RUN``: a stored run's samples judged again with the fixture files as they are now,
on real runs of real commands, and no sample command started by the recheck."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fixtures_core.records.store import Store
from fixtures_core.runs.options import RunOptions
from fixtures_core.runs.recheck import recheck
from tests.integration.conftest import REPO, WIDE, run_cli
from tests.suites import run_in_process

# Every status, a metric with a threshold and a baseline row, a pass rate, a timeout. Each sample
# appends a line to MARK: the recheck must add none.
CORPUS = """---
repeat: 3
metrics:
  - name: score
    extract: json.score
    unit: points
    aggregate: median
    direction: higher
    baseline: good
    threshold: {{regressionPercent: 10}}
  - name: spent
    extract: json.score * 0.5
    unit: usd
    aggregate: mean
    gate: false
---

| Name | Command | CEL | Pass Rate | Skip | Timeout |
|---|---|---|---|---|---|
| good | `echo x >> {mark}; echo '{{"score": 10}}'` | `json.score > 5` | | | |
| worse | `echo x >> {mark}; echo '{{"score": 6}}'` | `json.score > 5` | | | |
| wrong | `echo x >> {mark}; echo '{{"score": 3}}'` | `json.score > 5` | | | |
| broken | `echo x >> {mark}; echo '{{"score": 10, "s": "x"}}'` | `json.s > 5` | | | |
| exits | `echo x >> {mark}; exit 3` | `true` | | | |
| flaky | `echo x >> {mark}; [ "$ASSAY_SAMPLE" = 1 ] && echo '{{"score": 1}}' \\|\\| echo '{{"score": 9}}'` \
| `json.score > 5` | 0.5 | | |
| skipped | `echo x >> {mark}` | `true` | | true | |
| slow | `echo x >> {mark}; sleep 30` | `true` | | | 1s |
| gated | `echo x >> {mark}` | `true` | | `echo x >> {mark}; false` | |
"""


def write_corpus(folder: Path, text: str = CORPUS) -> tuple[Path, Path]:
    """The corpus fixture in ``folder`` and the marker file its samples append to."""
    mark = folder / "mark.txt"
    fixture = folder / "corpus.md"
    fixture.write_text(text.format(mark=mark))
    return fixture, mark


def marks(mark: Path) -> int:
    return len(mark.read_text().splitlines()) if mark.exists() else 0


def cli(tmp_path: Path, *args: str, out: str = "state") -> tuple[Any, dict[str, Any]]:
    """``assay ARGS --out OUT --json OUT.json`` in its own process; the process and its run document."""
    target = tmp_path / "out.json"
    target.unlink(missing_ok=True)
    done = run_cli([*args, "--out", str(tmp_path / out), "--json", str(target)], cwd=tmp_path, env=WIDE)
    assert "Traceback" not in done.stderr, done.stderr
    return done, json.loads(target.read_text()) if target.exists() else {}


def comparable(document: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The run document with what differs by design set aside: ids, times, the recheck's own mark,
    and each row's evidence path made absolute (a recheck names the source run's files)."""
    document = json.loads(json.dumps(document))
    for key in ("run_id", "started_at", "finished_at", "rechecked"):
        document.pop(key, None)
    document["options"].pop("recheck", None)
    document["options"].pop("engine", None)  # how it ran, not what it found
    for fixture in document["fixtures"]:
        for row in fixture["rows"]:
            if "evidence" in row:
                row["evidence"] = str((run_dir / row["evidence"]).resolve())
    return document


def rows_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for fixture in document["fixtures"] for row in fixture["rows"]}


@pytest.mark.parametrize("example", ["corpus", "matrix", "matrix with --baseline"])
def test_unchanged_fixtures_give_exactly_the_source_runs_verdicts(tmp_path: Path, example: str) -> None:
    gate: tuple[str, ...] = ()
    if example == "corpus":
        fixture, mark = write_corpus(tmp_path)
    else:
        fixture, mark = REPO / "examples" / "matrix.md", tmp_path / "none"
    if example == "matrix with --baseline":
        _first, shipped = cli(tmp_path, str(fixture), "--engine", "local")
        gate = ("--baseline", shipped["run_id"])
    ran, source = cli(tmp_path, str(fixture), "--engine", "local", *gate)
    samples = marks(mark)

    done, rechecked = cli(tmp_path, "recheck", source["run_id"], "--engine", "local", *gate)

    assert done.returncode == ran.returncode, done.stdout + done.stderr
    assert marks(mark) == samples
    assert rechecked["rechecked"] == source["run_id"]
    state = Store(tmp_path / "state")
    assert comparable(rechecked, state.run_dir(rechecked["run_id"])) == comparable(
        source, state.run_dir(source["run_id"])
    )
    if gate:
        assert rechecked["comparison"] == source["comparison"]
    if example == "corpus":  # the corpus does cover every status
        assert {row["status"] for row in rows_of(source).values()} == {"PASS", "FAIL", "ERR", "SKIP"}


def test_a_fixed_assertion_is_judged_on_the_stored_samples_and_no_command_starts(tmp_path: Path) -> None:
    fixture, mark = write_corpus(tmp_path)
    _ran, source = cli(tmp_path, str(fixture), "--engine", "local")
    samples = marks(mark)
    assert rows_of(source)["wrong"]["status"] == "FAIL"
    edited = (
        CORPUS.replace("regressionPercent: 10", "regressionPercent: 80")  # a threshold loosened
        .replace("'{{\"score\": 3}}'` | `json.score > 5`", "'{{\"score\": 3}}'` | `json.score > 2`")
        .replace("| exits | `echo x >> {mark}; exit 3`", "| exits | `echo x >> {mark}; exit 4`")
        .replace("`json.s > 5`", '`json.s == "x"`')
        .replace("| skipped |", "| added | `echo x >> {mark}` | `true` | | | |\n| skipped |")
    )
    write_corpus(tmp_path, edited)
    reports = {flag: tmp_path / name for flag, name in
               (("--html", "r.html"), ("--junit", "r.xml"), ("--summary", "r.md"), ("--frame", "r.csv"))}  # fmt: skip

    done, rechecked = cli(
        tmp_path,
        "recheck",
        source["run_id"],
        "--engine",
        "local",
        *(x for flag, path in reports.items() for x in (flag, str(path))),
    )

    assert marks(mark) == samples, "a recheck started a sample command"
    assert rechecked["rechecked"] == source["run_id"]
    rows = rows_of(rechecked)
    assert rows["wrong"]["status"] == "PASS"  # the fixed assertion, on the samples the run stored
    assert rows_of(source)["worse"]["status"] == "FAIL" and rows["worse"]["status"] == "PASS"  # the threshold
    assert rows["exits"]["status"] == "ERR"
    assert rows["exits"]["error"] == f"changed since {source['run_id']}: the command; run it"
    assert rows["added"]["status"] == "ERR"
    assert rows["added"]["error"] == f"not in {source['run_id']}: run it"
    assert rows["broken"]["status"] == "ERR"  # its first sample erred, so the run took no more
    assert rows["broken"]["error"] == (
        f"{source['run_id']} took 1 of 3 samples ({rows_of(source)['broken']['error']}): run it"
    )
    for name in ("good", "flaky", "skipped", "slow", "gated"):
        assert rows[name]["status"] == rows_of(source)[name]["status"], name
    assert f"rechecked: {source['run_id']}" in done.stdout
    for path in reports.values():
        assert path.is_file() and path.stat().st_size > 0, path
    for report in ("r.html", "r.md"):
        assert f"rechecked: {source['run_id']}" in (tmp_path / report).read_text().replace("`", ""), report
    state = Store(tmp_path / "state")
    assert not (state.run_dir(rechecked["run_id"]) / "evidence").exists(), "a recheck keeps no evidence of its own"


def test_a_sample_whose_output_was_cut_is_not_judged_on_part_of_it(tmp_path: Path) -> None:
    fixture = tmp_path / "cut.md"
    fixture.write_text(
        "| Name | Command | CEL |\n|---|---|---|\n"
        "| long | `printf 'a%.0s' $(seq 1 500); echo DONE` | `exitCode == 0` |\n"
        "| reads | `printf 'a%.0s' $(seq 1 500); echo DONE` | `stdout.contains(\"a\")` |\n"
    )
    state = tmp_path / "state"
    source = run_in_process(fixture, state, capture_limit=100)
    assert all(sample.truncated for row in source.rows for sample in row.samples)

    run = recheck(source.run_id, RunOptions(paths=(), out=str(state))).run

    rows = {row.name: row for row in run.rows}
    assert rows["long"].status == "PASS"  # it reads only the exit code, which was kept whole
    assert rows["reads"].status == "ERR"
    assert rows["reads"].error == (
        "sample 0's stored output was cut at the capture limit: its checks read the output, "
        "which cannot be judged on the whole text: run it"
    )


def runs_in(state: Path) -> list[str]:
    return sorted(p.name for p in (state / "runs").iterdir()) if (state / "runs").is_dir() else []


@pytest.mark.parametrize(
    "damage", ["no run", "not a run folder", "evidence edited", "evidence cut", "bad fixture", "another state folder"]
)
def test_bad_input_is_one_line_naming_the_file_exit_2_and_nothing_written(tmp_path: Path, damage: str) -> None:
    fixture, _mark = write_corpus(tmp_path)
    _ran, source = cli(tmp_path, str(fixture), "--engine", "local")
    state = tmp_path / "state"
    before = runs_in(state)
    evidence = sorted((Store(state).run_dir(source["run_id"]) / "evidence").glob("*good*.jsonl"))[0]
    reference, named = source["run_id"], str(evidence)
    if damage == "no run":
        reference = named = "no-such-run"
    elif damage == "not a run folder":
        folder = tmp_path / "elsewhere"
        folder.mkdir()
        (folder / "notes.txt").write_text("hello\n")
        reference = named = str(folder)
    elif damage == "evidence edited":
        lines = evidence.read_text().splitlines(keepends=True)
        evidence.write_text("".join(lines[1:]))  # a sample's line taken out
    elif damage == "evidence cut":
        evidence.write_text(evidence.read_text()[:-40])  # the row's last line torn
    elif damage == "another state folder":  # its run.json, given as a file, names a run kept elsewhere
        copy = tmp_path / "copy.json"
        shutil.copy(Store(state).run_file(source["run_id"]), copy)
        reference = named = str(copy)
        state = tmp_path / "other"
        before = []
    else:
        fixture.write_text(fixture.read_text().replace("repeat: 3", "repeat: [3"))
        named = str(fixture)

    done, _document = cli(tmp_path, "recheck", reference, "--engine", "local", out=state.name)

    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert named in done.stderr or Path(named).name in done.stderr, done.stderr
    assert runs_in(state) == before, "a refused recheck wrote a run"


def readme_section() -> str:
    text = (REPO / "README.md").read_text()
    start = text.index("## Recheck: judge stored samples again with edited checks")
    return text[start : text.index("\n## ", start + 1)]


def fenced(section: str, language: str) -> list[str]:
    """The bodies of the ``language`` fences of a README section, in order."""
    return re.findall(rf"```{language}\n(.*?)```", section, re.S)


def test_the_readme_worked_example_runs_as_printed(tmp_path: Path, prefect_server: Any) -> None:
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    section = readme_section()
    night, morning, backtest = fenced(section, "bash")
    edit, threshold = fenced(section, "diff")
    matrix = tmp_path / "examples" / "matrix.md"

    def apply(diff: str) -> None:
        removed = [line[1:] for line in diff.splitlines() if line.startswith("-")]
        added = [line[1:] for line in diff.splitlines() if line.startswith("+")]
        text = matrix.read_text()
        for old, new in zip(removed, added, strict=True):
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        matrix.write_text(text)

    def run(block: str) -> subprocess.CompletedProcess[str]:
        (command,) = block.strip().splitlines()
        argv = shlex.split(command)
        assert argv[0] == "assay"
        done = run_cli(argv[1:], cwd=tmp_path, env=WIDE)
        assert "Traceback" not in done.stderr, done.stderr
        return done

    ran = run(night)
    assert ran.returncode == 1 and re.search(r"API low\s+│ FAIL", ran.stdout), ran.stdout
    apply(edit)
    rechecked = run(morning)

    assert rechecked.returncode == 1, rechecked.stdout + rechecked.stderr
    assert re.search(r"API low\s+│ PASS", rechecked.stdout), rechecked.stdout
    assert re.search(r"CLI high\s+│ FAIL", rechecked.stdout), rechecked.stdout
    document = json.loads((tmp_path / ".assay" / "latest.json").read_text())
    source = json.loads(next((tmp_path / ".assay" / "runs").glob("*/started.json")).read_text())["run_id"]
    assert document["rechecked"] == source
    assert "FAIL" in rechecked.stdout.splitlines()[-1]

    apply(threshold)
    tried = run(backtest)
    assert tried.returncode == 0, tried.stdout + tried.stderr
    (shown,) = re.findall(r"```\n(backtest of .*?)```", section, re.S)
    assert tried.stdout == shown.replace("RUN", source), tried.stdout


def test_rows_that_cannot_be_judged_again_say_why(tmp_path: Path) -> None:
    fixture = tmp_path / "rows.md"
    table = (
        "---\nrepeat: 20\n---\n\n| Name | Command | CEL | Sampling | Pass Rate |\n|---|---|---|---|---|\n"
        '| adaptive | `echo no` | `stdout.contains("yes")` | adaptive | 0.5 |\n'
        '| writes | `echo hi > $ASSAY_TMPDIR/out.txt` | `files["out.txt"] == "hi\\n"` | | |\n'
        '| plain | `echo hi` | `stdout == "hi\\n"` | | |\n'
        '| leaks | `echo sk-abcdefghijklmnopqrstuvwxyz` | `stdout.contains("sk-")` | | |\n'
        "| masked, exit code only | `echo sk-abcdefghijklmnopqrstuvwxyz` | `exitCode == 0` | | |\n"
    )
    fixture.write_text(table)
    state = tmp_path / "state"
    source = run_in_process(fixture, state)
    assert {row.name: row.status for row in source.rows} == {
        "adaptive": "FAIL", "writes": "PASS", "plain": "PASS", "leaks": "PASS", "masked, exit code only": "PASS"
    }  # fmt: skip
    took = len(next(row for row in source.rows if row.name == "adaptive").samples)
    assert took < 20  # the adaptive row stopped early: the recheck judges the samples it took
    fixture.write_text(table.replace('contains("yes")', 'contains("no")').replace("`echo hi`", "`echo  hi`"))

    run = recheck(source.run_id, RunOptions(paths=(), out=str(state))).run

    rows = {row.name: row for row in run.rows}
    assert rows["adaptive"].status == "PASS" and len(rows["adaptive"].samples) == took
    assert (rows["adaptive"].sampling or "").startswith(f"rechecked on the {took} samples {source.run_id} took: ")
    assert rows["writes"].status == "ERR"
    assert rows["writes"].error == (
        f"its checks read files, which {source.run_id} did not keep (a sample's tmpdir is gone): run it"
    )
    assert rows["plain"].error == f"changed since {source.run_id}: the command; run it"
    assert rows["leaks"].status == "ERR"  # its check saw the key; the evidence holds [REDACTED]
    assert rows["leaks"].error == (
        "sample 0's stored output was masked ([REDACTED]): its checks read the output, "
        "which cannot be judged on what was masked: run it"
    )
    assert rows["masked, exit code only"].status == "PASS"

    started = Store(state).run_dir(source.run_id) / "started.json"
    record = json.loads(started.read_text())
    del record["produced"]  # a run made before runs recorded what produced their rows
    started.write_text(json.dumps(record))
    older = recheck(source.run_id, RunOptions(paths=(), out=str(state))).run
    assert {row.status for row in older.rows} == {"ERR"}, [row.error for row in older.rows]
    assert {row.error for row in older.rows} == {
        f"{source.run_id} did not record what produced its samples (it ran before recheck existed): run it"
    }


def test_on_the_prefect_engine_a_recheck_is_a_flow_run_with_the_runs_artifacts(
    tmp_path: Path, prefect_server: Any
) -> None:
    from prefect.client.orchestration import get_client
    from prefect.settings import temporary_settings

    from tests.integration.prefect_views import flow_run_named, view

    fixture, mark = write_corpus(tmp_path)
    _ran, source = cli(tmp_path, str(fixture), "--engine", "local", "--label", "nightly")
    samples = marks(mark)

    done, rechecked = cli(tmp_path, "recheck", source["run_id"], "--label", "morning")  # the default engine

    assert done.returncode == 2, done.stdout + done.stderr  # the corpus has ERR rows
    assert marks(mark) == samples, "a recheck started a sample command"
    assert rechecked["rechecked"] == source["run_id"]
    with temporary_settings(updates={"api.url": prefect_server.api_url}), get_client(sync_client=True) as client:
        flow_run = flow_run_named(client, f"{rechecked['run_id']} morning")
        seen = view(client, flow_run.id)
    assert seen.flow_run.state is not None and seen.flow_run.state.is_failed()
    assert rechecked["run_id"] in str(seen.flow_run.state.message)
    assert {"assay-report-morning", "assay-rows-morning", "assay-metrics-morning"} <= set(seen.artifacts)
    assert rows_of(rechecked)["wrong"]["status"] == "FAIL"
    assert not seen.tasks, "a recheck runs no sample task"


def test_a_backtest_names_the_nights_on_which_the_new_check_changes_a_rows_answer(tmp_path: Path) -> None:
    fixture, mark = write_corpus(tmp_path)
    for label in ("nightly", "nightly", "other", "nightly"):
        cli(tmp_path, str(fixture), "--engine", "local", "--label", label)
    state = tmp_path / "state"
    before, samples = runs_in(state), marks(mark)
    write_corpus(tmp_path, CORPUS.replace("`json.score > 5` | | | |\n| worse", "`json.score > 50` | | | |\n| worse"))

    done = run_cli(["recheck", "--label", "nightly", "--last", "14", "--out", str(state)], cwd=tmp_path, env=WIDE)

    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "backtest of 'nightly': the fixture files as they are now, on its last 3 runs"
    assert [line.split()[:2] for line in lines[1:4]] == [["night", "1"], ["night", "2"], ["night", "3"]]
    assert all("then ERR  now ERR" in line for line in lines[1:4]), lines  # the corpus has ERR rows
    assert "'good': would have failed on 3 of 3 nights: runs 1, 2, 3" in lines
    assert marks(mark) == samples, "a backtest started a sample command"
    assert runs_in(state) == before, "a backtest leaves the history as it was"
