"""The CEL wrapper (``fixtures_core.cel``): compile, evaluate, errors as values, JSON numbers."""

from __future__ import annotations

import math

import pytest
from google.protobuf.wrappers_pb2 import StringValue

from fixtures_core.cel import (
    EVERY_VALUE,
    CelValue,
    MapReads,
    compile_expression,
    conjuncts,
    declarable_properties,
    engine_text,
    map_reads,
    parse_json,
)
from fixtures_core.errors import CelError
from fixtures_core.limits import MAX_STDOUT_JSON_DEPTH, LimitExceeded


def context(json: object = None, **extra: object) -> dict[str, object]:
    """A sample context as the checks build it (stdout empty unless given)."""
    stdout = str(extra.pop("stdout", ""))
    values: dict[str, object] = {
        "stdout": stdout,
        "output": stdout,
        "stderr": "",
        "exitCode": 0,
        "duration_ms": 12.5,
        "sample": 0,
        "files": {},
        "properties": {},
    }
    if json is not None:
        values["json"] = json
    values.update(extra)
    return values


def evaluate(expression: str, ctx: dict[str, object], properties: tuple[str, ...] = ()) -> CelValue:
    return compile_expression(expression, properties).evaluate(ctx)


# --- evaluation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        ("json.x == 1", {"x": 1.0}),  # cross-type numeric equality: double 1.0 == int 1
        ("json.x == 1.0", {"x": 1}),
        ("json.x < 2", {"x": 1.5}),
        ("json.n >= 2.5 && json.n <= 3", {"n": 3}),
    ],
)
def test_numbers_compare_across_int_and_double(expression: str, json: object) -> None:
    assert evaluate(expression, context(json)) == CelValue(value=True)


def test_false_is_a_value_not_an_error() -> None:
    assert evaluate("json.x == 2", context({"x": 1})) == CelValue(value=False)


def test_missing_key_is_an_error_value_with_a_clean_message() -> None:
    assert evaluate("json.zz == 1", context({"x": 1})) == CelValue(error="no such key: zz")


def test_missing_nested_key_names_the_first_missing_key() -> None:
    assert evaluate("json.a.b.c == 1", context({"a": {"x": 1}})).error == "no such key: b"


def test_selecting_a_field_of_a_number_is_a_clean_error() -> None:
    result = evaluate("json.n.x == 1", context({"n": 3}))
    assert result.error == "cannot select a field: the value is not a map"


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("1 / json.zero == 1", "divide by zero"),
        ("int(json.s) == 1", "cannot convert string to int"),
        ('json.x + "a" == "b"', "no matching overload for _+_("),
        ('stdout.matches("[")', "invalid regular expression"),
    ],
)
def test_runtime_errors_come_back_as_values_without_status_text(expression: str, message: str) -> None:
    result = evaluate(expression, context({"zero": 0, "s": "x", "x": 1}))
    assert result.error is not None
    assert message in result.error
    assert "INVALID_ARGUMENT" not in result.error
    assert "NOT_FOUND" not in result.error


def test_json_absent_from_the_context_is_reported_by_name() -> None:
    # The checks turn this into "stdout is not a JSON object or array".
    assert evaluate("json.x == 1", context()).error == "no value for 'json'"


def test_optional_result_is_an_error_value_not_an_exception() -> None:
    result = evaluate("json.?a.b", context({"a": {"b": 1}}))
    assert result.error is not None
    assert "optional value (optional.of(1))" in result.error
    assert ".orValue(" in result.error


@pytest.mark.parametrize(
    ("expression", "json"),
    [
        ('"a,b".split(",").size() == 2', {}),  # strings extension
        ('"Hello".lowerAscii() == "hello"', {}),
        ("math.greatest(1, 2) == 2", {}),  # math extension
        ("math.least([3, 1, 2]) == 1", {}),
        ("json.?y.orValue(3) == 3", {"x": 1}),  # optional extension: y is missing
        ("json.?x.orValue(3) == 1", {"x": 1}),
        ('json.usage["in"] == 7', {"usage": {"in": 7}}),
        ("has(json.x) && !has(json.y)", {"x": 1}),
        ("json.items.all(i, i > 0) && json.items.exists(i, i == 2)", {"items": [1, 2, 3]}),
    ],
)
def test_extensions_and_macros(expression: str, json: object) -> None:
    assert evaluate(expression, context(json)) == CelValue(value=True)


def test_builtin_variables_are_declared() -> None:
    ctx = context({"ok": True}, stdout="hi\n", exitCode=3, sample=2, files={"out.txt": "x"})
    expression = (
        'stdout == "hi\\n" && output == stdout && stderr == "" && exitCode == 3 && sample == 2 '
        '&& files["out.txt"] == "x" && duration_ms > 12.0 && json.ok'
    )
    assert evaluate(expression, ctx) == CelValue(value=True)


def test_user_properties_are_top_level_variables_and_under_properties() -> None:
    ctx = context(selector="api:x", properties={"selector": "api:x", "cli args": "-v"})
    expression = 'selector == "api:x" && properties.selector == selector && properties["cli args"] == "-v"'
    assert evaluate(expression, ctx, ("selector", "cli args")) == CelValue(value=True)


def test_property_names_that_are_not_identifiers_exist_only_under_properties() -> None:
    with pytest.raises(CelError):
        compile_expression("cli_args == 1", ("cli args",))
    assert declarable_properties(["cli args", "x-y", "1st", "ok_name"]) == frozenset({"ok_name"})


@pytest.mark.parametrize("name", ["in", "null", "true", "json", "stdout", "exitCode", "int", "type", "string", "map"])
def test_reserved_builtin_and_type_names_are_not_declared(name: str) -> None:
    assert name not in declarable_properties([name])


@pytest.mark.parametrize("name", ["type", "int", "string", "list", "bool"])
def test_a_property_named_like_a_cel_type_does_not_break_other_expressions(name: str) -> None:
    # Declaring a variable "type" makes the engine refuse the whole environment.
    ctx = context({"x": 1}, properties={name: "v"})
    assert evaluate(f'json.x == 1 && properties["{name}"] == "v"', ctx, (name,)) == CelValue(value=True)


# --- compile errors -------------------------------------------------------------


def test_compile_error_is_a_cel_error_with_a_clean_message() -> None:
    with pytest.raises(CelError) as caught:
        compile_expression("json.x ==")
    error = caught.value
    assert error.expression == "json.x =="
    assert str(error).startswith("column 10: Syntax error")
    assert "INVALID_ARGUMENT" not in str(error)
    assert "<input>" not in str(error)
    assert "\n" not in str(error)


def test_undeclared_name_says_which_name() -> None:
    with pytest.raises(CelError) as caught:
        compile_expression("nope == 1")
    assert str(caught.value) == "column 1: undeclared reference to 'nope'"


def test_type_error_is_a_compile_error() -> None:
    with pytest.raises(CelError, match=r"found no matching overload for '_\+_' applied to '\(string, int\)'"):
        compile_expression("stdout + 1 == 2")


def test_empty_expression_has_no_status_text() -> None:
    with pytest.raises(CelError) as caught:
        compile_expression("")
    assert "[INVALID_ARGUMENT]" not in str(caught.value)
    assert str(caught.value).startswith("column 1: Syntax error")


def test_multiline_expression_error_names_line_and_column() -> None:
    with pytest.raises(CelError, match=r"^line 2, column 6: Syntax error"):
        compile_expression("json.x ==\n  1 +")


def test_reserved_word_field_suggests_index_syntax() -> None:
    with pytest.raises(CelError) as caught:
        compile_expression("json.usage.in > 0")
    assert """write json.usage["in"] instead of json.usage.in""" in str(caught.value)
    assert "'in' is a reserved word in CEL" in str(caught.value)


def test_compiled_programs_are_reused() -> None:
    assert compile_expression("json.x == 1", ("a",)) is compile_expression("json.x == 1", ("a",))


def test_uses_json_tells_whether_stdout_must_be_parsed() -> None:
    assert compile_expression("json.x == 1").uses_json
    assert not compile_expression('stdout.contains("ok")').uses_json


# --- JSON numbers ---------------------------------------------------------------


def test_parse_json_keeps_ints_and_doubles() -> None:
    parsed = parse_json('{"i": 3, "f": 3.0, "neg": -9223372036854775808, "max": 9223372036854775807}')
    assert parsed == {"i": 3, "f": 3.0, "neg": -(2**63), "max": 2**63 - 1}
    assert isinstance(parsed, dict)
    assert type(parsed["i"]) is int
    assert type(parsed["f"]) is float
    assert type(parsed["max"]) is int


def test_parse_json_turns_ints_beyond_int64_into_doubles() -> None:
    parsed = parse_json('{"big": 99999999999999999999, "small": -9223372036854775809}')
    assert isinstance(parsed, dict)
    assert type(parsed["big"]) is float
    assert math.isclose(parsed["big"], 1e20)
    assert type(parsed["small"]) is float


def test_big_json_int_evaluates_as_double() -> None:
    json = parse_json('{"big": 99999999999999999999}')
    assert evaluate("json.big > 1.0e19", context(json)) == CelValue(value=True)


def test_unparsed_big_int_is_an_error_value_not_an_exception() -> None:
    result = evaluate("json.big > 0", context({"big": 2**70}))
    assert result.error is not None
    assert "out of range" in result.error


def test_parse_json_of_ints_beyond_a_double_gives_infinity_not_an_overflow() -> None:
    parsed = parse_json('{"huge": 1' + "0" * 400 + ', "negative": -' + "9" * 400 + "}")
    assert parsed == {"huge": math.inf, "negative": -math.inf}


def test_parse_json_of_more_than_4300_digits_is_infinity_too() -> None:
    assert parse_json("[" + "9" * 5000 + "]") == [math.inf]


def test_parse_json_refuses_nesting_beyond_the_stdout_limit() -> None:
    depth = MAX_STDOUT_JSON_DEPTH + 1
    with pytest.raises(LimitExceeded, match=f"nested deeper than {MAX_STDOUT_JSON_DEPTH} levels"):
        parse_json("[" * depth + "]" * depth)
    with pytest.raises(LimitExceeded):
        parse_json("[" * 100_000 + "]" * 100_000)  # past Python's recursion limit: still the same error


def test_a_nul_byte_reaches_cel_exactly() -> None:
    """The engine's binding reads C strings: ``ok\\0 LEAKED`` would be ``ok`` to CEL, and NUL is no
    stand-in character either; every string holding one reaches CEL byte for byte."""
    program = compile_expression(
        '[stdout.contains("LEAKED"), stdout.size(), stdout.contains("\\x00"), json.a.endsWith("b"), files["f"], '
        'stderr == "", output.startsWith("ok\\x00")]'
    )
    context = {"stdout": "ok\0 sk-LEAKED error", "output": "ok\0 sk-LEAKED error", "stderr": "",
               "json": {"a": "x\0b"}, "files": {"f": "1\x002"}}  # fmt: skip
    # "ok\0 sk-LEAKED error" is 19 characters, NUL included
    assert program.evaluate(context).value == [True, 19, True, True, "1\x002", True, True]


def test_a_string_without_nul_and_one_with_it_give_the_same_answers() -> None:
    program = compile_expression('stdout.split("b").size() == 2 && !stdout.contains("\\x00")')
    assert program.evaluate({"stdout": "aba"}).value is True
    assert program.evaluate({"stdout": "a\0ba"}).value is False  # it holds a NUL: never a false PASS


def test_a_map_key_holding_a_nul_is_an_error_never_a_shortened_key() -> None:
    program = compile_expression("has(json.a) || json.size() > 0")
    found = program.evaluate({"json": {"a\0b": 1}})
    assert found.value is None
    assert found.error == "the map key 'a\\x00b' holds a NUL byte, which CEL cannot be given exactly"


@pytest.mark.parametrize(
    ("expression", "clauses"),
    [
        ("a && b && c", ["a", "b", "c"]),
        ("f(a && b) && [x && y][0]", ["f(a && b)", "[x && y][0]"]),
        ('stdout.contains("&&") && x', ['stdout.contains("&&")', "x"]),
        ('\'it\'\'s\' && """a && b""" && c', ["'it''s'", '"""a && b"""', "c"]),
        ('"a\\" && b" && c', ['"a\\" && b"', "c"]),  # an escaped quote does not end the string
        ('r"\\" && c', ['r"\\"', "c"]),  # a raw string's backslash escapes nothing
        ("a || b && c", ["a || b && c"]),  # || binds looser: the whole is no conjunction
        ("a ? b && c : d", ["a ? b && c : d"]),
        ("a &&", ["a &&"]),
        ("single", ["single"]),
    ],
)
def test_conjuncts_split_only_top_level_and(expression: str, clauses: list[str]) -> None:
    assert conjuncts(expression) == clauses


def keys(*names: str) -> MapReads:
    return MapReads(keys=frozenset(names))


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        ('files["out/a.txt"] == "x"', keys("out/a.txt")),
        ("files['b'].contains('y') && files [ \"c\" ] != ''", keys("b", "c")),
        ("files.log.size() > 0 && has(files.x)", keys("log", "x")),
        ('files[?"o"].orValue("") == "" && files.?p.hasValue()', keys("o", "p")),
        ('"a" in files && size(files) == 2 && files.size() == 2', keys()),
        ('files.exists(k, k.endsWith(".log")) && files.all(k, k != "") && files.filter(k, true).size() > 0', keys()),
        ('files.map(k, k) == ["a"] && files.exists_one(k, k == "a") && files . size ( ) == 1', keys()),
        ('files.exists(k, files[k].contains("E"))', EVERY_VALUE),  # a computed key
        ('files["a"] == "" && files == {"a": ""}', EVERY_VALUE),  # the map used whole
        ("dyn(files).size() == 1", EVERY_VALUE),
        ('files["a\\"b"] == ""', EVERY_VALUE),  # a key with an escape: not read as written
        ('files[r"x"] == ""', EVERY_VALUE),
        ('files["a"] == "" // files[k]', EVERY_VALUE),  # a comment: its quotes could hide a use
        ("[1].exists(files, files > 0)", EVERY_VALUE),  # a variable that shadows files: read as files, safely
        ("json.files == 1 && myfiles == 1 && files_n == 2 && properties.files == 1", None),
        ("stdout == \"files[k]\" && stdout != 'files'", None),  # only inside strings
    ],
)
def test_map_reads_names_the_values_an_expression_can_read(expression: str, reads: MapReads | None) -> None:
    assert map_reads(expression, "files") == reads


@pytest.mark.parametrize(
    "expression",
    [
        'files["a"] == "x"', 'files.all(k, files[k].size() > 0)', 'files.exists(k, k == "b")', '"b" in files',
        'files == {"a": "x", "b": "y"}', 'files.map(k, k).size() == 2', 'has(files.a)',
    ],
)  # fmt: skip
def test_values_an_expression_does_not_read_never_change_its_result(expression: str) -> None:
    """The placeholder of an unread text (``read_files`` holds "") is never seen: the result is the one of the
    whole map."""
    whole = {"a": "x", "b": "y"}
    reads = map_reads(expression, "files")
    assert reads is not None
    held = {key: text if reads.wants(key) else "" for key, text in whole.items()}
    assert evaluate(expression, context(files=held)) == evaluate(expression, context(files=whole))


@pytest.mark.parametrize(
    ("data", "text"),
    [(b"plain ascii", "plain ascii"), ("héllo 😀".encode(), "héllo 😀"), (b"a\xffb", "a\ufffdb"), (b"a\0b", "a\0b")],
)
def test_engine_text_is_the_decoded_text_held_as_utf8_unless_ascii(data: bytes, text: str) -> None:
    held = engine_text(data)
    assert isinstance(held, str) == text.isascii()
    if isinstance(held, StringValue):
        assert held.value == text
    found = evaluate(
        "files.t == want && files.t.size() == want.size()", context(files={"t": held}, want=text), ("want",)
    )
    assert found == CelValue(value=True)
