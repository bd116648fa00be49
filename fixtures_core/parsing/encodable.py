"""Text a process, the run document and the terminal can carry: checked before anything runs.

YAML escapes can produce what no process argument or environment can hold:
a NUL byte (``"\\0"``), a lone UTF-16 surrogate (``"\\ud800"``) that has no
UTF-8 form, an environment name that is empty or holds ``=``. Found at run
time they were internal errors; here each is a configuration error naming
the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fixtures_core.errors import FixtureError
from fixtures_core.spec import RowSpec


def text_errors(row: RowSpec) -> list[FixtureError]:
    """Every string of ``row`` that cannot be encoded, and every NUL or bad name that reaches a process."""
    errors: list[FixtureError] = []

    def report(field: str, problem: str) -> None:
        errors.append(FixtureError(row.file, row.line, f"row '{_shown(row.name)}': {problem}", field))

    to_process = [("command", arg) for arg in row.argv] + [("cwd", row.cwd or ""), ("skip", row.skip_command or "")]
    to_process += [(f"env.{_shown(name)}", value) for name, value in row.env.items()]
    for name in row.env:
        if not name or "=" in name or "\0" in name:
            report(
                "env", f"invalid environment variable name {_shown(name)!r} (it must be non-empty, without '=' or NUL)"
            )
    for field, text in [("Name", row.name), *to_process]:
        if "\0" in text:
            report(field, "holds a NUL byte (\\0), which no process argument or environment can carry")
    strings = [("Name", row.name), *to_process, *(("env", name) for name in row.env)]
    strings += [("CEL", row.expect.cel or ""), ("stdout", row.expect.stdout or ""), ("stderr", row.expect.stderr or "")]
    strings += list(_strings_in(row.properties, "properties"))
    for field, text in strings:
        if not _encodable(text):
            report(field, "holds a lone surrogate (such as \\ud800), which has no UTF-8 form")
    return errors


# Frontmatter keys whose strings reach a process: a NUL byte in them can never run.
_TO_PROCESS = ("exec", "args", "env", "cwd", "skip")


def frontmatter_text_error(data: Mapping[str, object], key_lines: Mapping[str, int], path: str) -> FixtureError | None:
    """The first frontmatter value no row could carry (every row depends on it, so it stops the file)."""
    for key, value in data.items():
        line = key_lines.get(key, 1)
        if key == "env" and isinstance(value, dict):
            for name in value:
                if not str(name) or "=" in str(name) or "\0" in str(name):
                    shown = _shown(str(name))
                    message = f"invalid environment variable name {shown!r} (it must be non-empty, without '=' or NUL)"
                    return FixtureError(path, line, message, "env")
        for field, text in [(key, key), *_strings_in(value, key)]:
            if not _encodable(text):
                return FixtureError(
                    path, line, "holds a lone surrogate (such as \\ud800), which has no UTF-8 form", field
                )
            if "\0" in text and key in _TO_PROCESS:
                message = "holds a NUL byte (\\0), which no process argument or environment can carry"
                return FixtureError(path, line, message, field)
    return None


def _strings_in(value: object, field: str) -> Iterator[tuple[str, str]]:
    """Every string in a property value (keys too), with the field it is under."""
    stack: list[tuple[object, str]] = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, child in item.items():
                name = f"{where}.{_shown(str(key))}"
                yield name, str(key)
                stack.append((child, name))
        elif isinstance(item, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(text: str) -> str:
    """Text safe to print: lone surrogates and NULs shown escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\0", "\\0")
