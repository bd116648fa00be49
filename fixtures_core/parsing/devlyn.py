"""Read a devlyn-cli benchmark (seed 04) from its fixture folders: a second reader of the A/B suite model.

A devlyn benchmark folder holds ``RUBRIC.md`` and ``fixtures/``: a shared
``test-repo/`` and one folder per fixture, ``F<N>-<slug>/``, with
``metadata.json``, ``spec.md``, ``task.txt``, ``expected.json``, ``NOTES.md``
and ``setup.sh`` (``fixtures/retired/`` is not run, as in devlyn's harness).
Each fixture is a case and runs once per arm in a fresh copy of
``test-repo`` with its ``setup.sh`` applied; the arms given ``spec.md`` or
``task.txt`` as their prompt. ``expected.json`` becomes the case's checks,
with devlyn's own semantics (see ``_checks``), the judge speaks devlyn's
protocol, and the gates are devlyn's ship gates (``devlyn_gates``).

Without a suite file the arms are devlyn's three: ``variant`` and
``solo_claude`` (the spec) and ``bare`` (the task), each ``claude -p PROMPT``;
a Markdown file whose frontmatter says ``devlyn: FOLDER`` names the folder and
may set ``arms`` (with ``input: spec|task``), ``compare``, ``judge``,
``gates``, ``repeat``, ``env`` and the run's throughput keys.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.devlyn_gates import devlyn_gates
from fixtures_core.parsing.devlyn_lint import lint_fixture
from fixtures_core.parsing.row_errors import broken_row
from fixtures_core.parsing.settings import Inherited
from fixtures_core.parsing.suite import ARM_PROPERTY, CASE_PROPERTY, missing_tools, with_case_facts
from fixtures_core.parsing.tables import command_argv
from fixtures_core.spec import Expectation, FixtureFile, FixtureWarning, PropertyValue, RowSpec
from fixtures_core.suite import (
    DISQUALIFY_RULES,
    ArmRow,
    ArmSpec,
    CaseChecks,
    ForbiddenPattern,
    JudgeSpec,
    OracleSpec,
    SelfVerdict,
    Severity,
    SuiteSpec,
    VerifySpec,
    arm_row_name,
)

FIXTURES = "fixtures"
TEST_REPO = "test-repo"
RETIRED = "retired"
RUBRIC = "RUBRIC.md"
FIXTURE_FILES = ("metadata.json", "spec.md", "task.txt", "expected.json", "NOTES.md", "setup.sh")
NEEDED_TO_RUN = ("metadata.json", "expected.json", "spec.md", "task.txt")  # run-fixture.sh refuses without them
DOCUMENTS = {"spec": "spec.md", "task": "task.txt", "expected": "expected.json"}
KNOWN_LIMIT_CATEGORIES = ("edge", "known-limit")
KNOWN_LIMIT_RANGE = (-3.0, 3.0)  # seed 04: F8 "is explicitly allowed to tie or lose (margin in [-3, +3])"
VERIFY_TIMEOUT_S = 60  # run-fixture.sh's default ``timeout_sec``, allowed 1-600
ATTEMPT_SLACK_S = 120.0  # git, setup and oracles around the arm and its verification, per attempt
DEFAULT_ARMS = (("variant", "spec"), ("solo_claude", "spec"), ("bare", "task"))
DEFAULT_ARGS = ("-p", "{{ .prompt }}", "--dangerously-skip-permissions")
# The judge as judge.sh invokes it: codex's flagship, read-only, the prompt on stdin, JSON on stdout.
DEFAULT_JUDGE = (
    "codex", "exec", "--ignore-user-config", "--ignore-rules", "--ephemeral", "--disable", "codex_hooks",
    "--disable", "hooks", "-s", "read-only", "--skip-git-repo-check", "-c", "model_reasoning_effort=xhigh", "-",
)  # fmt: skip
JUDGE_TIMEOUT_S = 1800.0
# run-fixture.sh's deterministic oracles (when the benchmark has them), in the order verify.json lists them.
ORACLES = (
    ("scope-tier-a", "oracle-scope-tier-a.py", True),
    ("scope-tier-b", "oracle-scope-tier-b.py", True),
    ("test-fidelity", "oracle-test-fidelity.py", False),
)
# compile-report.py disqualifies a pipeline arm whose own state does not say it passed.
PIPELINE_VERDICT = SelfVerdict(
    files=(".devlyn/runs/*/pipeline.state.json", ".devlyn/pipeline.state.json"),
    fields=("phases.final_report.verdict", "phases.verify.verdict"),
    accepted=("PASS", "PASS_WITH_ISSUES"),
)
EXPECTED_KEYS = (
    "verification_commands", "forbidden_patterns", "required_files", "forbidden_files", "max_deps_added",
    "spec_output_files", "tier_a_waivers",
)  # fmt: skip
COMMAND_KEYS = ("cmd", "exit_code", "stdout_contains", "stdout_not_contains", "contract_refs", "timeout_sec")
PATTERN_KEYS = ("pattern", "description", "files", "severity")


@dataclass(frozen=True)
class Bench:
    """A devlyn benchmark on disk: its folder (``RUBRIC.md``) and its fixtures folder."""

    root: Path
    fixtures: Path

    @property
    def test_repo(self) -> Path:
        return self.fixtures / TEST_REPO

    def fixture_folders(self) -> list[Path]:
        """The fixtures run-suite.sh discovers: ``fixtures/F*/``, by name (``retired/`` is not one)."""
        return sorted(p for p in self.fixtures.glob("F*") if p.is_dir() and not p.is_symlink())

    def retired_folders(self) -> list[Path]:
        """The retired fixtures, ``fixtures/retired/F*/``: kept for replay (seed 04), run only when named."""
        return sorted(p for p in (self.fixtures / RETIRED).glob("F*") if p.is_dir() and not p.is_symlink())


def find_bench(path: Path) -> Bench | None:
    """The devlyn benchmark at ``path`` (its folder, or its ``fixtures/`` folder), or None. Its paths are
    absolute: rows run in other folders (a workspace copy, a worker's), where a relative one means another place."""
    path = path.absolute()  # not resolve(): a symlinked benchmark keeps the name its user gave it
    for root, fixtures in ((path, path / FIXTURES), (path.parent, path)):
        if (fixtures / TEST_REPO).is_dir() and any((d / "metadata.json").is_file() for d in fixtures.glob("F*")):
            return Bench(root, fixtures)
    return None


def read_bench(bench: Bench, display: str, identity: str, settings: Inherited | None = None) -> FixtureFile:
    """Every fixture of the benchmark as an A/B suite's rows (one per arm); ``settings`` are a suite
    file's (``devlyn: FOLDER``), else devlyn's defaults. A broken fixture makes only its own rows ERR."""
    base = settings or Inherited()
    suite = _suite(bench, display, base)
    rows: list[RowSpec] = []
    warnings: list[FixtureWarning] = []
    digest = hashlib.sha256()
    for number, folder in enumerate(bench.fixture_folders(), start=1):
        rows += _case_rows(bench, folder, number, suite, base, display, identity, digest)
        warnings += lint_fixture(folder)
    cases = tuple(dict.fromkeys(row.ab.case for row in rows if row.ab is not None))
    start = len(cases) + 1
    for number, folder in enumerate(bench.retired_folders(), start=start):  # replayed on demand (by id)
        retired = _case_rows(bench, folder, number, suite, base, display, identity, digest)
        rows += [replace(row, ab=replace(row.ab, retired=True)) if row.ab is not None else row for row in retired]
    suite = replace(suite, cases=cases)
    rows = [replace(row, ab=replace(row.ab, suite=suite)) if row.ab is not None else row for row in rows]
    return FixtureFile(
        path=display, sha256=digest.hexdigest(), rows=with_case_facts(rows), identity=identity, warnings=tuple(warnings)
    )


def _suite(bench: Bench, display: str, base: Inherited) -> SuiteSpec:
    given = base.suite
    arms = given.arms if given is not None and given.arms else _default_arms()
    pair = given.compare if given is not None and given.compare is not None else (arms[0].name, arms[-1].name)
    solo = next((a.name for a in arms if a.name not in pair), None)
    rubric = bench.root / RUBRIC
    judge = given.judge if given is not None and given.judge is not None else None
    if judge is None:
        judge = JudgeSpec(
            command=DEFAULT_JUDGE,
            line=1,
            rubric=str(rubric) if rubric.is_file() else None,
            timeout_s=JUDGE_TIMEOUT_S,
            provenance="codex --version",
            protocol="devlyn",
        )
    elif judge.rubric is None and rubric.is_file():
        judge = replace(judge, rubric=str(rubric))
    accept_missing = given is not None and given.accept_missing
    gates = (
        given.gates if given is not None and given.gates else devlyn_gates(pair[0], pair[1], solo, 1, accept_missing)
    )
    rules = given.disqualify if given is not None and given.disqualify is not None else DISQUALIFY_RULES
    exempt = tuple(a.name for a in arms if a.prompt == "task")
    return SuiteSpec(
        file=display,
        line=1,
        arms=arms,
        compare=pair,
        workspace=str(bench.test_repo),
        setup='f="{{ .fixtureDir }}/setup.sh"; if [ -s "$f" ]; then if [ -x "$f" ]; then "$f"; else bash "$f"; fi; fi',
        judge=judge,
        gates=gates,
        requires=given.requires if given is not None else (),
        disqualify=rules,
        accept_missing=accept_missing,
        self_verdict=replace(PIPELINE_VERDICT, exempt=exempt),
        workspace_env=("BENCH_WORKDIR",),
        source="devlyn",
    )


def _default_arms() -> tuple[ArmSpec, ...]:
    return tuple(
        ArmSpec(name, 1, exec="claude", args=DEFAULT_ARGS, prompt=prompt, provenance="claude --version")
        for name, prompt in DEFAULT_ARMS
    )


def _case_rows(
    bench: Bench,
    folder: Path,
    number: int,
    suite: SuiteSpec,
    base: Inherited,
    display: str,
    identity: str,
    digest: hashlib._Hash,
) -> list[RowSpec]:
    """The arm rows of one fixture, or its broken rows (ERR) when the fixture cannot be read."""
    case = folder.name
    try:
        fixture = read_fixture(folder, digest)
    except FixtureError as exc:
        return [
            replace(
                broken_row(exc, arm_row_name(case, arm.name), number, {CASE_PROPERTY: case, ARM_PROPERTY: arm.name}),
                file=display,
                source_dir=str(bench.root),
                fixture_id=identity,
                ab=ArmRow(suite, case, arm.name, number),
            )
            for arm in suite.arms
        ]
    shared = {**base.properties, **fixture.properties, "fixtureDir": str(folder), CASE_PROPERTY: case}
    # One attempt's budget: the arm's own limit, its verification commands' and the slack around them.
    attempt_s = (
        fixture.timeout_s + sum(v.timeout_s or VERIFY_TIMEOUT_S for v in fixture.checks.verify) + ATTEMPT_SLACK_S
    )
    rows = []
    for arm in suite.arms:
        ab = ArmRow(
            suite,
            case,
            arm.name,
            number,
            known_limit=fixture.known_limit,
            shared=shared,
            checks=fixture.checks,
            prompt=arm.prompt,
            arm_timeout_s=fixture.timeout_s,
        )
        rows.append(
            RowSpec(
                file=display,
                line=number,
                name=arm_row_name(case, arm.name),
                argv=command_argv(None, arm.exec or base.exec or "claude", arm.args, DEFAULT_ARGS),
                expect=Expectation(),
                properties={**shared, **arm.properties, ARM_PROPERTY: arm.name},
                env={**base.env, **arm.env},
                timeout_s=attempt_s * base.repeat,
                repeat=base.repeat,
                skip=missing_tools((*suite.requires, *fixture.tools)),
                source_dir=str(bench.root),
                fixture_id=identity,
                ab=ab,
                serial=base.serial,
                pass_rate=base.pass_rate,
            )
        )
    return rows


@dataclass(frozen=True)
class Fixture:
    """What one fixture folder declares."""

    properties: Mapping[str, PropertyValue]
    checks: CaseChecks
    timeout_s: float
    tools: tuple[str, ...]
    known_limit: tuple[float, float] | None


def read_fixture(folder: Path, digest: hashlib._Hash | None = None) -> Fixture:
    """One fixture folder; FixtureError naming the file (and line) of the first problem."""
    for name in NEEDED_TO_RUN:
        if not (folder / name).is_file():
            raise FixtureError(str(folder / name), None, "fixture missing required file (see fixtures/SCHEMA.md)")
    metadata = _json_object(folder / "metadata.json", digest)
    expected = _json_object(folder / "expected.json", digest)
    timeout = metadata.get("timeout_seconds")
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
        where = str(folder / "metadata.json")
        raise FixtureError(
            where, None, f"must be a positive whole number of seconds, got {timeout!r}", "timeout_seconds"
        )
    category = metadata.get("category")
    properties = {
        key: value
        for key, value in metadata.items()
        if isinstance(value, (str, int, float, bool)) and key not in (CASE_PROPERTY, ARM_PROPERTY)
    }
    for name in ("spec.md", "task.txt", "setup.sh"):
        if digest is not None and (folder / name).is_file():
            digest.update((folder / name).read_bytes())
    tools = metadata.get("required_tools", [])
    return Fixture(
        properties=properties,
        checks=_checks(folder, expected),
        timeout_s=float(timeout),
        tools=tuple(str(t) for t in tools) if isinstance(tools, list) else (),
        known_limit=KNOWN_LIMIT_RANGE if category in KNOWN_LIMIT_CATEGORIES else None,
    )


def _json_object(path: Path, digest: hashlib._Hash | None) -> dict[str, object]:
    data = path.read_bytes()
    if digest is not None:
        digest.update(data)
    try:
        document = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError as exc:
        raise FixtureError(str(path), None, f"not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        raise FixtureError(str(path), line, f"not JSON: {getattr(exc, 'msg', exc)}") from None
    if not isinstance(document, dict):
        raise FixtureError(str(path), 1, f"must be a JSON object, got {type(document).__name__}")
    return document


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _checks(folder: Path, expected: Mapping[str, object]) -> CaseChecks:
    """``expected.json`` as the case's checks, with the semantics of devlyn's run-fixture.sh:
    commands run with ``sh -c`` as written (no templates), each with its own ``timeout_sec`` (60 s),
    ``stdout_contains`` matched against stdout (seed 04's name; devlyn's harness also searches stderr);
    forbidden patterns searched in the diff of the files they name (default severity ``warning``);
    ``max_deps_added`` 0 unless given."""
    path = str(folder / "expected.json")
    unknown = sorted(set(expected) - set(EXPECTED_KEYS))
    if unknown:
        raise FixtureError(path, None, f"unknown key (known: {', '.join(EXPECTED_KEYS)})", unknown[0])
    cap = expected.get("max_deps_added", 0)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 0:
        raise FixtureError(path, None, f"must be a whole number >= 0, got {cap!r}", "max_deps_added")
    oracles = _oracles(folder.parent.parent / "scripts")
    return CaseChecks(
        verify=tuple(_command(item, path, i) for i, item in enumerate(_list(expected, "verification_commands", path))),
        forbidden=tuple(_pattern(item, path, i) for i, item in enumerate(_list(expected, "forbidden_patterns", path))),
        forbidden_files=_texts(expected, "forbidden_files", path),
        required_files=_texts(expected, "required_files", path),
        max_deps_added=cap,
        oracles=oracles,
        verify_env={"BENCH_FIXTURE_DIR": str(folder.resolve())},
        documents={name: str((folder / file).resolve()) for name, file in DOCUMENTS.items()},
    )


def _oracles(scripts: Path) -> tuple[OracleSpec, ...]:
    """devlyn's deterministic oracles that the benchmark has, invoked as run-fixture.sh invokes them."""
    found = []
    for name, script, reads_expected in ORACLES:
        if (scripts / script).is_file():
            argv = ("python3", str(scripts / script), "--work", "{{ .workspace }}", "--scaffold", "{{ .scaffold }}")
            found.append(OracleSpec(name, argv + (("--expected", "{{ .expected }}") if reads_expected else ())))
    return tuple(found)


def _list(expected: Mapping[str, object], key: str, path: str) -> list[object]:
    value = expected.get(key, [])
    if not isinstance(value, list):
        raise FixtureError(path, None, f"must be a list, got {value!r}", key)
    return value


def _texts(expected: Mapping[str, object], key: str, path: str) -> tuple[str, ...]:
    items = _list(expected, key, path)
    if not all(isinstance(item, str) for item in items):
        raise FixtureError(path, None, f"must be a list of paths, got {items!r}", key)
    return tuple(str(item) for item in items)


def _command(item: object, path: str, index: int) -> VerifySpec:
    field = f"verification_commands[{index}]"
    item = _entry(item, path, field, "cmd", "a shell command", COMMAND_KEYS)
    exit_code = item.get("exit_code", 0)
    if isinstance(exit_code, bool) or not isinstance(exit_code, int):
        raise FixtureError(path, None, f"must be a whole number, got {exit_code!r}", f"{field}.exit_code")
    timeout = item.get("timeout_sec", VERIFY_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 600:
        raise FixtureError(path, None, f"must be a whole number from 1 to 600, got {timeout!r}", f"{field}.timeout_sec")
    return VerifySpec(
        run=str(item["cmd"]),
        line=index + 1,
        exit_code=exit_code,
        stdout_contains=_strings(item, "stdout_contains", path, field),
        stdout_not_contains=_strings(item, "stdout_not_contains", path, field),
        timeout_s=float(timeout),
        shell="sh",
        templated=False,
    )


def _entry(item: object, path: str, field: str, key: str, what: str, known: tuple[str, ...]) -> dict[str, object]:
    """An entry of an expected.json list: an object holding ``key`` (text), with no key it does not know."""
    if not isinstance(item, dict) or not isinstance(item.get(key), str):
        raise FixtureError(path, None, f"must be an object with {key} ({what})", field)
    unknown = sorted(set(map(str, item)) - set(known))
    if unknown:
        raise FixtureError(path, None, f"unknown key (known: {', '.join(known)})", f"{field}.{unknown[0]}")
    return {str(k): v for k, v in item.items()}


def _strings(item: Mapping[str, object], key: str, path: str, field: str) -> tuple[str, ...]:
    value = item.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FixtureError(path, None, f"must be a list of texts, got {value!r}", f"{field}.{key}")
    return tuple(str(v) for v in value)


_SEVERITIES: Mapping[str, Severity] = {"disqualifier": "disqualifier", "warning": "warning", "critical": "critical"}


def _pattern(item: object, path: str, index: int) -> ForbiddenPattern:
    field = f"forbidden_patterns[{index}]"
    item = _entry(item, path, field, "pattern", "a regular expression", PATTERN_KEYS)
    try:
        re.compile(str(item["pattern"]))
    except re.error as exc:
        raise FixtureError(path, None, f"invalid regular expression: {exc}", f"{field}.pattern") from None
    severity = item.get("severity", "warning")
    if severity not in _SEVERITIES:
        raise FixtureError(
            path, None, f"must be one of {', '.join(_SEVERITIES)}, got {severity!r}", f"{field}.severity"
        )
    files = _strings(item, "files", path, field)
    description = item.get("description", "")
    return ForbiddenPattern(
        pattern=str(item["pattern"]),
        line=index + 1,
        severity=_SEVERITIES[str(severity)],
        description=description if isinstance(description, str) else "",
        files=files,
        scope="diff",
    )
