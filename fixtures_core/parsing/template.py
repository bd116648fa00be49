"""Go-template-style substitution in commands, scripts, cwd and env, as Gavel fixtures write it.

Supported: field references (``{{ .name }}``, ``{{ .map.key }}``), string
and number literals, pipes, and the functions Gavel fixtures use (gomplate's
``strings.ToUpper``, ``default``, ``printf``, ...), with the piped value as
the last argument: ``{{ .word | strings.ToUpper }}``. ``{{-`` and ``-}}``
trim whitespace. Anything else (``if``, ``range``, variables) is an error
naming the construct. ``$NAME`` and ``${NAME}`` are left to the shell.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

_ACTION = re.compile(r"(\{\{.*?\}\})", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<string>"(?:[^"\\]|\\.)*")
    | (?P<raw>`[^`]*`)
    | (?P<number>-?[0-9]+(?:\.[0-9]+)?)
    | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_\-]*)+)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
    | (?P<pipe>\|)
    | (?P<other>\S+)
    )""",
    re.VERBOSE,
)
_KEYWORDS = frozenset(["if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"])
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


class TemplateError(ValueError):
    """A template refers to a name that does not exist or uses unsupported syntax."""


@dataclass(frozen=True)
class _Operand:
    kind: str  # "field", "literal" or "function"
    value: object  # the field path (tuple of names), the literal, or the function name


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _default(fallback: object, value: object = None) -> object:
    return value if value not in (None, "", 0, False) else fallback


def _printf(layout: object, *args: object) -> str:
    pieces = iter(args)

    def verb(match: re.Match[str]) -> str:
        if match.group(1) == "%":
            return "%"
        value = next(pieces, None)
        if match.group(1) == "q":
            return _quote(_text(value))
        if match.group(1) == "d":
            return str(int(str(value)))
        return _text(value)

    return re.sub(r"%([%sdvq])", verb, _text(layout))


# name -> (minimum arguments, maximum arguments or None, implementation)
FUNCTIONS: Mapping[str, tuple[int, int | None, Callable[..., object]]] = {
    "strings.ToUpper": (1, 1, lambda s: _text(s).upper()),
    "strings.ToLower": (1, 1, lambda s: _text(s).lower()),
    "strings.TrimSpace": (1, 1, lambda s: _text(s).strip()),
    "strings.Title": (1, 1, lambda s: re.sub(r"\b[a-z]", lambda m: m.group(0).upper(), _text(s))),
    "strings.Trim": (2, 2, lambda cut, s: _text(s).strip(_text(cut))),
    "strings.TrimPrefix": (2, 2, lambda prefix, s: _text(s).removeprefix(_text(prefix))),
    "strings.TrimSuffix": (2, 2, lambda suffix, s: _text(s).removesuffix(_text(suffix))),
    "strings.ReplaceAll": (3, 3, lambda old, new, s: _text(s).replace(_text(old), _text(new))),
    "strings.Repeat": (2, 2, lambda count, s: _text(s) * int(str(count))),
    "strings.Quote": (1, 1, lambda s: _quote(_text(s))),
    "strings.Squote": (1, 1, lambda s: "'" + _text(s).replace("'", "''") + "'"),
    "toUpper": (1, 1, lambda s: _text(s).upper()),
    "toLower": (1, 1, lambda s: _text(s).lower()),
    "trimSpace": (1, 1, lambda s: _text(s).strip()),
    "replaceAll": (3, 3, lambda old, new, s: _text(s).replace(_text(old), _text(new))),
    "quote": (1, 1, lambda s: _quote(_text(s))),
    "squote": (1, 1, lambda s: "'" + _text(s).replace("'", "''") + "'"),
    "default": (1, 2, _default),
    "printf": (1, None, _printf),
    "print": (0, None, lambda *values: "".join(_text(v) for v in values)),
    "len": (1, 1, lambda value: len(value) if isinstance(value, (str, list, dict)) else len(_text(value))),
    "filepath.Base": (1, 1, lambda p: posixpath.basename(_text(p).rstrip("/")) or "."),
    "filepath.Dir": (1, 1, lambda p: posixpath.dirname(_text(p)) or "."),
    "filepath.Ext": (1, 1, lambda p: posixpath.splitext(_text(p))[1]),
    "filepath.Join": (1, None, lambda *parts: posixpath.normpath(posixpath.join(*map(_text, parts)))),
    "path.Base": (1, 1, lambda p: posixpath.basename(_text(p).rstrip("/")) or "."),
    "path.Dir": (1, 1, lambda p: posixpath.dirname(_text(p)) or "."),
    "path.Ext": (1, 1, lambda p: posixpath.splitext(_text(p))[1]),
    "path.Join": (1, None, lambda *parts: posixpath.normpath(posixpath.join(*map(_text, parts)))),
    "env.Getenv": (1, 2, lambda name, fallback="": os.environ.get(_text(name)) or _text(fallback)),
}


def referenced_names(text: str) -> list[str]:
    """Top-level names a template refers to; raise TemplateError on unsupported syntax."""
    names: list[str] = []
    for action in _ACTION.findall(text):
        for stage in _pipeline(action):
            names.extend(str(op.value[0]) for op in stage if op.kind == "field")  # type: ignore[index]
    return names


def check_names(text: str, known: Iterable[str], hints: Mapping[str, str] | None = None) -> None:
    """Raise TemplateError naming an unknown reference and the known names (``hints`` explain some names)."""
    known_set = set(known)
    for name in referenced_names(text):
        if name not in known_set:
            hint = f"; {hints[name]}" if hints and name in hints else ""
            listing = ", ".join(sorted(known_set)) or "none"
            raise TemplateError(f"unknown template name '.{name}' in {text!r}{hint} (known: {listing})")


def render(text: str, values: Mapping[str, object]) -> str:
    """Render every action; names must have been checked (a missing nested key raises TemplateError)."""
    if "{{" not in text:
        return text
    pieces = _ACTION.split(text)  # text, action, text, action, ..., text
    for index in range(1, len(pieces), 2):
        action = pieces[index]
        if action.startswith("{{- "):
            pieces[index - 1] = pieces[index - 1].rstrip()
        if action.endswith(" -}}"):
            pieces[index + 1] = pieces[index + 1].lstrip()
        pieces[index] = _text(_evaluate(_pipeline(action), values, action))
    return "".join(pieces)


def _pipeline(action: str) -> list[list[_Operand]]:
    """Parse one ``{{ ... }}`` action into stages of operands."""
    inner = action[2:-2]
    inner = inner[2:] if inner.startswith("- ") else inner
    inner = inner[:-2] if inner.endswith(" -") else inner
    shown = " ".join(action.split())
    stages: list[list[_Operand]] = [[]]
    for match in _TOKEN.finditer(inner):
        kind = match.lastgroup
        token = match.group(kind or 0)
        if kind == "pipe":
            stages.append([])
        elif kind == "field":
            stages[-1].append(_Operand("field", tuple(token.split(".")[1:])))
        elif kind == "string":
            stages[-1].append(
                _Operand("literal", re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), token[1:-1]))
            )
        elif kind == "raw":
            stages[-1].append(_Operand("literal", token[1:-1]))
        elif kind == "number":
            stages[-1].append(_Operand("literal", float(token) if "." in token else int(token)))
        elif kind == "ident" and token in ("true", "false"):
            stages[-1].append(_Operand("literal", token == "true"))
        elif kind == "ident" and token in _KEYWORDS:
            raise TemplateError(f"unsupported template action '{token}' in {shown}: {_SUPPORTED}")
        elif kind == "ident":
            if token not in FUNCTIONS:
                raise TemplateError(
                    f"unsupported template function '{token}' in {shown} (supported: {', '.join(sorted(FUNCTIONS))})"
                )
            stages[-1].append(_Operand("function", token))
        else:
            raise TemplateError(f"unsupported template syntax '{token}' in {shown}: {_SUPPORTED}")
    for position, stage in enumerate(stages):
        _check_stage(stage, piped=position > 0, shown=shown)
    return stages


_SUPPORTED = "assay supports {{ .name }}, literals, pipes and functions such as strings.ToUpper"


def _check_stage(stage: list[_Operand], piped: bool, shown: str) -> None:
    if not stage:
        raise TemplateError(f"empty template action or pipe stage in {shown}")
    head, args = stage[0], stage[1:]
    if head.kind != "function":
        if args or piped:
            raise TemplateError(f"'{_describe(head)}' is not a function in {shown}")
        return
    low, high, _impl = FUNCTIONS[str(head.value)]
    count = len(args) + (1 if piped else 0)
    if count < low or (high is not None and count > high):
        wanted = str(low) if high == low else f"{low}{'+' if high is None else f'-{high}'}"
        raise TemplateError(f"function {head.value} takes {wanted} argument(s), got {count} in {shown}")
    for arg in args:
        if arg.kind == "function":
            raise TemplateError(f"nested call of {arg.value} in {shown}: use a pipe")


def _describe(operand: _Operand) -> str:
    if operand.kind == "field":
        return "." + ".".join(operand.value)  # type: ignore[arg-type]
    return repr(operand.value)


def _evaluate(stages: list[list[_Operand]], values: Mapping[str, object], action: str) -> object:
    result: object = None
    for position, stage in enumerate(stages):
        head, args = stage[0], stage[1:]
        if head.kind != "function":
            result = _value(head, values, action)
            continue
        arguments = [_value(arg, values, action) for arg in args]
        if position > 0:
            arguments.append(result)
        try:
            result = FUNCTIONS[str(head.value)][2](*arguments)
        except (TypeError, ValueError) as exc:
            raise TemplateError(f"{head.value} failed in {' '.join(action.split())}: {exc}") from None
    return result


def _value(operand: _Operand, values: Mapping[str, object], action: str) -> object:
    if operand.kind == "literal":
        return operand.value
    current: object = values
    for key in operand.value:  # type: ignore[attr-defined]
        if not isinstance(current, Mapping) or key not in current:
            raise TemplateError(f"no value for {_describe(operand)} in {' '.join(action.split())}")
        current = current[key]
    return current


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)
