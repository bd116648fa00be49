"""Read the A/B suite keys of a fixture file and give its rows their case and arm.

Frontmatter keys: ``arms``, ``compare``, ``workspace``, ``setup``, ``verify``,
``forbidden``, ``forbidden_files``, ``required_files``, ``max_deps_added``,
``requires``, ``judge``, ``gates``.
Table columns read by a suite: ``known limit`` (a margin range such as
``[-3, 3]``) and ``requires``. The parser expands every row once per arm
(an arm works like the frontmatter of its copy); ``finish_rows`` then names
the copies ``CASE/ARM`` and records where each sits.
"""

from __future__ import annotations

import errno
import math
import os
import re
import shutil
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from fixtures_core.cel import compile_expression
from fixtures_core.errors import CelError, FixtureError, UsageError
from fixtures_core.limits import MAX_FIXTURE_BYTES, LimitExceeded, read_regular_file
from fixtures_core.parsing.builtins import SUITE_TEMPLATE_BUILTINS, suite_template_values, template_names
from fixtures_core.parsing.config import (
    Where,
    read_env,
    read_exit_code,
    read_string,
    read_string_list,
    read_threshold,
    read_timeout,
    reject_near_misses,
)
from fixtures_core.parsing.row_errors import with_error
from fixtures_core.parsing.safe_yaml import load_yaml
from fixtures_core.parsing.template import TemplateError, check_names, render
from fixtures_core.spec import Matrix, PropertyValue, RowSpec
from fixtures_core.suite import (
    DISQUALIFY_RULES,
    GATE_SEVERITIES,
    SCORE_METRIC,
    SEVERITIES,
    ArmRow,
    ArmSpec,
    CaseFacts,
    DisqualifyRule,
    ForbiddenPattern,
    GateSeverity,
    GateSpec,
    JudgeSpec,
    RequiredFile,
    Severity,
    SuiteSpec,
    VerifySpec,
    arm_row_name,
    case_checks,
)

SUITE_KEYS = (
    "arms", "compare", "workspace", "setup", "verify", "forbidden", "forbidden_files", "required_files",
    "max_deps_added", "requires", "judge", "gates", "disqualify", "accept_missing",
)  # fmt: skip
# Seed 04's expected.json names: in a Markdown suite they would silently become properties, checking nothing.
LOOKALIKE_KEYS = {
    "verification_commands": "verify",
    "forbidden_patterns": "forbidden",
    "stdout_contains": "verify's stdoutContains",
    "spec_output_files": "a devlyn fixture folder (its oracles read it from expected.json)",
    "tier_a_waivers": "a devlyn fixture folder (its oracles read it from expected.json)",
    "disqualifiers": "forbidden, forbidden_files, required_files or max_deps_added",
}
ARM_PROPERTY = "arm"
CASE_PROPERTY = "case"
WORKSPACE_NAME = "workspace"  # template name of the attempt's workspace folder
# Columns a suite reads itself (lower-cased headers), never properties.
KNOWN_LIMIT_COLUMNS = ("known limit", "known_limit", "knownlimit")
REQUIRES_COLUMN = "requires"
# CEL names that only an attempt in a workspace provides.
WORKSPACE_VARIABLES = ("diff", "changed_files", "verify", "verify_score", "findings", "disqualified")
_ARM_KEYS = ("exec", "args", "env", "input", "model", "provenance")
ARM_INPUTS = ("spec", "task")  # the case documents an arm of a devlyn suite takes as its prompt
DEVLYN_KEY = "devlyn"  # frontmatter: the devlyn benchmark folder whose fixtures are this suite's cases
_VERIFY_KEYS = ("run", "exitCode", "contains", "notContains", "stdoutContains", "stdoutNotContains", "rows")
_REQUIRED_FILE_KEYS = ("path", "rows")
_FORBIDDEN_KEYS = ("pattern", "severity", "description", "files", "rows")
_JUDGE_KEYS = (
    "command", "rubric", "axes", "blind", "swap", "seed", "timeout", "provenance", "threshold", "protocol",
)  # fmt: skip
JUDGE_PROTOCOLS = ("assay", "devlyn")
_GATE_KEYS = ("name", "cel", "severity")
_ARM_NAME = re.compile(r"[A-Za-z0-9_.-]+")
GATE_VARIABLES = ("rows", "suite")


def read_suite(
    data: Mapping[str, object], key_lines: Mapping[str, int], item_lines: Mapping[str, list[int]], path: str
) -> SuiteSpec | None:
    """The suite declared by a frontmatter, or None when it declares none of the suite keys."""
    present = [key for key in (*SUITE_KEYS, DEVLYN_KEY) if key in data]
    if not present:
        return None
    for key, instead in LOOKALIKE_KEYS.items():
        if key in data:
            raise Where(path, key_lines.get(key, 1)).error(
                key, f"unknown suite key '{key}' (seed 04's expected.json name): use {instead}"
            )

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, 1))

    def items(key: str) -> list[tuple[object, Where]]:
        value = data[key]
        if not isinstance(value, list):
            raise at(key).error(key, f"must be a list, got {value!r}")
        lines = item_lines.get(key, [])
        return [(item, Where(path, lines[i] if i < len(lines) else at(key).line)) for i, item in enumerate(value)]

    source_dir = Path(path).resolve().parent
    devlyn = DEVLYN_KEY in data
    arms = _arms(data["arms"], at("arms"), devlyn) if "arms" in data else ()
    suite = SuiteSpec(
        file=path,
        line=min(key_lines.get(key, 1) for key in present),
        arms=arms,
        compare=_compare(data["compare"], at("compare"), arms) if "compare" in data else None,
        workspace=read_string(data["workspace"], at("workspace"), "workspace") if "workspace" in data else None,
        setup=read_string(data["setup"], at("setup"), "setup") if "setup" in data else None,
        verify=tuple(_verify(item, where) for item, where in items("verify")) if "verify" in data else (),
        forbidden=tuple(_forbidden(item, where) for item, where in items("forbidden")) if "forbidden" in data else (),
        forbidden_files=read_string_list(data["forbidden_files"], at("forbidden_files"), "forbidden_files")
        if "forbidden_files" in data
        else (),
        requires=read_string_list(data["requires"], at("requires"), "requires") if "requires" in data else (),
        judge=_judge(data["judge"], at("judge"), source_dir, "devlyn" if devlyn else "assay")
        if "judge" in data
        else None,
        gates=_gates(items("gates")) if "gates" in data else (),
        required_files=tuple(_required_file(item, where) for item, where in items("required_files"))
        if "required_files" in data
        else (),
        max_deps_added=read_count(data["max_deps_added"], at("max_deps_added"), "max_deps_added")
        if "max_deps_added" in data
        else None,
        disqualify=_disqualify(data["disqualify"], at("disqualify")) if "disqualify" in data else None,
        accept_missing=_bool(data["accept_missing"], at("accept_missing"), "accept_missing")
        if "accept_missing" in data
        else False,
    )
    _check_combination(suite, at, devlyn)
    return suite


def _check_combination(suite: SuiteSpec, at: Callable[[str], Where], devlyn: bool = False) -> None:
    if devlyn:
        return  # the devlyn folder gives the workspace, setup and checks
    if suite.judge is not None and len(suite.arms) < 2:
        raise at("judge").error("judge", "a judge compares arms: declare at least two under arms")
    if suite.workspace is None:
        for key, value in (("setup", suite.setup), ("verify", suite.verify), ("forbidden", suite.forbidden),
                           ("forbidden_files", suite.forbidden_files), ("required_files", suite.required_files),
                           ("max_deps_added", suite.max_deps_added)):  # fmt: skip
            if value or (key == "max_deps_added" and value is not None):
                raise at(key).error(key, "runs in a fresh copy of the workspace: set workspace: DIR too")


def _arms(value: object, where: Where, devlyn: bool) -> tuple[ArmSpec, ...]:
    if not isinstance(value, dict) or not value:
        raise where.error(
            "arms", f"must map each arm name to its overrides (exec, args, env, properties), got {value!r}"
        )
    arms = []
    for name, overrides in value.items():
        label = f"arms.{name}"
        if not isinstance(name, str) or not _ARM_NAME.fullmatch(name):
            raise where.error(label, "an arm name is letters, digits, '_', '-' or '.'")
        overrides = {} if overrides is None else overrides
        if not isinstance(overrides, dict):
            raise where.error(label, f"must be a map of overrides (exec, args, env, properties), got {overrides!r}")
        reject_near_misses({str(k): where.line for k in overrides}, _ARM_KEYS, where.path)
        for reserved in (ARM_PROPERTY, CASE_PROPERTY):
            if reserved in overrides:
                raise where.error(f"{label}.{reserved}", f"'{reserved}' is set by assay (the {reserved}'s name)")
        prompt = overrides.get("input", "task" if name == "bare" else "spec") if devlyn else None
        if "input" in overrides and not devlyn:
            raise where.error(f"{label}.input", f"names a case document, which only a suite with {DEVLYN_KEY}: has")
        if prompt is not None and prompt not in ARM_INPUTS:
            raise where.error(f"{label}.input", f"must be one of {', '.join(ARM_INPUTS)}, got {prompt!r}")
        arms.append(
            ArmSpec(
                name=name,
                line=where.line,
                exec=read_string(overrides["exec"], where, f"{label}.exec") if "exec" in overrides else None,
                args=read_string_list(overrides["args"], where, f"{label}.args") if "args" in overrides else None,
                env=read_env(overrides["env"], where, f"{label}.env") if "env" in overrides else {},
                properties={str(k): v for k, v in overrides.items() if k not in _ARM_KEYS},
                prompt=str(prompt) if prompt is not None else None,
                model=read_string(overrides["model"], where, f"{label}.model") if "model" in overrides else None,
                provenance=read_string(overrides["provenance"], where, f"{label}.provenance")
                if "provenance" in overrides
                else None,
            )
        )
    return tuple(arms)


def _compare(value: object, where: Where, arms: Sequence[ArmSpec]) -> tuple[str, str]:
    names = [a.name for a in arms]
    pair = read_string_list(value, where, "compare")
    if len(pair) != 2 or pair[0] == pair[1]:
        raise where.error(
            "compare", f"names two different arms, first minus second (e.g. [variant, bare]), got {value!r}"
        )
    for name in pair:
        if name not in names:
            raise where.error("compare", f"'{name}' is not an arm (arms: {', '.join(names) or 'none'})")
    return pair[0], pair[1]


def _map(item: object, where: Where, field: str, known: tuple[str, ...], first: str) -> dict[str, object]:
    """A list item as a map; a plain scalar is shorthand for ``{first: scalar}``."""
    if not isinstance(item, dict):
        return {first: read_string(item, where, field)}
    unknown = sorted(set(map(str, item)) - set(known))
    if unknown:
        raise where.error(f"{field}.{unknown[0]}", f"unknown key (known: {', '.join(known)})")
    if first not in item:
        raise where.error(f"{field}.{first}", "is required")
    return {str(k): v for k, v in item.items()}


def _verify(item: object, where: Where) -> VerifySpec:
    spec = _map(item, where, "verify", _VERIFY_KEYS, "run")

    def texts(key: str) -> tuple[str, ...]:
        return read_string_list(spec[key], where, f"verify.{key}") if key in spec else ()

    return VerifySpec(
        run=read_string(spec["run"], where, "verify.run"),
        line=where.line,
        exit_code=read_exit_code(spec["exitCode"], where, "verify.exitCode") if "exitCode" in spec else 0,
        contains=texts("contains"),
        not_contains=texts("notContains"),
        rows=texts("rows"),
        stdout_contains=texts("stdoutContains"),
        stdout_not_contains=texts("stdoutNotContains"),
    )


def _required_file(item: object, where: Where) -> RequiredFile:
    spec = _map(item, where, "required_files", _REQUIRED_FILE_KEYS, "path")
    rows = read_string_list(spec["rows"], where, "required_files.rows") if "rows" in spec else ()
    return RequiredFile(read_string(spec["path"], where, "required_files.path"), where.line, rows)


def _disqualify(value: object, where: Where) -> tuple[DisqualifyRule, ...]:
    rules = read_string_list(value, where, "disqualify") if value != [] else ()
    for rule in rules:
        if rule not in DISQUALIFY_RULES:
            raise where.error("disqualify", f"unknown rule {rule!r} (known: {', '.join(DISQUALIFY_RULES)})")
    return tuple(r for r in DISQUALIFY_RULES if r in rules)


def _bool(value: object, where: Where, field: str) -> bool:
    if not isinstance(value, bool):
        raise where.error(field, f"must be true or false, got {value!r}")
    return value


def read_count(value: object, where: Where, field: str) -> int:
    """A whole number >= 0 (``max_deps_added: 0``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(field, f"must be a whole number >= 0, got {value!r}")
    return value


def _forbidden(item: object, where: Where) -> ForbiddenPattern:
    spec = _map(item, where, "forbidden", _FORBIDDEN_KEYS, "pattern")
    pattern = read_string(spec["pattern"], where, "forbidden.pattern")
    try:
        re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise where.error("forbidden.pattern", f"invalid regular expression {pattern!r}: {exc}") from None
    severity = spec.get("severity", "disqualifier")
    if severity not in SEVERITIES:
        raise where.error("forbidden.severity", f"unknown severity {severity!r} (known: {', '.join(SEVERITIES)})")
    return ForbiddenPattern(
        pattern=pattern,
        line=where.line,
        severity=_as_severity(str(severity)),
        description=read_string(spec["description"], where, "forbidden.description") if "description" in spec else "",
        files=read_string_list(spec["files"], where, "forbidden.files") if "files" in spec else (),
        rows=read_string_list(spec["rows"], where, "forbidden.rows") if "rows" in spec else (),
    )


def _as_severity(text: str) -> Severity:
    return next(s for s in SEVERITIES if s == text)


def _check_rubric_text(path: Path, where: Where) -> None:
    """The rubric is given to the judge as text: a file that is not UTF-8 is refused when the suite loads
    (naming its line), not when the first judge runs."""
    try:
        data = read_regular_file(path, MAX_FIXTURE_BYTES, "rubric file")
    except (OSError, LimitExceeded) as exc:
        raise where.error("judge.rubric", f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise where.error("judge.rubric", f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None


def _judge(value: object, where: Where, source_dir: Path, protocol: str) -> JudgeSpec:
    spec = _map(value, where, "judge", _JUDGE_KEYS, "command")
    command = spec["command"]
    argv = (
        read_string_list(command, where, "judge.command")
        if isinstance(command, list)
        else ("bash", "-c", read_string(command, where, "judge.command"))
    )
    if not argv or not argv[0]:
        raise where.error("judge.command", "is empty")
    rubric = None
    if "rubric" in spec:
        rubric_path = source_dir / read_string(spec["rubric"], where, "judge.rubric")
        if not rubric_path.is_file():
            raise where.error("judge.rubric", f"no such file: {rubric_path}")
        _check_rubric_text(rubric_path, where)
        rubric = str(rubric_path)
    seed = spec.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise where.error("judge.seed", f"must be a whole number >= 0, got {seed!r}")
    given = spec.get("protocol", protocol)
    if given not in JUDGE_PROTOCOLS:
        raise where.error("judge.protocol", f"must be one of {', '.join(JUDGE_PROTOCOLS)}, got {given!r}")
    return JudgeSpec(
        command=argv,
        line=where.line,
        rubric=rubric,
        axes=read_string_list(spec["axes"], where, "judge.axes") if "axes" in spec else (),
        blind=_flag(spec, "blind", True, where),
        swap=_flag(spec, "swap", False, where),
        seed=seed,
        timeout_s=read_timeout(spec["timeout"], where, "judge.timeout") if "timeout" in spec else 600.0,
        provenance=read_string(spec["provenance"], where, "judge.provenance") if "provenance" in spec else None,
        threshold=read_threshold(spec.get("threshold"), where, "judge.threshold"),
        protocol="devlyn" if given == "devlyn" else "assay",
    )


def _flag(spec: Mapping[str, object], key: str, default: bool, where: Where) -> bool:
    value = spec.get(key, default)
    if not isinstance(value, bool):
        raise where.error(f"judge.{key}", f"must be true or false, got {value!r}")
    return value


def _gates(items: list[tuple[object, Where]]) -> tuple[GateSpec, ...]:
    gates: list[GateSpec] = []
    for item, where in items:
        if not isinstance(item, dict):
            raise where.error("gates", f"each gate is a map with name, cel and severity, got {item!r}")
        spec = _map(item, where, "gates", _GATE_KEYS, "name")
        name = read_string(spec["name"], where, "gates.name")
        if "cel" not in spec:
            raise where.error(f"gates[{name}].cel", "is required")
        severity = spec.get("severity", "hard")
        if severity not in GATE_SEVERITIES:
            raise where.error(f"gates[{name}].severity", f"must be hard or soft, got {severity!r}")
        if any(g.name == name for g in gates):
            raise where.error(f"gates[{name}]", f"duplicate gate name '{name}'")
        cel = read_string(spec["cel"], where, f"gates[{name}].cel")
        try:
            compile_expression(cel, GATE_VARIABLES)
        except CelError as exc:
            raise where.error(f"gates[{name}].cel", f"{exc.message} in {cel!r}") from None
        gate_severity: GateSeverity = "hard" if severity == "hard" else "soft"
        gates.append(GateSpec(name=name, cel=cel, severity=gate_severity, line=where.line))
    return tuple(gates)


# --- rows -------------------------------------------------------------------------


def finish_rows(rows: Sequence[RowSpec], suite: SuiteSpec | None) -> tuple[RowSpec, ...]:
    """Name each arm's copy of a row ``CASE/ARM``, keep a case's arms together, read the suite columns."""
    if suite is None:
        return tuple(rows)
    suite = replace(suite, cases=tuple(dict.fromkeys(row.name for row in rows)))
    arm_names = [arm.name for arm in suite.arms]
    if arm_names:
        _check_arm_copies(rows, arm_names)
    overridden = {key for arm in suite.arms for key in arm.properties} | {ARM_PROPERTY}
    first: dict[tuple[int, str], int] = {}
    for row in rows:
        first.setdefault((row.line, row.name), len(first))
    order = {name: index for index, name in enumerate(arm_names)}

    def position(row: RowSpec) -> tuple[int, int]:
        return first[(row.line, row.name)], order.get(str(row.properties.get(ARM_PROPERTY)), 0)

    return with_case_facts(tuple(_finish_row(row, suite, overridden) for row in sorted(rows, key=position)))


def with_case_facts(rows: Sequence[RowSpec]) -> tuple[RowSpec, ...]:
    """The rows, their suite knowing every case's ``CaseFacts`` (each case's first arm row says them)."""
    facts: dict[str, CaseFacts] = {}
    for row in rows:
        if row.ab is not None and row.ab.case not in facts:
            facts[row.ab.case] = CaseFacts(row.ab.case, dict(row.ab.shared), row.ab.known_limit is not None)
    suites: dict[str, SuiteSpec] = {}
    finished = []
    for row in rows:
        if row.ab is None:
            finished.append(row)
            continue
        suite = suites.setdefault(row.ab.suite.file, replace(row.ab.suite, case_facts=tuple(facts.values())))
        finished.append(replace(row, ab=replace(row.ab, suite=suite)))
    return tuple(finished)


def _check_arm_copies(rows: Sequence[RowSpec], arm_names: list[str]) -> None:
    copies_of: dict[tuple[int, str], list[RowSpec]] = defaultdict(list)
    for row in rows:
        copies_of[(row.line, row.name)].append(row)
    for copies in copies_of.values():
        found = sorted(str(r.properties.get(ARM_PROPERTY)) for r in copies)
        if found != sorted(arm_names):
            row = copies[0]
            raise FixtureError(
                row.file, row.line, f"'{ARM_PROPERTY}' is set by assay in a suite with arms: rename the column", "arm"
            )


def _finish_row(row: RowSpec, suite: SuiteSpec, overridden: set[str]) -> RowSpec:
    """The row as a case of the suite; a wrong cell of its own (a known limit, requires) makes only it ERR."""
    where = Where(row.file, row.line)
    properties = dict(row.properties)
    error: FixtureError | None = None
    if CASE_PROPERTY in properties:
        error = where.error(CASE_PROPERTY, f"'{CASE_PROPERTY}' is set by assay in a suite (the row's name): rename it")
    limits = [properties.pop(key) for key in KNOWN_LIMIT_COLUMNS if key in properties]
    requires_cell = properties.pop(REQUIRES_COLUMN, None)
    try:
        known_limit = _known_limit(limits[0], where) if limits and limits[0] not in ("", None) else None
        requires = suite.requires + _requires_cell(requires_cell, where)
    except FixtureError as exc:
        error, known_limit, requires = error or exc, None, suite.requires
    properties[CASE_PROPERTY] = row.name
    arm = str(properties[ARM_PROPERTY]) if suite.arms else None
    shared = {k: v for k, v in properties.items() if k not in overridden}
    checks = case_checks(suite, row.name)
    ab = ArmRow(suite, row.name, arm, row.line, known_limit=known_limit, shared=shared, checks=checks)
    finished = replace(
        row, name=arm_row_name(row.name, arm), properties=properties, skip=row.skip or missing_tools(requires), ab=ab
    )
    return finished if error is None else with_error(finished, error)


def _known_limit(value: PropertyValue, where: Where) -> tuple[float, float]:
    """A margin range ``[low, high]`` in points (a cell's text is read as YAML)."""
    parsed = value
    if isinstance(value, str):
        try:
            parsed = load_yaml(value, where.path, where.line, "known limit")[1]
        except FixtureError:  # not YAML, or past a limit (a cell of 5000 '['): not a margin range either way
            parsed = None
    numbers = parsed if isinstance(parsed, list) else []
    if len(numbers) != 2 or not all(_is_number(n) for n in numbers):
        raise where.error("known limit", f"must be a margin range [low, high] in points such as [-3, 3], got {value!r}")
    low, high = float(numbers[0]), float(numbers[1])
    if low > high:
        raise where.error("known limit", f"low {low:g} is greater than high {high:g}")
    return low, high


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _requires_cell(value: PropertyValue, where: Where) -> tuple[str, ...]:
    if value is None or value == "":
        return ()
    if isinstance(value, list):
        return read_string_list(value, where, "requires")
    return tuple(word for word in re.split(r"[,\s]+", str(value)) if word)


def missing_tools(tools: Sequence[str]) -> str | None:
    """The skip reason when a required tool is not on PATH, else None."""
    missing = [tool for tool in dict.fromkeys(tools) if shutil.which(tool) is None]
    return f"requires {', '.join(missing)}: not found on PATH" if missing else None


# --- checks before anything runs --------------------------------------------------------


def workspace_names(row: RowSpec) -> tuple[str, ...]:
    """Template names a suite adds for its rows: the attempt's workspace folder."""
    if row.ab is None or row.ab.suite.workspace is None:
        return ()
    return (WORKSPACE_NAME, "prompt") if row.ab.prompt is not None else (WORKSPACE_NAME,)


def suite_row_errors(row: RowSpec) -> list[FixtureError]:
    """Errors of a row's suite configuration that need its properties: templates, workspace folders, reserved names."""
    errors = _workspace_variables_outside_suites(row)
    if row.ab is not None:
        errors.extend(_suite_row_errors(row))
    return errors


def _workspace_variables_outside_suites(row: RowSpec) -> list[FixtureError]:
    if row.ab is not None and row.ab.suite.workspace is not None:
        return []
    expressions = [row.expect.cel, row.indeterminate, *(m.extract for m in row.metrics)]
    for expression in filter(None, expressions):
        used = [name for name in WORKSPACE_VARIABLES if re.search(rf"(?<![.\w]){name}\b", expression)]
        if used:
            return [
                FixtureError(
                    row.file,
                    row.expect.cel_line or row.line,
                    f"'{used[0]}' exists only in a suite with a workspace (set workspace: DIR), in {expression!r}",
                    "CEL",
                )
            ]
    return []


def _suite_row_errors(row: RowSpec) -> list[FixtureError]:
    assert row.ab is not None
    suite = row.ab.suite
    errors = []
    known = [*template_names(row), *workspace_names(row)]
    templated = [("setup", suite.setup, known)] + [("verify", v.run, known) for v in suite.verify]
    if suite.judge is not None:  # one judge call per case: it sees what the arms share
        shared = [*row.ab.shared, *SUITE_TEMPLATE_BUILTINS]
        templated += [("judge.command", part, shared) for part in suite.judge.command]
    for field, text, names in templated:
        if text is None:
            continue
        try:
            check_names(text, names)
        except TemplateError as exc:
            errors.append(FixtureError(row.file, row.line, f"row '{row.name}': {exc}", field))
    if suite.workspace is not None:
        errors.extend(_workspace_errors(row, suite.workspace))
    if suite.judge is not None and any(m.name == SCORE_METRIC for m in row.metrics):
        metric = next(m for m in row.metrics if m.name == SCORE_METRIC)
        errors.append(
            FixtureError(
                metric.file, metric.line, f"'{SCORE_METRIC}' is the judge's metric in a suite: rename it", "metrics"
            )
        )
    return errors


def _workspace_errors(row: RowSpec, template: str) -> list[FixtureError]:
    try:
        check_names(template, [*row.properties, *SUITE_TEMPLATE_BUILTINS])
    except TemplateError as exc:
        return [FixtureError(row.file, row.line, f"row '{row.name}': {exc}", "workspace")]
    folder = workspace_folder(row)
    if not folder.is_dir():
        return [FixtureError(row.file, row.line, f"row '{row.name}': no such folder: {folder}", "workspace")]
    loop = symlink_loop(str(folder))
    if loop is not None:
        return [
            FixtureError(
                row.file, row.line, f"row '{row.name}': symlink {loop} is a loop (it leads back to itself)", "workspace"
            )
        ]
    return []


def symlink_loop(folder: str) -> str | None:
    """The first symlink under ``folder`` (not following links) that never resolves, or None."""
    for parent, names, files in os.walk(folder):
        for name in sorted([*names, *files]):
            link = os.path.join(parent, name)
            if not os.path.islink(link):
                continue
            try:
                os.path.realpath(link, strict=True)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    return os.path.relpath(link, folder)
    return None


def workspace_folder(row: RowSpec) -> Path:
    """The folder copied fresh for every attempt of a suite row (relative to the fixture file's folder)."""
    assert row.ab is not None and row.ab.suite.workspace is not None
    values = suite_template_values(row.properties, row.name, row.source_dir)
    return Path(row.source_dir) / render(row.ab.suite.workspace, values)


def with_judge(matrix: Matrix, command: str) -> Matrix:
    """Every suite of the matrix judged by ``command`` (a shell command line) instead of its own judge;
    UsageError when the matrix has no suite with two arms to judge."""
    replaced: dict[str, SuiteSpec] = {}
    for row in matrix.rows:
        suite = row.ab.suite if row.ab is not None else None
        if suite is None or suite.file in replaced or len(suite.arms) < 2:
            continue
        argv = ("bash", "-c", command)
        judge = replace(suite.judge, command=argv) if suite.judge is not None else JudgeSpec(argv, suite.line)
        replaced[suite.file] = replace(suite, judge=judge)
    if not replaced:
        raise UsageError("--judge: no A/B suite with at least two arms to judge in these fixtures")
    files = []
    for fixture in matrix.files:
        rows = tuple(
            replace(row, ab=replace(row.ab, suite=replaced[row.ab.suite.file]))
            if row.ab is not None and row.ab.suite.file in replaced
            else row
            for row in fixture.rows
        )
        files.append(replace(fixture, rows=rows))
    return Matrix(files=tuple(files))
