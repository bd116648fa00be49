"""The one door to the CEL engine (cel-expr-python, Google's cel-cpp).

Expressions compile when fixtures load, so a syntax or type error stops the
run before any command runs. Evaluation errors come back as values with a
clean message, distinct from ``false``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from cel_expr_python import cel
from cel_expr_python.ext import ext_math, ext_optional, ext_strings
from google.protobuf.wrappers_pb2 import StringValue

from fixtures_core.errors import CelError
from fixtures_core.limits import MAX_STDOUT_JSON_DEPTH, loads_json

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Variables every sample context declares, with their CEL types.
BUILTIN_VARIABLES: Mapping[str, cel.Type] = {
    "stdout": cel.Type.STRING,
    "output": cel.Type.STRING,
    "stderr": cel.Type.STRING,
    "exitCode": cel.Type.INT,
    "json": cel.Type.DYN,
    "files": cel.Type.DYN,
    "duration_ms": cel.Type.DYN,
    "sample": cel.Type.INT,
    "properties": cel.Type.DYN,
    # An A/B suite's attempt in a fresh workspace (parsing.suite.WORKSPACE_VARIABLES).
    "diff": cel.Type.STRING,
    "changed_files": cel.Type.DYN,
    "verify": cel.Type.DYN,
    "verify_score": cel.Type.DYN,
    "findings": cel.Type.DYN,
    "disqualified": cel.Type.BOOL,
}
_RESERVED = frozenset(
    [
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
        "true",
        "false",
        "null",
    ]
)
# Type names the engine already declares: a variable of the same name breaks the environment.
_TYPE_NAMES = frozenset(
    ["bool", "bytes", "double", "dyn", "int", "list", "map", "null_type", "optional_type", "string", "type", "uint"]
)
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMPILE_ERROR = re.compile(r"ERROR: <input>:(\d+):(\d+): ([^\n]*)")
_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]$")
_NO_CONTAINER = " (in container '')"


@dataclass(frozen=True)
class CelValue:
    """What an evaluation gave: a plain Python value, or an error message."""

    value: object = None
    error: str | None = None


def declarable_properties(names: Iterable[str]) -> frozenset[str]:
    """Property names that can also be top-level CEL variables."""
    return frozenset(
        n
        for n in names
        if _IDENTIFIER.fullmatch(n) and n not in _RESERVED and n not in _TYPE_NAMES and n not in BUILTIN_VARIABLES
    )


class Program:
    """A compiled CEL expression, ready to evaluate against sample contexts."""

    def __init__(self, expression: str, compiled: cel.Expression, properties: frozenset[str] = frozenset()) -> None:
        self.expression = expression
        self._compiled = compiled
        self._properties = properties
        self.uses_json = bool(re.search(r"\bjson\b", expression))

    def seen(self, context: Mapping[str, object], longest: int | None = None) -> str | None:
        """What each side of a comparison was, when the expression is one (``json.a == "low"``): ``json.a was
        "medium"``; a side that is a literal (or longer than ``longest`` characters) is left out. None for any
        other expression, or a side that cannot be evaluated alone."""
        found = comparison(self.expression)
        if found is None:
            return None
        told = []
        for side in (found[0], found[2]):
            if _LITERAL.fullmatch(side) or (longest is not None and len(side) > longest):
                continue
            try:
                value = _compile(side, self._properties).evaluate(context)
            except CelError:
                return None
            if value.error is not None:
                return None
            told.append(f"{side} was {shown_value(value.value)}")
        return ", ".join(told) or None

    def evaluate(self, context: Mapping[str, object]) -> CelValue:
        """Evaluate; an engine error becomes ``CelValue(error=...)``. Strings holding NUL reach the
        engine whole (``whole``); where they cannot (a map key), the evaluation is an error saying so."""
        try:
            data = {name: whole(value) for name, value in context.items()}
        except NulKeyError as exc:
            return CelValue(error=str(exc))
        try:
            compiled = self._compiled
            if any(isinstance(data.get(name), StringValue) for name in _STRING_VARIABLES):
                # stdout (say) holds a NUL: the engine takes it only as a wrapped string, which a
                # variable declared ``string`` refuses; the same expression, those variables dyn.
                compiled = _compile_carrying(self.expression, self._properties)
            result = compiled.eval(data=data)
        except Exception as exc:  # the engine raises on conversion problems of inputs
            return CelValue(error=_clean_runtime_error(str(exc)))
        if result.type() == cel.Type.ERROR:
            try:
                return CelValue(error=_clean_runtime_error(str(result.plain_value())))
            except TypeError:  # an optional value (json.?a.b) reports type ERROR and has no plain value
                return CelValue(error=_unconvertible(str(result)))
        try:
            return CelValue(value=result.plain_value())
        except TypeError:
            return CelValue(error=_unconvertible(str(result)))


# The engine's Python binding ends a plain string at its first NUL (a C string): ``printf 'ok\0 LEAKED'``
# would pass ``!stdout.contains("LEAKED")``. A string wrapped in a ``google.protobuf.StringValue``
# reaches the engine whole, NUL and all, and CEL reads it as a string: such strings go in wrapped.
_STRING_VARIABLES = frozenset(name for name, kind in BUILTIN_VARIABLES.items() if kind == cel.Type.STRING)


class NulKeyError(ValueError):
    """A map key holding a NUL byte: the engine cannot carry it (a key cannot be wrapped)."""


def whole(value: object) -> object:
    """``value`` for the engine, exactly: every string holding a NUL (also inside lists and maps) as a
    ``StringValue``; a map key holding one raises NulKeyError, never a quietly shortened key."""
    if isinstance(value, str):
        return StringValue(value=value) if "\0" in value else value
    if isinstance(value, dict):
        for key in value:
            if isinstance(key, str) and "\0" in key:
                shown = key.replace("\0", "\\x00")
                raise NulKeyError(f"the map key '{shown[:60]}' holds a NUL byte, which CEL cannot be given exactly")
        return {key: whole(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [whole(item) for item in value]
    return value


def engine_text(data: bytes) -> object:
    """Bytes a sample wrote, as the text CEL is given, held at the least memory: the UTF-8 text (an
    undecodable byte as U+FFFD) as a ``str`` when it is ASCII, else as a ``StringValue`` holding UTF-8,
    which CEL reads as the same string. A non-ASCII Python ``str`` takes 2 or 4 bytes a character and
    keeps a UTF-8 copy once the engine has read it: a binary file cost about 6 times its size."""
    text = data.decode("utf-8", errors="replace")
    return text if text.isascii() else StringValue(value=text.encode("utf-8"))


@dataclass(frozen=True)
class MapReads:
    """Which values of a map variable (``files``) an expression can read: those of the keys it writes out
    (``files["out.json"]``, ``files.log``, ``has(files.x)``), or ``every`` one (a key it computes,
    ``files[k]``, or the map used whole, ``files == {...}``). Its keys alone (``size(files)``,
    ``"x" in files``, ``files.exists(k, k.endsWith(".log"))``) read no value."""

    keys: frozenset[str] = frozenset()
    every: bool = False

    def __or__(self, other: MapReads) -> MapReads:
        if self.every or other.every:
            return EVERY_VALUE
        return MapReads(self.keys | other.keys)

    def wants(self, key: str) -> bool:
        return self.every or key in self.keys


EVERY_VALUE = MapReads(every=True)
# Macros and functions over a map that see only its keys (a macro's body is read apart: ``files[k]`` in it
# is a computed key).
_KEYS_ONLY_CALLS = frozenset(["all", "exists", "exists_one", "filter", "map", "size"])
_NAME_CHAR = re.compile(r"[A-Za-z0-9_]")
_INDEX = re.compile(r"""\s*\[\s*\??\s*("[^"\\\n]*"|'[^'\\\n]*')\s*\]""")  # a plain quoted key
_SELECT = re.compile(r"\s*\.\s*\??\s*([A-Za-z_][A-Za-z0-9_]*)\s*(\()?")
_IN_BEFORE = re.compile(r"(?:^|[^A-Za-z0-9_])in\s*$")
_SIZE_AROUND = (re.compile(r"(?:^|[^A-Za-z0-9_.])size\s*\(\s*$"), re.compile(r"\s*\)"))


@lru_cache(maxsize=4096)  # read once per expression, not once per sample
def map_reads(expression: str, name: str) -> MapReads | None:
    """What ``expression`` reads of the values of the map variable ``name`` (None when it never names it).

    A reading of the text, conservative where it cannot be sure: any use it does not know as reading
    keys or a written-out key reads every value, and so does an expression with a ``//`` comment (whose
    quotes would mislead the scan of string literals)."""
    found: MapReads | None = None
    for index, _depth in code_positions(expression):
        if expression.startswith("//", index):
            return EVERY_VALUE
        if not _names_variable(expression, index, name):
            continue
        use = _use_at(expression, index, name)
        found = use if found is None else found | use
    return found


def _names_variable(expression: str, index: int, name: str) -> bool:
    """Whether ``name`` at ``index`` is the variable: a whole word, and no field of something (``json.files``)."""
    if not expression.startswith(name, index):
        return False
    end = index + len(name)
    if end < len(expression) and _NAME_CHAR.match(expression[end]):
        return False
    before = expression[:index].rstrip()
    return not (index > 0 and _NAME_CHAR.match(expression[index - 1])) and not before.endswith(".")


def _use_at(expression: str, index: int, name: str) -> MapReads:
    before, after = expression[:index], expression[index + len(name) :]
    index_key = _INDEX.match(after)
    if index_key is not None:
        return MapReads(keys=frozenset([index_key.group(1)[1:-1]]))
    selected = _SELECT.match(after)
    if selected is not None:
        if selected.group(2) is None:  # files.log: the key "log"
            return MapReads(keys=frozenset([selected.group(1)]))
        return MapReads() if selected.group(1) in _KEYS_ONLY_CALLS else EVERY_VALUE
    if after.lstrip().startswith(("[", ".")):
        return EVERY_VALUE  # a computed key, or a selection this reading does not know
    if _IN_BEFORE.search(before) or (_SIZE_AROUND[0].search(before) and _SIZE_AROUND[1].match(after)):
        return MapReads()
    return EVERY_VALUE


def conjuncts(expression: str) -> list[str]:
    """The top-level ``&&`` operands of ``expression`` (one item when it is no plain conjunction).

    A top-level ``||`` or ``?:`` binds looser than ``&&``, so an expression holding one is kept whole;
    operators inside brackets and string literals (quoted, triple-quoted, raw) do not count.
    """
    parts = operands(expression, "&&", looser=("||", "?"))
    return parts if parts is not None and all(parts) else [expression.strip()]


def operands(expression: str, joiner: str, looser: tuple[str, ...]) -> list[str] | None:
    """The operands ``joiner`` joins at the top level of ``expression`` (the whole of it alone when it has
    none); None when an operator in ``looser``, which binds looser than ``joiner``, is at the top level."""
    parts: list[str] = []
    start = 0
    for index, depth in code_positions(expression):
        if depth or index < start:
            continue
        if expression.startswith(looser, index):
            return None
        if expression.startswith(joiner, index):
            parts.append(expression[start:index].strip())
            start = index + len(joiner)
    parts.append(expression[start:].strip())
    return parts


def code_positions(expression: str, start: int = 0) -> Iterator[tuple[int, int]]:
    """Each index of ``expression`` from ``start`` that is not inside a string literal, with its bracket
    depth there (an opening bracket at the depth around it, a closing one at the depth it returns to)."""
    depth, index = 0, start
    while index < len(expression):
        char = expression[index]
        if char in "\"'":
            index = _string_end(expression, index)
            continue
        if char in ")]}":
            depth -= 1
        yield index, depth
        if char in "([{":
            depth += 1
        index += 1


_LITERAL = re.compile(
    r"""-?(?:\d[\d.]*(?:[eE][+-]?\d+)?u?|0x[0-9a-fA-F]+u?)|true|false|null|[rRbB]?("[^"\\]*"|'[^'\\]*')"""
)
_OPERATORS = ("==", "!=", "<=", ">=", "<", ">")


def comparison(expression: str) -> tuple[str, str, str] | None:
    """``(left, operator, right)`` when ``expression`` is a single comparison at its top level (``==``,
    ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``); None otherwise (a conjunction, a call, a negation)."""
    found: list[tuple[int, str]] = []
    after = 0  # the end of the last operator found
    for index, depth in code_positions(expression):
        if depth or index < after:
            continue
        if expression.startswith(("&&", "||", "?"), index):
            return None
        operator = next((op for op in _OPERATORS if expression.startswith(op, index)), None)
        if operator is None and index > 0 and re.match(r"\sin\s", expression[index - 1 : index + 3]):
            operator = "in"
        if operator is not None:
            found.append((index, operator))
            after = index + len(operator)
    if len(found) != 1:
        return None
    at, operator = found[0]
    left, right = expression[:at].strip(), expression[at + len(operator) :].strip()
    return (left, operator, right) if left and right else None


def shown_value(value: object, limit: int = 80) -> str:
    """A value as CEL would write it, bounded: ``"medium"``, ``3``, ``true``, ``["a", "b"]`` (a double to
    6 significant digits: ``-9.22222``)."""
    if isinstance(value, float):
        return f"{value:.6g}"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _string_end(expression: str, start: int) -> int:
    """The index after the string literal opening at ``start`` (the end of the text when unclosed)."""
    quote = expression[start] * 3 if expression.startswith(expression[start] * 3, start) else expression[start]
    raw = start > 0 and expression[start - 1] in "rR"
    index = start + len(quote)
    while index < len(expression):
        if expression.startswith(quote, index):
            return index + len(quote)
        index += 2 if expression[index] == "\\" and not raw else 1
    return len(expression)


def compile_expression(expression: str, property_names: Iterable[str] = ()) -> Program:
    """Compile ``expression`` for a row with these properties; raise CelError."""
    return _compile(expression, declarable_properties(property_names))


@lru_cache(maxsize=4096)
def _compile(expression: str, properties: frozenset[str]) -> Program:
    try:
        compiled = _environment(properties).compile(expression)
    except Exception as exc:
        raise CelError(expression, _clean_compile_error(expression, str(exc))) from None
    return Program(expression, compiled, properties)


@lru_cache(maxsize=256)
def _compile_carrying(expression: str, properties: frozenset[str]) -> cel.Expression:
    """``expression`` compiled with the string variables dyn, so that they can take wrapped strings
    (it compiled with them as strings, so it compiles here too)."""
    return _environment(properties, carrying=True).compile(expression)


@lru_cache(maxsize=256)
def _environment(properties: frozenset[str], carrying: bool = False) -> cel.Env:
    variables = dict(BUILTIN_VARIABLES)
    if carrying:
        variables.update({name: cel.Type.DYN for name in _STRING_VARIABLES})
    variables.update({name: cel.Type.DYN for name in properties})
    return cel.NewEnv(
        variables=variables,
        extensions=[ext_strings.ExtStrings(), ext_math.ExtMath(), ext_optional.ExtOptional()],
    )


def parse_json(text: str) -> object:
    """Parse JSON keeping ints as ints; ints beyond int64 become doubles (infinite beyond a double's range).

    Nesting beyond ``MAX_STDOUT_JSON_DEPTH`` raises LimitExceeded (a ValueError).
    """
    return loads_json(text, MAX_STDOUT_JSON_DEPTH, parse_int=_json_int)


def _json_int(digits: str) -> int | float:
    if len(digits.lstrip("-")) <= 18:  # always within int64
        return int(digits)
    if len(digits.lstrip("-")) <= 20:
        number = int(digits)
        if _INT64_MIN <= number <= _INT64_MAX:
            return number
    # float() of the text, not of int(text): a huge int would overflow (or pass Python's 4300-digit limit)
    return float(digits)


def _unconvertible(shown: str) -> str:
    if shown.startswith("optional."):
        return f"the expression gives an optional value ({shown}): end it with .orValue(DEFAULT) or .value()"
    return f"the expression gives a value with no plain form: {shown}"


def _clean_compile_error(expression: str, raw: str) -> str:
    multiline = "\n" in expression.strip()
    messages = [
        f"{f'line {line}, ' if multiline else ''}column {col}: {_tidy(msg)}"
        for line, col, msg in _COMPILE_ERROR.findall(raw)
    ]
    text = "; ".join(dict.fromkeys(messages)) or _tidy(_STATUS_PREFIX.sub("", (raw.splitlines() or [""])[0]))
    hint = _reserved_word_hint(expression)
    return f"{text} ({hint})" if hint else text


def _tidy(message: str) -> str:
    """Drop the engine's status code and empty-container note from one message."""
    return _STATUS_SUFFIX.sub("", message).replace(_NO_CONTAINER, "").strip()


def _reserved_word_hint(expression: str) -> str | None:
    words = "|".join(sorted(_RESERVED))
    ident = r"[A-Za-z_][A-Za-z0-9_]*"
    match = re.search(rf"({ident}(?:\.\??{ident})*)\.\??({words})\b", expression)
    if match is None:
        return None
    owner, word = match.group(1), match.group(2)
    return f"'{word}' is a reserved word in CEL: write {owner}[\"{word}\"] instead of {owner}.{word}"


def _clean_runtime_error(raw: str) -> str:
    key = re.search(r'Key not found in map : "?([^"]*)"?', raw)
    if key:
        return f"no such key: {key.group(1)}"
    missing = re.search(r'No value with name "([^"]+)" found', raw)
    if missing:
        return f"no value for '{missing.group(1)}'"
    overload = re.search(r"No matching overloads found : (.*)", raw)
    if overload:
        return f"no matching overload for {overload.group(1)}"
    if "Applying SELECT to non-message type" in raw:
        return "cannot select a field: the value is not a map"
    return _tidy(_STATUS_PREFIX.sub("", raw))
