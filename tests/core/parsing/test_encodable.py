"""Text a process and a report can carry: NUL bytes, lone surrogates and bad env names are config errors."""

from __future__ import annotations

from dataclasses import replace

from fixtures_core.parsing.encodable import text_errors
from fixtures_core.spec import Expectation, RowSpec

ROW = RowSpec(file="f.md", line=9, name="a", argv=("echo", "hi"), expect=Expectation(), properties={"p": "x"})


def messages(row: RowSpec) -> list[str]:
    return [str(error) for error in text_errors(row)]


def test_ordinary_text_is_fine() -> None:
    assert messages(replace(ROW, env={"A_1": "é ✓"}, properties={"p": ["ü", {"k": "v"}]})) == []


def test_a_nul_byte_in_an_argument() -> None:
    assert messages(replace(ROW, argv=("echo", "a\0b"))) == [
        "f.md:9: command: row 'a': holds a NUL byte (\\0), which no process argument or environment can carry"
    ]


def test_a_nul_byte_in_an_env_value_and_in_cwd() -> None:
    found = messages(replace(ROW, env={"A": "x\0"}, cwd="/tmp\0"))
    assert [m.split(": ")[1] for m in found] == ["cwd", "env.A"]


def test_a_nul_byte_in_a_skip_command() -> None:
    assert messages(replace(ROW, skip_command="test -f x\0")) == [
        "f.md:9: skip: row 'a': holds a NUL byte (\\0), which no process argument or environment can carry"
    ]


def test_invalid_environment_names() -> None:
    found = messages(replace(ROW, env={"A=B": "x", "": "y"}))
    assert found == [
        "f.md:9: env: row 'a': invalid environment variable name 'A=B' (it must be non-empty, without '=' or NUL)",
        "f.md:9: env: row 'a': invalid environment variable name '' (it must be non-empty, without '=' or NUL)",
    ]


def test_a_lone_surrogate_anywhere_in_the_properties_is_named_by_its_field() -> None:
    found = messages(replace(ROW, properties={"p": {"list": ["ok", "bad\ud800"]}}))
    assert found == [
        "f.md:9: properties.p.list[1]: row 'a': holds a lone surrogate (such as \\ud800), which has no UTF-8 form"
    ]


def test_a_lone_surrogate_in_the_name_is_shown_escaped() -> None:
    found = messages(replace(ROW, name="x\udcff"))
    assert found == ["f.md:9: Name: row 'x\\udcff': holds a lone surrogate (such as \\ud800), which has no UTF-8 form"]
