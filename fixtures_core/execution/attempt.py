"""One attempt of an A/B suite row: a fresh workspace, setup, the arm, its diff, verification.

Everything the attempt produced is written to its own evidence folder under
the run (``attempts/CASE/ARM/SAMPLE/``) and is visible to the row's CEL as
``diff``, ``changed_files``, ``verify``, ``verify_score``, ``findings`` and
``disqualified``. A dry run prepares the workspace, runs setup and
verification, and never starts the arm; its samples are SKIP ("dry run"),
as is every sample of a row outside an A/B suite, which runs nothing at all.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from fixtures_core.execution.checks import check_sample, unrun_sample
from fixtures_core.execution.containment import Containment
from fixtures_core.execution.sampling import Execution, execute, ms_since
from fixtures_core.execution.workspace import (
    Changes,
    Workspace,
    WorkspaceError,
    capture,
    copy_workspace,
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
from fixtures_core.suite import Attempt, Finding, VerifyResult, matches_case
from fixtures_core.text import excerpt

if TYPE_CHECKING:  # rows calls this module, so it cannot be imported here at run time
    from fixtures_core.execution.rows import RunSettings

ATTEMPTS = "attempts"
DRY_RUN = "dry run"  # why a sample of a dry run did not run


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
        return unrun_sample(row, index, "SKIP", DRY_RUN)  # nothing to prepare: no workspace, no command
    relative = attempt_folder(row, index)
    folder = Path(settings.evidence_dir or tempfile.mkdtemp(prefix="assay-evidence-")) / relative
    folder.mkdir(parents=True, exist_ok=True)
    record = Attempt(evidence=relative if settings.evidence_dir else str(folder), dry_run=settings.dry_run)
    trail = _Trail(folder, redactor(row.redaction, env))
    scratch = Path(tempfile.mkdtemp(prefix="assay-ws-", dir=settings.tmp_root))
    cel: Mapping[str, object] = cel_variables(record, "")
    try:
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
                argv, deadline=deadline, cwd=cwd, env=env, capture_limit=settings.capture_limit, containment=containment
            )
            trail.timing["arm_ms"] = ms_since(started)
        trail.text("stdout.txt", execution.stdout.decode("utf-8", "replace"))
        trail.text("stderr.txt", execution.stderr.decode("utf-8", "replace"))
        stopped = None
        if workspace is not None and not (execution.timed_out or execution.cancelled or execution.error):
            record, cel, stopped = _inspect(row, workspace, values, env, containment, record, trail)
        return _finish(row, index, stopped or execution, tmpdir, values, record, cel, settings.dry_run, trail)
    except WorkspaceError as exc:
        failed = Execution(None, b"", b"", 0.0, error=str(exc))
        sample = _finish(row, index, failed, tmpdir, values, record, cel, settings.dry_run, trail)
        return replace(sample, stopped=exc.stopped)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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
    env["ASSAY_WORKSPACE"] = str(workspace.path)
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
) -> tuple[Attempt, Mapping[str, object], Execution | None]:
    """Capture the diff, scan it, run verification: the (masked) record, the (real) CEL variables,
    and an execution that stopped verification early."""
    assert row.ab is not None
    suite, case = row.ab.suite, row.ab.case
    changes: Changes = capture(workspace)
    trail.text("diff.patch", changes.diff)
    trail.text("changed-files.txt", "".join(f"{f}\n" for f in changes.files))
    findings = scan(changes, suite.forbidden, suite.forbidden_files, case)
    specs = [spec for spec in suite.verify if matches_case(spec.rows, case)]
    started = time.monotonic()
    results, stopped = run_verify(
        specs, [render(s.run, values) for s in specs], workspace.path, env, workspace.deadline, containment
    )
    trail.timing["verify_ms"] = ms_since(started)
    found = replace(
        record,
        changed_files=changes.files,
        verify=results,
        verify_score=verify_score(results),
        findings=findings,
        disqualified=any(f.severity == "disqualifier" for f in findings),
    )
    masked = replace(
        found,
        verify=tuple(replace(r, output=trail.mask.text(r.output), command=trail.mask.text(r.command)) for r in results),
        findings=tuple(replace(f, text=trail.mask.optional(f.text)) for f in findings),
    )
    trail.json("verify.json", [asdict(r) for r in masked.verify])
    return masked, cel_variables(found, changes.diff), stopped


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
        sample = unrun_sample(row, index, "SKIP", DRY_RUN)
    else:
        sample = check_sample(row, index, execution, tmpdir, values, cel)
    sample = replace(sample, attempt=record)
    trail.json("timing.json", {key: round(value, 3) for key, value in trail.timing.items()})
    trail.json("result.json", {"status": sample.status, "exit_code": sample.exit_code, "error": sample.error,
                               **asdict(record)})  # fmt: skip
    return sample


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
