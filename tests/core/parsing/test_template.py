"""``{{ .name }}`` substitution (``fixtures_core.parsing.template``)."""

from __future__ import annotations

import pytest

from fixtures_core.parsing.template import SAMPLE_NAMES, TemplateError, check_names, referenced_names, render


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
    check_names("{{ .name }} {{ .sample }} {{ .tmpdir }}", SAMPLE_NAMES)


@pytest.mark.parametrize(
    "text",
    [
        "{{ range .items }}x{{ end }}",
        "{{ if .x }}y{{ end }}",
        "{{ .a | upper }}",
        "{{ .a.b }}",
        "{{ prompt }}",
        "{{ }}",
        '{{ printf "%s" .a }}',
    ],
)
def test_unsupported_actions_are_rejected(text: str) -> None:
    with pytest.raises(TemplateError, match=r"unsupported template action .*only \{\{ \.name \}\} is supported"):
        referenced_names(text)


def test_multiline_action_is_rejected_and_shown_on_one_line() -> None:
    with pytest.raises(TemplateError) as caught:
        referenced_names("x {{ range\n  .items }}")
    assert "{{ range .items }}" in str(caught.value)
    assert "\n" not in str(caught.value)
