"""Flow-run names, tags and artifact keys."""

from __future__ import annotations

from fixtures_core.runs.options import RunOptions
from fixtures_core.spec import FixtureFile, Matrix
from flows.flow.naming import artifact_key, flow_run_name, run_tags


def matrix(*names: str) -> Matrix:
    return Matrix(tuple(FixtureFile(path=f"/abs/{n}", sha256="0", rows=(), identity=n) for n in names))


def test_the_flow_run_is_named_after_the_run_and_its_label() -> None:
    assert flow_run_name("20260101T000000Z-abc123", None) == "20260101T000000Z-abc123"
    assert flow_run_name("20260101T000000Z-abc123", "nightly eu") == "20260101T000000Z-abc123 nightly eu"


def test_tags_are_assay_the_label_extra_tags_and_fixture_names_once_each() -> None:
    options = RunOptions(paths=(), label="nightly")
    tags = run_tags(options, matrix("suites/a.md", "suites/b.md"), ["team-a", "nightly"])
    assert tags == ["assay", "nightly", "team-a", "suites/a.md", "suites/b.md"]


def test_artifact_keys_come_from_the_label_else_the_fixture_files() -> None:
    assert artifact_key(RunOptions(paths=(), label="Nightly EU / v2"), matrix("x.md")) == "nightly-eu-v2"
    assert artifact_key(RunOptions(paths=()), matrix("examples/matrix.md")) == "examples-matrix"
    both = artifact_key(RunOptions(paths=()), matrix("b/two.md", "a/one.md"))
    assert both == "a-one-b-two"  # sorted: the same key whatever the order on the command line


def test_long_artifact_keys_stay_short_and_distinct() -> None:
    many = [f"suites/provider-{i:02d}.md" for i in range(12)]
    first = artifact_key(RunOptions(paths=()), matrix(*many))
    second = artifact_key(RunOptions(paths=()), matrix(*many[:-1]))
    assert len(first) <= 60 and len(second) <= 60 and first != second
    assert set(first) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
