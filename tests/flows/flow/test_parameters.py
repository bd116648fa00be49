"""The flow's parameter model: strict, described, and one line per mistake."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from fixtures_core.errors import UsageError
from fixtures_core.runs.options import RunOptions
from flows.flow.parameters import MatrixParameters, ParameterError


def test_every_field_is_described_and_run_id_and_engine_are_not_parameters() -> None:
    schema = MatrixParameters.model_json_schema()
    assert all(field.get("description") for field in schema["properties"].values())
    assert "run_id" not in schema["properties"] and "engine" not in schema["properties"]
    assert schema["additionalProperties"] is False  # the server refuses unknown keys of a custom run


def test_the_flow_takes_each_field_as_its_own_parameter_described_and_bounded_in_prefects_schema() -> None:
    from prefect.utilities.callables import parameter_schema

    from flows.flow.matrix import matrix_flow

    schema = parameter_schema(matrix_flow).model_dump_for_openapi()
    fields = MatrixParameters.model_json_schema()["properties"]
    assert list(schema["properties"]) == list(fields), "one parameter per field, so an override names only itself"
    assert schema["required"] == ["paths"]
    assert schema["properties"]["repeat"]["anyOf"] == fields["repeat"]["anyOf"]  # {"minimum": 1, ...}
    assert all(schema["properties"][name].get("description") for name in fields)


def test_the_flow_stores_its_parameters_as_prefect_would_without_importing_fastapi() -> None:
    """Prefect's own serialization imports FastAPI for its encoder: 0.12 s before every run's first sample."""
    code = """
import json, sys
from pathlib import Path
from prefect import Flow
from fixtures_core.runs.options import RunOptions
from flows.flow.matrix import matrix_flow
from flows.flow.parameters import MatrixParameters
given = MatrixParameters.from_options(RunOptions(paths=("a.md",), k=3, group_by=("arm",)), ("t",)).model_dump()
ours = matrix_flow.serialize_parameters({**given, "odd": Path("x"), "opaque": object()})
print(json.dumps({"fastapi": "fastapi" in sys.modules, "ours": ours}))
print(json.dumps(Flow.serialize_parameters(matrix_flow, {**given, "odd": Path("x"), "opaque": object()})))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    ours, prefects = (json.loads(line) for line in done.stdout.splitlines()[-2:])
    assert ours["fastapi"] is False
    assert ours["ours"] == prefects and prefects["k"] == 3 and prefects["odd"] == "x"
    assert prefects["opaque"] == "<object>"  # a value JSON cannot hold, named by its type


def test_json_parameters_become_prefect_engine_options() -> None:
    parameters = MatrixParameters.parse({"paths": ["a.md"], "group_by": ["arm"], "tolerance": 0, "k": 2})
    assert parameters.to_options() == RunOptions(paths=("a.md",), group_by=("arm",), k=2, engine="prefect")
    options = RunOptions(paths=("a.md",), label="x", engine="local")
    assert MatrixParameters.from_options(options, ("t",)).tags == ["t"]


def test_rows_are_subflow_runs_unless_rows_as_tasks_and_row_subflows_is_accepted_without_effect() -> None:
    """``row_subflows`` was the switch to subflows; deployments that still give it keep working."""
    assert MatrixParameters.parse({"paths": ["a.md"], "rows_as_tasks": True}).to_options().rows_as_tasks is True
    for given in (True, False):
        options = MatrixParameters.parse({"paths": ["a.md"], "row_subflows": given}).to_options()
        assert options == RunOptions(paths=("a.md",), engine="prefect"), given
    shown = MatrixParameters.from_options(RunOptions(paths=("a.md",), rows_as_tasks=True))
    assert shown.rows_as_tasks is True and shown.row_subflows is False


def test_nightly_serves_rows_as_subflow_runs_unless_told_rows_as_tasks() -> None:
    from deployments import nightly

    for argv, as_tasks in ((["a.md"], False), (["a.md", "--rows-as-tasks"], True)):
        parameters = nightly.parameters_of(nightly.parse(argv))
        assert parameters.rows_as_tasks is as_tasks and parameters.to_options().rows_as_tasks is as_tasks, argv


@pytest.mark.parametrize("given", [["F2*", "F5*"], "F2*"], ids=["globs", "one-glob-as-text"])
def test_filter_takes_several_globs_or_one_as_text(given: object) -> None:
    options = MatrixParameters.parse({"paths": ["a.md"], "filter": given, "parallel_samples": True}).to_options()
    assert options.filter == (tuple(given) if isinstance(given, list) else (given,))
    assert options.parallel_samples is True


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"paths": ["a.md"], "repeat": "2"}, "repeat: Input should be a valid integer (got '2')"),
        ({"paths": ["a.md"], "run_id": "../../x"}, "run_id: not a parameter of assay-matrix (known: paths, out,"),
        ({"paths": []}, "paths: List should have at least 1 item after validation, not 0 (got [])"),
        ({}, "paths: required"),
        ({"paths": ["a.md"], "tolerance": 2, "parallel": 0}, "parallel: Input should be greater than or equal to 1"),
    ],
)
def test_bad_values_are_one_line_naming_each_field(values: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError) as raised:
        MatrixParameters.parse(values)
    text = str(raised.value)
    assert text.startswith("invalid flow parameters: ") and message in text and "\n" not in text


@pytest.mark.parametrize(
    ("field", "edge", "beyond"),
    [("repeat", 1, 0), ("k", 1, 0), ("parallel", 1, 0), ("concurrency", 1, 0), ("tolerance", 0.0, -0.01),
     ("tolerance", 1.0, 1.01)],
)  # fmt: skip
def test_the_forms_bounds_are_those_of_run_options_check(field: str, edge: float, beyond: float) -> None:
    """A value at the form's bound passes RunOptions.check; one beyond it fails both."""
    MatrixParameters.parse({"paths": ["a.md"], field: edge}).to_options().check()
    with pytest.raises(ParameterError, match=field):
        MatrixParameters.parse({"paths": ["a.md"], field: beyond})
    with pytest.raises(UsageError):
        replace(RunOptions(paths=("a.md",)), **{field: beyond}).check()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"paths": ["a\x00.md"]}, "paths.0: a control character (U+0000) is not allowed here"),
        ({"paths": ["x" * 300 + ".md"]}, "paths.0: a path component is longer than 255 bytes (a file name's limit)"),
        ({"paths": ["a.md"], "out": "/" + "d/" * 3000}, "out: String should have at most 4096 characters"),
        ({"paths": ["a.md"], "label": "L" * 100_000}, "label: String should have at most 200 characters"),
        ({"paths": ["a.md"], "tags": ["T" * 300_000]}, "tags.0: String should have at most 200 characters"),
        ({"paths": ["a.md"], "tags": ["t"] * 101}, "tags: List should have at most 100 items after validation"),
        ({"paths": ["a.md"], "label": "two\nlines"}, "label: a control character (U+000A) is not allowed here"),
        ({"paths": ["a.md"], "concurrency": 10**6}, "concurrency: Input should be less than or equal to 1000"),
    ],
    ids=["nul", "long-component", "long-path", "100kb-label", "300kb-tag", "many-tags", "newline", "concurrency"],
)
def test_every_parameter_is_bounded_and_a_refusal_quotes_at_most_80_characters(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError) as raised:
        MatrixParameters.parse(values)
    text = str(raised.value)
    assert message in text and "\n" not in text, text
    quoted = text.split(" (got ", 1)[1].removesuffix(")")
    assert len(quoted) <= 80, quoted
    assert len(text) < 400, "a refusal names the value, never echoes it"


def test_a_refusal_cuts_every_long_value_it_quotes_to_80_characters() -> None:
    from flows.flow.parameters import bounded

    tag = "T" * 300_000
    message = bounded(f"refused: tags[0] {tag!r} and {tag}; paths[0] 'a.md'\nnext line", {"tags": [tag]})
    assert "\n" not in message and "'a.md'" in message
    assert max(len(word) for word in message.split()) <= 83  # each cut to 80 characters and an ellipsis


@pytest.mark.parametrize(("field", "beyond"), [("parallel", 1001), ("concurrency", 1001)])
def test_the_forms_upper_bounds_are_those_of_run_options_check(field: str, beyond: int) -> None:
    MatrixParameters.parse({"paths": ["a.md"], field: 1000}).to_options().check()
    with pytest.raises(ParameterError, match=field):
        MatrixParameters.parse({"paths": ["a.md"], field: beyond})
    with pytest.raises(UsageError):
        replace(RunOptions(paths=("a.md",)), **{field: beyond}).check()


@pytest.mark.parametrize(
    ("value", "named"),
    [
        ("nightly\u0085eu", "a control character (U+0085) is not allowed here"),  # NEL: a newline to splitlines
        ("\u009b2Jnightly", "a control character (U+009B) is not allowed here"),  # CSI: an escape sequence
        ("nightly\u202egpj.md", "an invisible format character (U+202E RIGHT-TO-LEFT OVERRIDE) is not allowed here"),
        ("a\u202ab", "an invisible format character (U+202A LEFT-TO-RIGHT EMBEDDING) is not allowed here"),
        ("a\u2066b\u2069", "an invisible format character (U+2066 LEFT-TO-RIGHT ISOLATE) is not allowed here"),
        ("a\u2069", "an invisible format character (U+2069 POP DIRECTIONAL ISOLATE) is not allowed here"),
        ("a\u200fb", "an invisible format character (U+200F RIGHT-TO-LEFT MARK) is not allowed here"),
        ("a\u061cb", "an invisible format character (U+061C ARABIC LETTER MARK) is not allowed here"),
        ("night\u200bly", "an invisible format character (U+200B ZERO WIDTH SPACE) is not allowed here"),
        ("a\ufeff", "an invisible format character (U+FEFF ZERO WIDTH NO-BREAK SPACE) is not allowed here"),
        ("a\u2028b", "a line or paragraph separator (U+2028 LINE SEPARATOR) is not allowed here"),
        ("a\U000e0041", "an invisible format character (U+E0041 TAG LATIN CAPITAL LETTER A) is not allowed here"),
    ],
    ids=["c1-nel", "c1-csi", "rlo", "lre", "lri", "pdi", "rlm", "alm", "zwsp", "bom", "line-separator", "tag-char"],
)
@pytest.mark.parametrize("field", ["label", "tags", "paths", "out", "filter", "baseline"])
def test_c1_controls_bidi_controls_and_invisible_characters_are_refused_in_one_line_naming_them(
    value: str, named: str, field: str
) -> None:
    """What would reach a run name, a tag, a log line or a terminal and act there instead of showing:
    refused naming the field and the character by code point, and quoted escaped, never as itself."""
    from flows.flow.parameters import _not_shown

    listed = field in ("tags", "paths", "filter")
    values = {"paths": ["a.md"], field: [value] if listed else value}
    with pytest.raises(ParameterError) as raised:
        MatrixParameters.parse(values)
    text = str(raised.value)
    assert f"{field}{'.0' if listed else ''}: {named} (got {value!r})" in text, text
    assert not any(_not_shown(char) for char in text), "the refusal never holds the character itself"
    assert len(text.splitlines()) == 1


def test_every_control_separator_and_format_character_is_refused_by_the_flow_and_the_bmps_by_the_schema() -> None:
    """The flow refuses every character of the categories Cc, Cf, Zl and Zp that this Python's Unicode
    database knows; the schema's pattern (what the server checks a custom run against, with Python's re)
    lists the same ones of the Basic Multilingual Plane, and no other."""
    import re
    import unicodedata

    from pydantic import TypeAdapter, ValidationError

    from flows.flow.parameters import _ONE_VISIBLE_LINE, Text

    refused = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) in ("Cc", "Cf", "Zl", "Zp")}
    pattern = re.compile(_ONE_VISIBLE_LINE)
    bmp = {chr(c) for c in range(0x10000) if c < 0xD800 or c > 0xDFFF}
    assert {char for char in bmp if not pattern.search(f"a{char}b")} == refused & bmp
    text = TypeAdapter(Text)
    for char in sorted(refused):
        with pytest.raises(ValidationError):
            text.validate_python(f"a{char}b")
    for kept in ("é", "日本", "🚀", "a b", "a\u00a0b", "a\u0301"):  # letters, an emoji, spaces, a combining mark
        assert text.validate_python(kept) == kept


def test_a_command_line_run_whose_options_a_flow_run_could_not_take_is_one_line_naming_the_options() -> None:
    """``assay run --label ... --tag ...`` on Prefect: the label and tags become the flow run's name and tags."""
    options = RunOptions(paths=("a.md",), label="a\u202eb")
    with pytest.raises(ParameterError) as raised:
        MatrixParameters.from_options(options, ("x\u0085",))
    assert str(raised.value) == (
        "invalid options for a Prefect run: --label: an invisible format character (U+202E RIGHT-TO-LEFT OVERRIDE)"
        " is not allowed here (got 'a\\u202eb'); --tag: a control character (U+0085) is not allowed here (got 'x\\x85')"
    )
