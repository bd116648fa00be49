"""Go-template-style substitution of ``{{ .name }}`` in commands, cwd and env.

Only plain field references are supported; ``$NAME`` and ``${NAME}`` are left
to the shell of the command under test.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_FIELD = re.compile(r"\{\{-?\s*\.([A-Za-z_][A-Za-z0-9_\-]*)\s*-?\}\}")
_ANY_ACTION = re.compile(r"(\{\{.*?\}\})", re.DOTALL)

# Names every sample provides on top of the row's properties.
SAMPLE_NAMES = ("name", "sample", "tmpdir")


class TemplateError(ValueError):
    """A template refers to a name that does not exist or uses unsupported syntax."""


def referenced_names(text: str) -> list[str]:
    """Names a template refers to; raise TemplateError on unsupported actions."""
    for action in _ANY_ACTION.findall(text):
        if not _FIELD.fullmatch(action):
            shown = " ".join(action.split())
            raise TemplateError(f"unsupported template action {shown}: only {{{{ .name }}}} is supported")
    return _FIELD.findall(text)


def check_names(text: str, known: Iterable[str]) -> None:
    """Raise TemplateError naming the unknown reference and the known names."""
    known_set = set(known)
    for name in referenced_names(text):
        if name not in known_set:
            listing = ", ".join(sorted(known_set)) or "none"
            raise TemplateError(f"unknown template name '.{name}' in {text!r} (known: {listing})")


def render(text: str, values: Mapping[str, object]) -> str:
    """Substitute every ``{{ .name }}``; names must have been checked.

    As in Go templates, ``{{- `` trims the whitespace before the action and `` -}}`` the whitespace after it.
    """
    if "{{" not in text:
        return text
    pieces = _ANY_ACTION.split(text)  # text, action, text, action, ..., text
    for index in range(1, len(pieces), 2):
        action = pieces[index]
        match = _FIELD.fullmatch(action)
        if match is None:
            continue  # not a field reference: left as written (check_names rejects it first)
        if action.startswith("{{-"):
            pieces[index - 1] = pieces[index - 1].rstrip()
        if action.endswith("-}}"):
            pieces[index + 1] = pieces[index + 1].lstrip()
        pieces[index] = _to_text(values[match.group(1)])
    return "".join(pieces)


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)
