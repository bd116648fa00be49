"""The state folder (``.assay`` by default): runs, evidence, latest, baselines.

.assay/runs/<run-id>/run.json               the run document (append-only)
.assay/runs/<run-id>/evidence/<row>.jsonl   a line per sample as it finishes, then the raw row
.assay/latest.json                          a hard link to the newest run document
.assay/baselines/<name>.json                runs promoted by ``assay bless``
.assay/baselines/blessed.jsonl              a line per bless: the run, when, the rubric each suite was judged
                                            with, and whether it started a new baseline (and why)

A run folder without ``run.json`` is an incomplete run (killed, or stopped
at once by a second interrupt): its evidence stays, ``history`` lists it as
incomplete. File names made from row and baseline names come from
``files.slug``: bounded, and never the same for two names.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fixtures_core.errors import RunFileError, UsageError, as_baseline
from fixtures_core.files import MAX_SLUG as MAX_SLUG  # re-exported: callers found the slug rules here
from fixtures_core.files import append_json_line, write_atomic, write_json_atomic
from fixtures_core.files import slug as slug
from fixtures_core.records.planted import check_folder, is_real_folder
from fixtures_core.records.rundoc import RunResult, encode, load_run, to_document
from fixtures_core.results import RowResult, SampleResult

SHIPPED = "shipped"  # the baseline name ``bless`` and ``run --bless`` use by default


def new_run_id(cwd: str | None = None) -> str:
    """A sortable, self-describing run id, seed 04's ``<ISO>-<sha>-<branch>``: UTC time to the
    microsecond (runs sort in the order they started, and two never share one), then the commit and
    branch of the git work tree the run started in (``nogit`` outside one)."""
    now = datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%S.%f}Z-{_revision(cwd)}"


def _revision(cwd: str | None) -> str:
    """``<short sha>-<branch>`` of the work tree at ``cwd`` (``HEAD`` when detached), or ``nogit``."""

    def ask(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None

    sha = ask("rev-parse", "--short=7", "HEAD")
    if sha is None:
        return "nogit"
    branch = ask("rev-parse", "--abbrev-ref", "HEAD") or "HEAD"
    return f"{sha}-{_PATH_UNSAFE.sub('-', branch)[:40]}"


_PATH_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")  # a branch name in a folder name: feature/x -> feature-x


@dataclass(frozen=True)
class Store:
    """Paths and writes under one state folder."""

    root: Path

    def run_dir(self, run_id: str) -> Path:
        return self.root / "runs" / run_id

    def run_file(self, run_id: str) -> Path:
        return self.run_dir(run_id) / "run.json"

    @property
    def latest(self) -> Path:
        return self.root / "latest.json"

    def baseline_file(self, name: str) -> Path:
        return self.root / "baselines" / f"{slug(name)}.json"

    def evidence_file(self, run_id: str, row_index: int, row_name: str) -> Path:
        return self.run_dir(run_id) / "evidence" / f"{row_index:04d}-{slug(row_name)}.jsonl"

    def prepare_evidence(self, run_id: str) -> None:
        """Create the evidence folder once, so each sample costs a single append."""
        for folder in (self.root / "runs", self.run_dir(run_id), self.run_dir(run_id) / "evidence"):
            check_folder(folder)  # planted links are refused, never followed
        (self.run_dir(run_id) / "evidence").mkdir(parents=True, exist_ok=True)

    def write_sample(self, run_id: str, row_index: int, row_name: str, sample: SampleResult) -> None:
        """Append one finished sample's evidence to its row's file, as soon as it exists."""
        append_json_line(self.evidence_file(run_id, row_index, row_name), {"sample": encode(sample)})

    def write_row(self, run_id: str, row_index: int, row: RowResult) -> None:
        """Close a row's evidence with its raw result: its samples' verdict before finalize
        adds metrics and comparisons (run.json has the final one). The sample lines above
        already hold the outputs, so only their count is repeated."""
        document = encode(row)
        assert isinstance(document, dict)
        document["samples"] = len(row.samples)
        append_json_line(self.evidence_file(run_id, row_index, row.name), {"raw_row": document})

    def write_run(self, run: RunResult) -> Path:
        """Write ``run.json`` and point ``latest.json`` at it; return the run file."""
        path = self.run_file(run.run_id)
        write_json_atomic(path, to_document(run), own=True)
        self._link_latest(path)
        return path

    def _link_latest(self, path: Path) -> None:
        """``latest.json`` is a hard link to the newest run file: a full run document, no second copy."""
        write_atomic(self.latest, lambda tmp: _link_or_copy(path, tmp), own=True)  # runs may close at once

    def resolve_run(self, reference: str) -> Path:
        """A run file from a path, a run's folder, a run id, a baseline name, or ``latest``."""
        given, folder = Path(reference), False
        try:
            if given.exists() and not given.is_dir():
                return given  # even a FIFO or a device: load_run says why it is no run
            folder = given.is_dir()
            if folder and os.path.lexists(given / "run.json"):
                return given / "run.json"  # a run's folder, as `assay history` and the run's report name it
        except OSError:  # a reference that is no file name (too long, ...): try the other meanings
            pass
        candidates = [self.run_file(reference), self.baseline_file(reference)]
        if reference == "latest":
            candidates.append(self.latest)
        for candidate in candidates:
            try:
                if candidate.is_file():
                    return candidate
            except OSError:
                continue
        if folder:
            raise RunFileError(reference, "a folder without run.json: not the folder of a run that finished")
        raise RunFileError(
            reference,
            f"no such run file, run folder, run id under {self.root}/runs, "
            f"or baseline name under {self.root}/baselines",
        )

    def load_baseline(self, reference: str) -> tuple[Path, RunResult]:
        """The run file ``reference`` names and its run, read as a baseline: what cannot be found or
        read is a ``BaselineError``."""
        with as_baseline():
            path = self.resolve_run(reference)
            return path, load_run(path)

    def bless(self, reference: str, name: str, force: bool = False) -> Path:
        """Promote a run to ``baselines/<name>.json``, in the current (shareable) form even when
        the run file is older; a run that is no baseline (``bless_refusal``) is refused unless ``force``."""
        run = load_run(self.resolve_run(reference))
        refusal = bless_refusal(run)
        if refusal is not None and not force:
            raise UsageError(f"not blessing run {run.run_id}: {refusal} (--force blesses it anyway)")
        target = self.baseline_file(name)
        check_folder(target.parent)  # a planted link would lead the baseline elsewhere
        write_json_atomic(target, to_document(run), own=True)
        append_json_line(target.parent / BLESSED, blessing_record(run, name))
        return target

    def runs(self) -> list[Path]:
        """Every run's ``run.json``, newest first; an incomplete run's is named but does not exist."""
        folder = self.root / "runs"
        if not is_real_folder(folder):
            return []
        return sorted((p / "run.json" for p in folder.iterdir() if is_real_folder(p)), reverse=True)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # a file system without hard links gets a copy
        shutil.copyfile(source, target)


BLESSED = "blessed.jsonl"


def new_baseline(run: RunResult) -> str | None:
    """Why blessing ``run`` starts a new baseline rather than continuing the one it replaces (its suites
    were not comparable with the saved run: another rubric, judge prompt or fixture set), or None."""
    told = [f"{suite.file}: {suite.incomparable}" for suite in run.suites if suite.incomparable is not None]
    return "; ".join(told) or None


def new_baseline_note(run: RunResult) -> str | None:
    """What ``bless`` says of a run that starts a new baseline; None for one that continues the old."""
    starts = new_baseline(run)
    if starts is None:
        return None
    return f"a new baseline: it is not comparable with the one it replaces ({starts}); later runs are compared with it"


def blessing_record(run: RunResult, name: str) -> dict[str, object]:
    """The line ``baselines/blessed.jsonl`` keeps of one bless: which rubric each suite was judged with."""
    suites = [
        {
            "file": suite.file,
            "rubric": suite.judge.rubric if suite.judge is not None else None,
            "rubric_sha256": suite.judge.rubric_sha256 if suite.judge is not None else None,
            "judge_protocol": suite.judge.protocol if suite.judge is not None else None,
            "fixtures": [case.name for case in suite.cases],
        }
        for suite in run.suites
    ]
    return {
        "name": name,
        "run_id": run.run_id,
        "blessed_at": f"{datetime.now(UTC):%Y-%m-%dT%H:%M:%SZ}",
        "new_baseline": new_baseline(run),
        "suites": suites,
    }


def bless_refusal(run: RunResult) -> str | None:
    """Why a run should not become a baseline, or None: a dry run, a run whose own verdict is not
    PASS (a failed hard ship gate makes it FAIL), or one that regressed against its baseline."""
    verdict = run.verdict
    if run.dry_run:
        return "it is a dry run (nothing was scored)"
    if run.status != "PASS":  # the run's own verdict: with a baseline a FAIL may still exit 0
        return f"its verdict is {run.status} ({verdict.why})"
    if verdict.regressed:  # a PASS that regressed exits 1: the next run would pass against it
        return f"it regressed against {verdict.baseline} (exit {verdict.exit_code})"
    return None
