"""One attempt of an A/B suite row: a fresh workspace, setup, the arm, its diff, verification.

Everything the attempt produced is written to its own evidence folder under
the run (``attempts/CASE/ARM/SAMPLE/``, the prompt the arm was given as
``input.md``) and is visible to the row's CEL as ``diff``, ``changed_files``,
``verify``, ``verify_score``, ``findings`` and ``disqualified``. After the
arm: forbidden patterns and files, oracles, verification, required files,
new dependencies, the arm's own verdict, and the suite's disqualifying
outcomes (``SuiteSpec.disqualify``) make the attempt's findings. A dry run prepares the workspace, runs setup and
verification, and never starts the arm; its samples are SKIP ("dry run"),
as is every sample of a row outside an A/B suite, which runs nothing at all.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from fixtures_core.durations import format_duration
from fixtures_core.execution.checks import check_sample, dry_run_sample
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.oracles import run_oracles
from fixtures_core.execution.run_settings import RunSettings
from fixtures_core.execution.sampling import Execution, execute, ms_since
from fixtures_core.execution.self_verdict import self_verdict_problem
from fixtures_core.execution.workspace import (
    Changes,
    DependencyCountError,
    Workspace,
    WorkspaceError,
    capture,
    copy_workspace,
    dependencies_added,
    missing_files,
    run_verify,
    scan,
    verify_score,
)
from fixtures_core.files import json_text, slug, write_text_atomic
from fixtures_core.parsing.suite import WORKSPACE_NAME, workspace_folder
from fixtures_core.parsing.template import render
from fixtures_core.redaction import Redactor, redactor
from fixtures_core.results import SampleResult
from fixtures_core.spec import RowSpec
from fixtures_core.suite import Attempt, Finding, VerifyResult
from fixtures_core.text import excerpt
from fixtures_core.verdicts import sample as sample_verdict

ATTEMPTS = "attempts"
DRY_RUN = "dry run"  # why a sample of a dry run did not run
PROMPT_FILE = "input.md"  # the prompt an arm was given, in its attempt's folder
PROMPT_PROPERTY = "prompt"  # a row's or arm's prompt text, saved as input.md
SCAFFOLD_NAME = "scaffold"  # template name of the starting commit (oracles diff against it)
EXPECTED_NAME = "expected"  # template name of the case's expected.json (devlyn's oracles read it)


def needs_attempt(row: RowSpec, dry_run: bool) -> bool:
    """True when ``run_attempt`` runs a sample of ``row``: a suite row with a workspace, or any row
    of a dry run (which runs no arm and no row outside a suite)."""
    return dry_run or (row.ab is not None and row.ab.suite.workspace is not None)


def attempt_folder(row: RowSpec, index: int) -> str:
    """Where an attempt's evidence goes, relative to the run folder (one folder per case, arm and sample)."""
    case, arm = (row.ab.case, row.ab.arm) if row.ab is not None else (row.name, None)
    return "/".join([ATTEMPTS, slug(case), slug(arm or "-"), str(index)])


def run_attempt(
    row: RowSpec,
    index: int,
    deadline: float,
    values: dict[str, object],
    env: dict[str, str],
    cwd: str,
    tmpdir: str,
    settings: RunSettings,
    containment: Containment,
) -> SampleResult:
    """Run sample ``index`` of ``row`` as an attempt; its evidence lands under the run folder.

    The command runs in the workspace (a row's ``cwd`` is relative to it), else in ``cwd``.
    CEL sees the real output; what is written to disk and kept in the record is masked.
    """
    if settings.dry_run and row.ab is None:
        return dry_run_sample(row, index, DRY_RUN)  # nothing to prepare: no workspace, no command
    relative = attempt_folder(row, index)
    folder = Path(settings.evidence_dir or tempfile.mkdtemp(prefix="assay-evidence-")) / relative
    folder.mkdir(parents=True, exist_ok=True)
    record = Attempt(evidence=relative if settings.evidence_dir else str(folder), dry_run=settings.dry_run)
    trail = _Trail(folder, redactor(row.redaction, env))
    scratch = Path(tempfile.mkdtemp(prefix="assay-ws-", dir=settings.tmp_root))
    cel: Mapping[str, object] = cel_variables(record, "")
    try:
        record = _give_prompt(row, values, record, trail)
        workspace = _prepare(row, scratch, deadline, values, env, containment, trail)
        if workspace is not None:
            cwd = os.path.normpath(workspace.path / render(row.cwd, values)) if row.cwd else str(workspace.path)
            values.update(CWD=cwd, workDir=cwd)
        argv = [render(arg, values) for arg in row.argv]
        trail.json("command.json", {"argv": argv, "cwd": cwd, "env": {k: env[k] for k in row.env}})
        if settings.dry_run:
            execution = Execution(None, b"", b"", 0.0)
        else:
            started = time.monotonic()
            execution = execute(
                argv,
                deadline=_arm_deadline(row, deadline),
                cwd=cwd,
                env=env,
                capture_limit=settings.capture_limit,
                containment=containment,
            )
            trail.timing["arm_ms"] = ms_since(started)
            if execution.timed_out and time.monotonic() < deadline:  # the arm's own limit, not the row's budget
                record = replace(record, arm_timed_out=True)
                execution = replace(execution, timed_out=False)
        trail.text("stdout.txt", execution.stdout.decode("utf-8", "replace"))
        trail.text("stderr.txt", execution.stderr.decode("utf-8", "replace"))
        stopped = None
        if workspace is not None and not (execution.timed_out or execution.cancelled or execution.error):
            record, cel, stopped = _inspect(row, workspace, values, env, containment, record, trail, execution)
        sample = _finish(row, index, stopped or execution, tmpdir, values, record, cel, settings.dry_run, trail)
        return _stopped_arm(row, sample) if record.arm_timed_out and stopped is None else sample
    except WorkspaceError as exc:
        failed = Execution(None, b"", b"", 0.0, error=str(exc))
        sample = _finish(row, index, failed, tmpdir, values, record, cel, settings.dry_run, trail)
        return replace(sample, stopped=exc.stopped)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _give_prompt(row: RowSpec, values: dict[str, object], record: Attempt, trail: _Trail) -> Attempt:
    """The arm's prompt, when it has one, as ``{{ .prompt }}`` and in the attempt's ``input.md``: the case
    document the arm takes (``ArmRow.prompt``), else the row's ``prompt`` property."""
    if row.ab is not None and row.ab.prompt is not None:
        path = row.ab.checks.documents.get(row.ab.prompt)
        if path is None:
            raise WorkspaceError(f"the case has no '{row.ab.prompt}' document to give the arm as its prompt")
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise WorkspaceError(f"cannot read the arm's prompt {path}: {exc}") from None
        values[PROMPT_PROPERTY] = text
    elif not isinstance(values.get(PROMPT_PROPERTY), str):
        return record
    trail.text(PROMPT_FILE, str(values[PROMPT_PROPERTY]))
    return replace(record, prompt=PROMPT_FILE)


def _arm_deadline(row: RowSpec, deadline: float) -> float:
    """When the arm is stopped: at its own limit (``ArmRow.arm_timeout_s``) or the row's budget, the earlier."""
    limit = row.ab.arm_timeout_s if row.ab is not None else None
    return deadline if limit is None else min(deadline, time.monotonic() + limit)


def _stopped_arm(row: RowSpec, sample: SampleResult) -> SampleResult:
    """A sample whose arm ran past its own limit (its evidence was still taken)."""
    assert row.ab is not None and row.ab.arm_timeout_s is not None
    why = f"the arm ran past its limit of {format_duration(row.ab.arm_timeout_s)} and was stopped"
    return sample_verdict.past_arm_limit(sample, why)


@dataclass
class _Trail:
    """An attempt's evidence folder: every text written to it is masked first, and written atomically."""

    folder: Path
    mask: Redactor
    timing: dict[str, float] = field(default_factory=dict)

    def text(self, name: str, text: str) -> None:
        write_text_atomic(self.folder / name, self.mask.text(text))

    def json(self, name: str, document: object) -> None:
        self.text(name, json_text(document))


def _prepare(
    row: RowSpec,
    scratch: Path,
    deadline: float,
    values: dict[str, object],
    env: dict[str, str],
    containment: Containment,
    trail: _Trail,
) -> Workspace | None:
    """Copy, commit, set up and commit again; None for a row without a workspace (dry run)."""
    if row.ab is None or row.ab.suite.workspace is None:
        return None
    started = time.monotonic()
    source = workspace_folder(row)
    workspace = copy_workspace(source, scratch / (source.name or "workspace"), deadline, containment)
    values[WORKSPACE_NAME] = str(workspace.path)
    for name in ("ASSAY_WORKSPACE", *row.ab.suite.workspace_env):
        env[name] = str(workspace.path)
    setup = row.ab.suite.setup
    if setup is not None:
        command = render(setup, values)
        done = execute(
            ["bash", "-c", command], deadline=deadline, cwd=str(workspace.path), env=env, containment=containment
        )
        output = (done.stdout + done.stderr).decode("utf-8", "replace")
        trail.text("setup.txt", f"$ {command}\n{output}")
        if done.exit_code != 0:
            reason = done.error or (
                "the row's time budget ran out" if done.timed_out else f"exit code {done.exit_code}"
            )
            last = excerpt(output, 300, lines=3, tail=True).replace("\n", " ")  # where its error is, on one line
            raise WorkspaceError(f"setup failed ({reason}): {trail.mask.text(last)}", done.stopped)
    workspace.start = workspace.commit("assay: setup")
    values[SCAFFOLD_NAME] = workspace.start
    trail.timing["setup_ms"] = ms_since(started)
    return workspace


def _inspect(
    row: RowSpec,
    workspace: Workspace,
    values: dict[str, object],
    env: dict[str, str],
    containment: Containment,
    record: Attempt,
    trail: _Trail,
    arm: Execution,
) -> tuple[Attempt, Mapping[str, object], Execution | None]:
    """Capture the diff and check it, run the oracles, verification, then check the files left and new
    dependencies (run-fixture.sh's order): the (masked) record, the (real) CEL variables, and an
    execution that stopped verification early."""
    assert row.ab is not None
    checks = row.ab.checks
    changes: Changes = capture(workspace)
    trail.text("diff.patch", changes.diff)
    trail.text("changed-files.txt", "".join(f"{f}\n" for f in changes.files))
    findings = list(scan(changes, checks.forbidden, checks.forbidden_files))
    check_env = {**env, **checks.verify_env}
    if checks.oracles:  # before verification, which may touch files, as run-fixture.sh runs them
        oracle_values = {**values, EXPECTED_NAME: checks.documents.get("expected", "")}
        argvs = [[render(part, oracle_values) for part in oracle.argv] for oracle in checks.oracles]
        findings += run_oracles(checks.oracles, argvs, workspace.path, check_env, workspace.deadline, containment)
    started = time.monotonic()
    commands = [render(v.run, values) if v.templated else v.run for v in checks.verify]
    results, stopped = run_verify(checks.verify, commands, workspace.path, check_env, workspace.deadline, containment)
    trail.timing["verify_ms"] = ms_since(started)
    # After verification, as run-fixture.sh checks them: what is on disk and in package.json then.
    findings += [
        Finding("disqualifier", f"required file {path} is missing", path, kind="required_file", source=path)
        for path in missing_files(workspace.path, checks.required_files)
    ]
    deps = _dependencies(workspace, checks.max_deps_added, findings)
    score = verify_score(results)
    if not record.dry_run:  # no arm ran: nothing it did can disqualify it
        findings += _rule_findings(row, workspace, arm, record.arm_timed_out, results, score)
    found = replace(
        record,
        changed_files=changes.files,
        verify=results,
        verify_score=score,
        findings=tuple(findings),
        disqualified=any(f.severity == "disqualifier" for f in findings),
        deps_added=deps,
    )
    masked = replace(
        found,
        verify=tuple(replace(r, output=trail.mask.text(r.output), command=trail.mask.text(r.command)) for r in results),
        findings=tuple(replace(f, text=trail.mask.optional(f.text)) for f in findings),
    )
    trail.json("verify.json", [asdict(r) for r in masked.verify])
    return masked, cel_variables(found, changes.diff), stopped


def _dependencies(workspace: Workspace, cap: int | None, findings: list[Finding]) -> int | None:
    """New dependencies in package.json when the case caps them (a disqualifier past the cap, or when
    they cannot be counted: the cap is a hard floor, so an unreadable package.json fails closed)."""
    if cap is None:
        return None
    try:
        added = dependencies_added(workspace)
    except DependencyCountError as exc:
        findings.append(
            Finding("disqualifier", f"cannot count new dependencies: {exc}", "package.json", kind="dependencies")
        )
        return None
    if added > cap:
        rule = f"{added} new dependencies in package.json (max_deps_added: {cap})"
        findings.append(Finding("disqualifier", rule, "package.json", kind="dependencies"))
    return added


def _rule_findings(
    row: RowSpec,
    workspace: Workspace,
    arm: Execution,
    timed_out: bool,
    results: tuple[VerifyResult, ...],
    score: float | None,
) -> list[Finding]:
    """The suite's disqualifying outcomes of this attempt (``SuiteSpec.disqualify``), one finding each."""
    assert row.ab is not None
    suite, found = row.ab.suite, []
    rules = set(suite.disqualify or ())
    if "verify_failed" in rules and score is not None and score < 1:
        passed = sum(r.passed for r in results)
        found.append(_rule(f"verification failed: {passed} of {len(results)} commands passed"))
    if "timed_out" in rules and timed_out:
        found.append(_rule("the arm ran past its time limit"))
    if "arm_failed" in rules and not timed_out and arm.exit_code != 0:
        found.append(_rule(f"the arm exited with code {arm.exit_code}"))
    verdict = suite.self_verdict
    if "self_verdict" in rules and verdict is not None and row.ab.arm not in verdict.exempt:
        problem = self_verdict_problem(verdict, workspace.path)
        if problem is not None:
            found.append(_rule(f"the arm's own verdict: {problem}"))
    return found


def _rule(text: str) -> Finding:
    return Finding("disqualifier", text, kind="rule")


def _finish(
    row: RowSpec,
    index: int,
    execution: Execution,
    tmpdir: str,
    values: dict[str, object],
    record: Attempt,
    cel: Mapping[str, object],
    dry_run: bool,
    trail: _Trail,
) -> SampleResult:
    """Check the sample like any other (with the attempt's CEL variables), attach the record, write result.json."""
    if dry_run and execution.error is None and not execution.timed_out and not execution.cancelled:
        sample = dry_run_sample(row, index, DRY_RUN)
    else:
        sample = check_sample(row, index, execution, tmpdir, values, cel)
    sample = replace(sample, attempt=record)
    trail.json("timing.json", {key: round(value, 3) for key, value in trail.timing.items()})
    trail.json("result.json", {"status": sample.status, "exit_code": sample.exit_code, "error": sample.error,
                               **asdict(record)})  # fmt: skip
    return sample


def with_kept_output(attempt: Attempt, evidence_dir: Path) -> Attempt:
    """The attempt with its verification commands' whole output from its folder's ``verify.json``
    (run.json keeps none of a passing sample's output, and a re-judge must see what the judge saw)."""
    path = evidence_dir / attempt.evidence / "verify.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return attempt
    if not isinstance(kept, list) or len(kept) != len(attempt.verify):
        return attempt
    outputs = [item.get("output") if isinstance(item, dict) else None for item in kept]
    verify = tuple(
        replace(v, output=out) if isinstance(out, str) else v for v, out in zip(attempt.verify, outputs, strict=True)
    )
    return replace(attempt, verify=verify)


def cel_variables(record: Attempt, diff: str) -> Mapping[str, object]:
    """What an attempt adds to its sample's CEL context."""
    return {
        "diff": diff,
        "changed_files": list(record.changed_files),
        "verify": [_verify_value(v) for v in record.verify],
        "verify_score": record.verify_score,
        "findings": [_finding_value(f) for f in record.findings],
        "disqualified": record.disqualified,
    }


def _verify_value(result: VerifyResult) -> dict[str, object]:
    return {"command": result.command, "exit_code": result.exit_code, "passed": result.passed, "output": result.output}


def _finding_value(finding: Finding) -> dict[str, object]:
    return {k: v for k, v in asdict(finding).items() if v is not None}
