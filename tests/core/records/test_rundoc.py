"""Decoding a run document: a hand-edited field of the wrong type is a RunFileError, not a traceback."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fixtures_core.analysis.finalize import Summary
from fixtures_core.errors import RunFileError
from fixtures_core.records.rundoc import (
    FixtureResult,
    RunResult,
    _decode,
    decode,
    from_document,
    load_run,
    to_document,
)
from fixtures_core.records.shareable import EXCERPT_CHARS
from fixtures_core.records.store import Store
from fixtures_core.results import Check, MetricSummary, MetricValue, Outcomes, RowResult, SampleResult
from tests.core.conftest import ExampleRun
from tests.suites import run_fixture


def small_run() -> RunResult:
    sample = SampleResult(
        index=0,
        status="PASS",
        duration_ms=12.5,
        exit_code=0,
        stdout="",  # a passing sample's output stays in the evidence (records.shareable)
        stderr="",
        command=Check("pass"),
        assertions=Check("pass", expression="json.ms > 0"),
        metrics={"ms": MetricValue("pass", value=5)},
    )
    row = RowResult(
        id="suite.md::alpha",
        file="suite.md",
        name="alpha",
        line=7,
        status="PASS",
        repeat=1,
        command=("agent", "run"),
        properties={"selector": "api:m", "depth": 2, "nested": {"a": [1, "x", True]}},
        samples=(sample,),
        outcomes=Outcomes("pass", "pass", "pass"),
        metrics={
            "ms": MetricSummary(
                unit="ms", aggregate="mean", direction="lower", gate=True, values=(5.0,), status="pass", value=5.0
            )
        },
    )
    return RunResult(
        run_id="20260101-000000-abcd",
        started_at="2026-01-01T00:00:00Z",
        finished_at="2026-01-01T00:00:01Z",
        status="PASS",
        fixtures=(FixtureResult("suite.md", "0" * 64, (row,)),),
        summary=Summary(rows=1, passed=1, failed=0, errored=0, skipped=0, samples=1),
        environment={"python": "3.11", "git": {"dirty": False}},
        options={"k": None, "paths": ["suite.md"]},
    )


@pytest.fixture
def document(tmp_path: Path) -> dict[str, Any]:
    path = Store(tmp_path / ".assay").write_run(small_run())
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_a_valid_document_round_trips_equal(tmp_path: Path, document: dict[str, Any]) -> None:
    assert load_run(write(tmp_path, document)) == small_run()
    assert from_document(to_document(small_run())) == small_run()


def test_why_a_run_row_and_sample_stopped_round_trips_and_older_documents_load_without_it(tmp_path: Path) -> None:
    run = small_run()
    row = run.rows[0]
    sample = replace(row.samples[0], status="ERR", stopped="timeout")
    row = replace(row, status="ERR", samples=(sample,), stopped="timeout")
    run = replace(run, status="ERR", error="interrupted: samples were cancelled", stopped="cancelled",
                  fixtures=(replace(run.fixtures[0], rows=(row,)),))  # fmt: skip
    document = to_document(run)
    keys = list(document)
    assert keys[keys.index("status") :][:3] == ["status", "error", "stopped"]
    assert document["fixtures"][0]["rows"][0]["stopped"] == "timeout"
    assert from_document(document) == run
    # A document written before ``stopped`` existed (this one's form without it) loads with None.
    older = to_document(small_run())
    assert "stopped" not in older and "stopped" not in older["fixtures"][0]["rows"][0]
    assert load_run(write(tmp_path, older)).stopped is None


ROW = "fixtures[0].rows[0]"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["summary"].update(passed="5"), "summary.passed: expected int, got a string '5'"),
        (
            lambda d: d["fixtures"][0]["rows"][0].update(line=7.0),
            f"{ROW}.line: expected int, got float 7.0",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0].update(repeat=True),
            f"{ROW}.repeat: expected int, got a boolean True",
        ),
        (lambda d: d["fixtures"][0]["rows"][0].update(name=3), f"{ROW}.name: expected str, got int 3"),
        (
            lambda d: d["fixtures"][0]["rows"][0]["samples"][0].update(duration_ms="12.5"),
            f"{ROW}.samples[0].duration_ms: expected float, got a string",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0]["samples"][0].update(truncated="no"),
            f"{ROW}.samples[0].truncated: expected bool, got a string 'no'",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0]["metrics"]["ms"].update(gate=1),
            f"{ROW}.metrics.ms.gate: expected bool, got int 1",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0]["metrics"]["ms"]["values"].append("6"),
            f"{ROW}.metrics.ms.values[1]: expected float, got a string",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0]["command"].append(None),
            f"{ROW}.command[2]: expected str, got null None",
        ),
        (
            lambda d: d["fixtures"][0]["rows"][0].update(stopped="later"),
            f"{ROW}.stopped: 'later' is not one of timeout, cancelled, budget, crashed",
        ),
    ],
)
def test_a_field_of_the_wrong_type_is_a_baseline_error(
    tmp_path: Path, document: dict[str, Any], edit: Any, message: str
) -> None:
    edit(document)
    path = write(tmp_path, document)
    with pytest.raises(RunFileError) as caught:
        load_run(path)
    assert str(path) in str(caught.value)
    assert "malformed run document: " + message in str(caught.value)


def _stochastic(d: dict[str, Any]) -> dict[str, Any]:
    stochastic: dict[str, Any] = d["fixtures"][0]["rows"][0].setdefault("stochastic", {"n": 1, "passed": 1, "k": 1})
    return stochastic


@pytest.mark.parametrize(
    ("place", "field"),
    [
        (lambda d: _stochastic(d), f"{ROW}.stochastic.pass_at_k"),
        (lambda d: d["summary"].setdefault("stochastic", {"rows": 1}), "summary.stochastic.pass_at_k"),
        (lambda d: d["fixtures"][0]["rows"][0]["samples"][0], f"{ROW}.samples[0].duration_ms"),
        (lambda d: d["fixtures"][0]["rows"][0]["metrics"]["ms"], f"{ROW}.metrics.ms.value"),
    ],
    ids=["row-pass_at_k", "suite-pass_at_k", "duration", "metric"],
)
@pytest.mark.parametrize(
    ("token", "shown"), [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e999", "Infinity")]
)
def test_a_non_finite_figure_is_refused_naming_its_field(
    tmp_path: Path, document: dict[str, Any], place: Any, field: str, token: str, shown: str
) -> None:
    place(document)[field.rsplit(".", 1)[1]] = "@figure@"
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document).replace('"@figure@"', token), encoding="utf-8")
    with pytest.raises(RunFileError) as caught:
        load_run(path)
    assert str(caught.value) == (
        f"run {path}: malformed run document: {field}: {shown} is not a finite number "
        "(assay writes none: was the file edited?)"
    )


def test_a_non_finite_figure_in_an_evidence_line_is_refused(tmp_path: Path) -> None:
    sample = to_document(small_run())["fixtures"][0]["rows"][0]["samples"][0]
    with pytest.raises(ValueError, match=r"^duration_ms: NaN is not a finite number"):
        decode({**sample, "duration_ms": float("nan")}, SampleResult)


def test_an_int_is_accepted_where_a_float_is_expected(tmp_path: Path, document: dict[str, Any]) -> None:
    document["fixtures"][0]["rows"][0]["samples"][0]["duration_ms"] = 12
    loaded = load_run(write(tmp_path, document))
    duration = loaded.rows[0].samples[0].duration_ms
    assert duration == 12.0 and isinstance(duration, float)


@pytest.mark.parametrize(("value", "hint"), [(True, bool), (3, int), (2.5, float), ("x", str), (3, float)])
def test_scalars_of_the_right_type_decode(value: object, hint: type) -> None:
    decoded = _decode(value, hint)
    assert decoded == value and type(decoded) is hint


@pytest.mark.parametrize("value", ["5", 5, 5.5, True, None, [1], {"a": 1}])
def test_object_and_any_pass_anything_through(value: object) -> None:
    assert _decode(value, object) is value
    assert _decode(value, Any) is value


def test_a_real_run_with_long_output_round_trips_and_keeps_raw_output_apart(tmp_path: Path) -> None:
    fixture = tmp_path / "chatty.md"
    fixture.write_text(
        "| Name | Command | CEL |\n|---|---|---|\n"
        "| passes | `python3 -c \"print('p' * 2000)\"` | `true` |\n"
        "| fails | `python3 -c \"import sys; print('f' * 2000); print('e' * 900, file=sys.stderr)\"` | `false` |\n"
    )
    run = run_fixture(fixture, tmp_path / "state", run_id="run-1")

    assert load_run(Store(tmp_path / "state").run_file("run-1")) == run
    passes, fails = run.rows
    assert (passes.samples[0].stdout, passes.samples[0].excerpted) == ("", True)
    assert fails.samples[0].stdout == "f" * EXCERPT_CHARS and fails.samples[0].stderr == "e" * EXCERPT_CHARS
    # The raw output is one hop away, in the evidence file the row names.
    evidence = tmp_path / "state" / "runs" / "run-1" / str(fails.evidence)
    first = json.loads(evidence.read_text().splitlines()[0])
    assert first["sample"]["stdout"] == "f" * 2000 + "\n"


def test_an_older_document_with_raw_output_loads_in_the_current_form(tmp_path: Path) -> None:
    older = to_document(small_run())
    sample = older["fixtures"][0]["rows"][0]["samples"][0]
    sample["stdout"] = '{"ms": 5, "answer": "a raw answer"}\n'  # assay 0.1 kept every sample's output
    failing = dict(sample, index=1, status="FAIL", stdout="x" * 3000, stderr="short\n")
    older["fixtures"][0]["rows"][0]["samples"].append(failing)

    loaded = load_run(write(tmp_path, older))

    passed, failed = loaded.rows[0].samples
    assert (passed.stdout, passed.excerpted) == ("", True)
    assert (failed.stdout, failed.stderr, failed.excerpted) == ("x" * EXCERPT_CHARS, "short\n", True)
    assert from_document(to_document(loaded)) == loaded  # upgrading is done once: the result is current


def test_blessing_an_older_run_writes_it_in_the_current_form(tmp_path: Path) -> None:
    older = to_document(small_run())
    older["fixtures"][0]["rows"][0]["samples"][0]["stdout"] = "a raw answer\n"
    store = Store(tmp_path / ".assay")
    blessed = store.bless(str(write(tmp_path, older)), "shipped")
    sample = json.loads(blessed.read_text())["fixtures"][0]["rows"][0]["samples"][0]
    assert (sample["stdout"], sample["excerpted"]) == ("", True)


def test_an_ab_suite_run_round_trips(example_run: ExampleRun) -> None:
    run = example_run.run
    assert run.suites and run.suites[0].cases[0].judgments

    assert load_run(Store(example_run.state).run_file(run.run_id)) == run
    document = to_document(run)
    assert list(document)[-2:] == ["summary", "suites"]
    case = document["suites"][0]["cases"][0]
    assert set(case["arms"]["careful"]) >= {"row", "status", "score", "axes", "verify_score"}


def test_the_dask_cluster_a_run_waited_for_round_trips_and_a_run_without_one_has_no_key(tmp_path: Path) -> None:
    from fixtures_core.records.rundoc import DaskCluster
    from fixtures_core.reports import describe

    on_dask = replace(small_run(), dask=DaskCluster("local", 2, 14.25))
    document = to_document(on_dask)
    assert document["dask"] == {"address": "local", "workers": 2, "waited_s": 14.25}
    assert list(document).index("dask") == list(document).index("options") + 1
    assert from_document(document) == on_dask
    assert "dask" not in to_document(small_run())
    assert describe.dask_line(on_dask) == (
        "dask: waited 14.2 s for the cluster (local, 2 workers) before any row started; each row's time budget "
        "began when its first sample reached a worker"
    )
    assert describe.dask_line(small_run()) is None
