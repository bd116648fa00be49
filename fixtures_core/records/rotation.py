"""Retiring a fixture of a devlyn benchmark, and the rotation record seed 04 keeps of it.

Seed 04's rotation policy: a saturated fixture is replaced by a harder one,
the swap recorded in ``history/runs/<ts>-fixture-rotation.json`` beside the
benchmark's ``fixtures/`` (``retired``, ``retired_reason``, ``replacement``,
``replacement_rationale``; assay adds ``retired_at``), and the retired fixture
stays in ``fixtures/retired/`` for replay (``assay run FOLDER ID`` runs it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fixtures_core.errors import UsageError
from fixtures_core.files import write_json_atomic
from fixtures_core.parsing.devlyn import RETIRED, Bench
from fixtures_core.parsing.matrix import names_fixture

HISTORY = Path("history") / "runs"
RECORD_SUFFIX = "-fixture-rotation.json"


@dataclass(frozen=True)
class Rotation:
    """One retired fixture: where it went, and the record written of it."""

    retired: str
    moved_to: Path
    record: Path


def retire(
    bench: Bench, fixture: str, reason: str, replacement: str | None = None, rationale: str | None = None
) -> Rotation:
    """Move the fixture ``fixture`` names to ``fixtures/retired/`` and write its rotation record; a
    UsageError when it names no fixture (or a replacement that is not one), or its retired place is taken."""
    folder = _named(bench, fixture, "retire")
    if not reason.strip():
        raise UsageError("--reason: say why the fixture is retired (seed 04: retired_reason)")
    replaced_by = _named(bench, replacement, "--replacement").name if replacement is not None else None
    if replaced_by == folder.name:
        raise UsageError(f"--replacement {replacement}: that is the fixture being retired")
    target = bench.fixtures / RETIRED / folder.name
    if os.path.lexists(target):
        raise UsageError(f"{target} exists: a fixture of that name was retired before")
    now = datetime.now(UTC)
    record = bench.root / HISTORY / f"{now:%Y%m%dT%H%M%SZ}{RECORD_SUFFIX}"
    document = {
        "retired": folder.name,
        "retired_reason": reason,
        "replacement": replaced_by,
        "replacement_rationale": rationale,
        "retired_at": f"{now:%Y-%m-%dT%H:%M:%SZ}",
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    record.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(record, document)  # the record first: a fixture never leaves without one
    folder.rename(target)
    return Rotation(folder.name, target, record)


def _named(bench: Bench, name: str, what: str) -> Path:
    found = [folder for folder in bench.fixture_folders() if names_fixture(folder.name, name)]
    if len(found) != 1:
        known = ", ".join(folder.name for folder in bench.fixture_folders()) or "none"
        why = "names no fixture" if not found else "names more than one fixture"
        raise UsageError(f"{what} {name}: {why} of {bench.root} (its fixtures: {known})")
    return found[0]
