"""Go-template-style substitution (``fixtures_core.parsing.template``)."""

from __future__ import annotations

import re

import pytest

from fixtures_core.parsing.builtins import TEMPLATE_BUILTINS
from fixtures_core.parsing.template import TemplateError, check_names, referenced_names, render


@pytest.mark.parametrize("text", ["{{ .prompt }}", "{{.prompt}}", "{{  .prompt\t}}"])
def test_field_reference_renders_with_or_without_spaces(text: str) -> None:
    assert render(text, {"prompt": "hello world"}) == "hello world"


def test_several_references_in_one_value() -> None:
    text = "{{ .sourceDir }}/agent.py --runtime={{.selector}} #{{ .sample }}"
    values = {"sourceDir": "/src", "selector": "api:x", "sample": 2}
    assert referenced_names(text) == ["sourceDir", "selector", "sample"]
    assert render(text, values) == "/src/agent.py --runtime=api:x #2"


def test_shell_variables_are_left_to_the_shell() -> None:
    text = "$HOME/${X}/$ASSAY_TMPDIR/{{ .name }}"
    assert referenced_names(text) == ["name"]
    assert render(text, {"name": "row"}) == "$HOME/${X}/$ASSAY_TMPDIR/row"
    check_names("$HOME ${NOT_A_PROPERTY}", [])  # nothing to check: no template action


def test_text_without_actions_is_returned_unchanged() -> None:
    assert render("plain {not} {{ unclosed", {}) == "plain {not} {{ unclosed"
    assert referenced_names("plain {not} {{ unclosed") == []


@pytest.mark.parametrize(("value", "text"), [(True, "true"), (False, "false"), (None, ""), (3, "3"), (1.5, "1.5")])
def test_values_render_as_text(value: object, text: str) -> None:
    assert render("{{ .v }}", {"v": value}) == text


def test_trim_markers_remove_adjacent_whitespace_as_in_go() -> None:
    assert render("a  {{- .v -}}  b", {"v": "X"}) == "aXb"
    assert render("a  {{- .v }}  b", {"v": "X"}) == "aX  b"
    assert render("a  {{ .v -}}  b", {"v": "X"}) == "a  Xb"


def test_rendered_values_are_not_rendered_again() -> None:
    assert render("{{ .a }}", {"a": "{{ .b }}", "b": "no"}) == "{{ .b }}"


def test_unknown_name_lists_the_known_names() -> None:
    with pytest.raises(TemplateError) as caught:
        check_names("--model {{ .modle }}", ["model", "prompt"])
    message = str(caught.value)
    assert "unknown template name '.modle'" in message
    assert "'--model {{ .modle }}'" in message
    assert "(known: model, prompt)" in message


def test_unknown_name_with_nothing_known_says_none() -> None:
    with pytest.raises(TemplateError, match=r"\(known: none\)"):
        check_names("{{ .x }}", [])


def test_known_names_pass() -> None:
    check_names("{{ .name }} {{ .sample }} {{ .tmpdir }} {{ .GIT_ROOT_DIR }} {{ .GOOS }}", TEMPLATE_BUILTINS)


def test_unknown_name_with_a_hint_explains_it() -> None:
    with pytest.raises(TemplateError, match=r"'\.port' .*; Gavel's daemon sets it"):
        check_names("http://localhost:{{.port}}/", ["name"], {"port": "Gavel's daemon sets it"})


@pytest.mark.parametrize(
    ("text", "values", "expected"),
    [
        ("{{ .word | strings.ToUpper }}", {"word": "alpha"}, "ALPHA"),
        ("{{ .word | strings.ToLower | strings.Title }}", {"word": "BETA gamma"}, "Beta Gamma"),
        ('{{ .path | strings.TrimPrefix "/" }}', {"path": "/get"}, "get"),
        ('{{ .s | strings.ReplaceAll "a" "o" }}', {"s": "banana"}, "bonono"),
        ('{{ .flags | default "-s" }}', {"flags": ""}, "-s"),
        ('{{ default "-s" .flags }}', {"flags": "-v"}, "-v"),
        ('{{ printf "%s-%d" .a 7 }}', {"a": "x"}, "x-7"),
        ("{{ .v | quote }}", {"v": 'say "hi"'}, '"say \\"hi\\""'),
        ("{{ .scope.Since }}", {"scope": {"Since": "2024"}}, "2024"),
        ("{{ .f | filepath.Base }}", {"f": "/a/b/c.md"}, "c.md"),
    ],
)
def test_pipes_and_functions_as_in_go_templates(text: str, values: dict[str, object], expected: str) -> None:
    assert render(text, values) == expected


def test_piped_names_are_referenced() -> None:
    assert referenced_names('{{ .a | strings.TrimPrefix "x" }} {{ .b.c }}') == ["a", "b"]


def test_missing_nested_key_is_a_template_error_at_render_time() -> None:
    with pytest.raises(TemplateError, match=r"no value for \.scope\.Until"):
        render("{{ .scope.Until }}", {"scope": {"Since": "x"}})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{{ .a | upper }}", "unsupported template function 'upper'"),
        ("{{ strings.ToUpper }}", "function strings.ToUpper takes 1 argument(s), got 0"),
        ("{{ .a .b }}", "'.a' is not a function"),
        ('{{ strings.ToUpper "a" "b" }}', "takes 1 argument(s), got 2"),
    ],
)
def test_misused_functions_are_named(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        referenced_names(text)


@pytest.mark.parametrize(
    ("text", "construct"),
    [
        ("{{ range .items }}x{{ end }}", "action 'range'"),
        ("{{ if .x }}y{{ end }}", "action 'if'"),
        ("{{ $x := 1 }}", "syntax '$x'"),
        ("{{ prompt }}", "function 'prompt'"),
        ("{{ }}", "empty template action"),
    ],
)
def test_unsupported_constructs_are_named(text: str, construct: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(construct)):
        referenced_names(text)


def test_multiline_action_is_rejected_and_shown_on_one_line() -> None:
    with pytest.raises(TemplateError) as caught:
        referenced_names("x {{ range\n  .items }}")
    assert "{{ range .items }}" in str(caught.value)
    assert "\n" not in str(caught.value)
