"""Properties of the run-document loader, for any file content: a RunResult or one RunFileError.

A saved run or a baseline may be hand-edited, truncated or hostile. Hypothesis
writes arbitrary JSON, and real run documents with a random part replaced;
loading gives a RunResult or a RunFileError naming the file, and a document
that loads can be compared and reported (terminal, Markdown, HTML, JUnit)
without any other exception; its JUnit XML is well formed.
"""

from __future__ import annotations

import contextlib
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from fixtures_core.analysis.baseline import compare
from fixtures_core.errors import AssayError, RunFileError
from fixtures_core.records.rundoc import RunResult, load_run, to_document
from fixtures_core.reports import markdown, terminal
from fixtures_core.reports.html import html
from fixtures_core.reports.junit import junit
from tests.core.records.test_rundoc import small_run

JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
        st.sampled_from(["PASS", "FAIL", "ERR", "SKIP", "pass", "error", "assay.run/v1", "mean", "lower"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def loads_or_names_the_file(path: Path) -> RunResult | None:
    try:
        return load_run(path)
    except RunFileError as exc:
        assert str(path) in str(exc)
        assert "\n" not in str(exc)
        return None


def paths_in(document: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, as key paths."""
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += paths_in(value, (*prefix, key))
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += paths_in(value, (*prefix, index))
    return found


def replaced(document: Any, path: tuple[Any, ...], value: object) -> Any:
    if not path:
        return value
    copy = json.loads(json.dumps(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copy


@SETTINGS
@given(JSON)
def test_any_json_gives_a_run_or_a_baseline_error(tmp_path: Path, value: object) -> None:
    path = tmp_path / "any.json"
    path.write_text(json.dumps(value))
    loads_or_names_the_file(path)


@SETTINGS
@given(st.binary(max_size=200))
def test_any_bytes_give_a_run_or_a_baseline_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "any.json"
    path.write_bytes(data)
    loads_or_names_the_file(path)


VALID = to_document(small_run())
PLACES = paths_in(VALID)


@SETTINGS
@given(st.sampled_from(PLACES), JSON)
def test_a_run_with_any_part_replaced_loads_compares_and_reports_or_is_refused(
    tmp_path: Path, place: tuple[Any, ...], value: object
) -> None:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(replaced(VALID, place, value)))
    loaded = loads_or_names_the_file(path)
    if loaded is None:
        return
    good = small_run()
    for baseline, current in ((loaded, good), (good, loaded)):
        with contextlib.suppress(AssayError):  # a RunFileError or UsageError is a clean refusal
            compare(baseline, current, 0.0, str(path))
    terminal.render(loaded, Console(file=io.StringIO(), width=200))
    terminal.render_history([path], Console(file=io.StringIO(), width=200))
    markdown.render(loaded, path)
    html(loaded)
    ET.fromstring(junit(loaded))


def test_a_control_character_in_a_row_name_still_gives_well_formed_junit(tmp_path: Path) -> None:
    # Found by the property above: place=("fixtures", 0, "rows", 0, "name"), value="\x1f".
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(replaced(VALID, ("fixtures", 0, "rows", 0, "name"), "\x1f")))
    ET.fromstring(junit(load_run(path)))


def test_the_unedited_document_loads(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(VALID))
    assert load_run(path) == small_run()
