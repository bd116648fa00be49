"""Command blocks: a ``command: NAME`` heading (any level), or a standalone script fence, as in Gavel.

A block holds an optional ```` ```yaml ```` or ```` ```frontmatter ```` fence
(its settings), script fences (the last one in an allowed language runs) and
bullet lists of validations (``cel:``, ``contains:``, ``regex:``, ``not:``),
joined with ``&&``. A script runs with its language's interpreter, or with
the frontmatter ``exec`` when there is one (Gavel applies it to blocks too).
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from fixtures_core.cel import compile_expression
from fixtures_core.errors import CelError, FixtureError
from fixtures_core.parsing.config import Where, read_exit_code, read_string, reject_near_misses
from fixtures_core.parsing.settings import Inherited, apply_common
from fixtures_core.parsing.tables import cell_text, shell_wrapped
from fixtures_core.spec import Expectation, FixtureWarning, PropertyValue, RowSpec

BLOCK_KEYS = (
    "exitCode", "cwd", "env", "timeout", "repeat", "metrics", "measurements",
    "skip", "os", "arch", "indeterminate", "stdout", "stderr", "terminal", "serial", "pass_rate", "sampling",
)  # fmt: skip
INTERPRETERS: Mapping[str, tuple[str, str]] = {
    "bash": ("bash", "-c"),
    "sh": ("sh", "-c"),
    "shell": ("bash", "-c"),
    "python": (sys.executable, "-c"),
    "python3": (sys.executable, "-c"),
    "py": (sys.executable, "-c"),
    "typescript": ("ts-node", "-e"),
    "ts": ("ts-node", "-e"),
    "javascript": ("node", "-e"),
    "js": ("node", "-e"),
    "pwsh": ("pwsh", "-Command"),
    "powershell": ("pwsh", "-Command"),
}
# Fences Gavel runs outside a command block, whatever codeBlocks says (``go`` too, which assay cannot run).
STANDALONE_LANGUAGES = ("bash", "shell", "sh", "python", "py", "typescript", "ts")
CONFIG_LANGUAGES = ("yaml", "yml", "frontmatter")
VALIDATION_KINDS = ("cel", "contains", "regex", "not")

YamlLoader = Callable[[str, int], tuple[dict[str, object], dict[str, int], dict[str, list[int]]]]


@dataclass
class Fence:
    """One fenced code block: its language, text, first line and info string."""

    language: str
    body: str
    line: int
    info: str


@dataclass
class Block:
    """A command block being read: its heading (or script fence) and what followed it."""

    name: str
    line: int
    standalone: bool
    scripts: list[Fence] = field(default_factory=list)
    configs: list[Fence] = field(default_factory=list)
    validations: list[tuple[str, int]] = field(default_factory=list)


def block_row(
    block: Block, settings: Inherited, load_yaml: YamlLoader, path: str
) -> tuple[RowSpec, list[FixtureWarning]]:
    """The row of a finished block, and what in it does not run."""
    where = Where(path, block.line)
    warnings = [
        FixtureWarning(path, f.line, f"{f.language} fence is not run: a later {f.language} fence is the script")
        for f in block.scripts[:-1]
    ]
    warnings += [
        FixtureWarning(path, f.line, "yaml fence is ignored: a later yaml fence configures the block")
        for f in block.configs[:-1]
    ]
    config: Mapping[str, object] = {}
    key_lines: dict[str, int] = {}
    if block.configs:
        fence = block.configs[-1]
        config, key_lines, item_lines = load_yaml(fence.body, fence.line + 1)
        reject_near_misses(key_lines, BLOCK_KEYS, path)
        settings = apply_common(settings, config, key_lines, item_lines, path)
        settings = replace(settings, properties={**settings.properties, **_block_properties(config)})
        if "terminal" in config:
            warnings.append(FixtureWarning(path, key_lines["terminal"], "terminal is ignored: no pseudo-terminal"))

    assert block.scripts, "a block without a script makes no row (parser._incomplete)"
    script = block.scripts[-1]
    if len(script.info.split()) > 1:
        warnings.append(
            FixtureWarning(path, script.line, f"fence attributes '{' '.join(script.info.split()[1:])}' are ignored "
                           "(as in Gavel): set exitCode or timeout in the block's yaml")
        )  # fmt: skip

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, block.line))

    kept = []
    for text, line in block.validations:
        validation = _validation(text, Where(path, line))
        if validation is None:
            warnings.append(
                FixtureWarning(path, line, f"bullet {text.strip()!r} is not a validation (no 'kind:'): ignored")
            )
        else:
            kept.append(validation)
    cel = " && ".join(f"({v})" for v in kept) if len(kept) > 1 else next(iter(kept), None)
    return RowSpec(
        file=path,
        line=block.line,
        name=block.name,
        argv=_script_argv(script, settings, where),
        expect=Expectation(
            exit_code=read_exit_code(config["exitCode"], at("exitCode")) if "exitCode" in config else 0,
            stdout=read_string(config["stdout"], at("stdout"), "stdout") if "stdout" in config else None,
            stderr=read_string(config["stderr"], at("stderr"), "stderr") if "stderr" in config else None,
            cel=cel,
            cel_line=block.line,
        ),
        properties=settings.properties,
        env=settings.env,
        cwd=settings.cwd,
        timeout_s=settings.timeout_s,
        repeat=settings.repeat,
        metrics=settings.metrics,
        skip=settings.platform_skip() or settings.skip,
        skip_command=settings.skip_command,
        indeterminate=settings.indeterminate,
        serial=settings.serial,
        pass_rate=settings.pass_rate,
        sampling=settings.sampling,
    ), warnings


def _script_argv(script: Fence, settings: Inherited, where: Where) -> tuple[str, ...]:
    """The interpreter of the script's language, or the frontmatter exec with that language's flag (Gavel)."""
    interpreter = INTERPRETERS.get(script.language)
    if settings.exec is not None:
        return shell_wrapped(settings.exec, (interpreter[1], script.body) if interpreter else (script.body,))
    if interpreter is None:
        known = ", ".join(INTERPRETERS)
        raise where.error("codeBlocks", f"no interpreter known for '{script.language}' (known: {known})")
    return (*interpreter, script.body)


def block_properties(block: Block, settings: Inherited, load_yaml: YamlLoader) -> dict[str, PropertyValue]:
    """The properties a broken block's row still shows: the file's, and its yaml's when that loads."""
    properties = dict(settings.properties)
    if block.configs:
        fence = block.configs[-1]
        with contextlib.suppress(FixtureError):  # a yaml that does not load is the error the row reports
            properties.update(_block_properties(load_yaml(fence.body, fence.line + 1)[0]))
    return properties


def _block_properties(config: Mapping[str, object]) -> dict[str, PropertyValue]:
    return {k: v for k, v in config.items() if k not in BLOCK_KEYS}


def is_validation_list(text: str) -> bool:
    """Gavel's test (plus ``not:``): a list is read for validations when it mentions one (else it is prose)."""
    return "validation" in text.lower() or any(f"{kind}:" in text for kind in VALIDATION_KINDS)


def _validation(text: str, where: Where) -> str | None:
    """One validation bullet as CEL: a known kind, or (as in Gavel) any other ``x: y`` text taken as CEL."""
    stripped = text.strip()
    kind, colon, value = stripped.partition(":")
    kind = kind.strip().lower()
    if not colon:
        return None
    if kind not in VALIDATION_KINDS:
        _require_cel_syntax(stripped, where)
        return stripped
    value = cell_text(value)
    if not value:
        raise where.error("validation", f"'{kind}:' needs a value, got {text!r}")
    if kind == "cel":
        return value
    if kind == "contains":
        return f"stdout.contains({_cel_string(value.strip(chr(34) + chr(39)))})"
    if kind == "regex":
        return f"stdout.matches({_cel_string(value.strip(chr(34) + chr(39)))})"
    inner_kind = value.partition(":")[0].strip().lower()
    inner = _validation(value, where) if inner_kind in VALIDATION_KINDS else value
    return f"!({inner})"


def _require_cel_syntax(text: str, where: Where) -> None:
    """A bullet of another kind is CEL to Gavel; prose such as ``Note: x`` is then an error here, at its line."""
    try:
        compile_expression(text, re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))  # every name declared: syntax only
    except CelError as exc:
        raise where.error(
            "validation",
            f"bullet {text!r} is not cel:, contains:, regex: or not:, and Gavel reads it as CEL, "
            f"which it is not ({exc.message}): make it prose without a colon, or a validation",
        ) from None


def _cel_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'
