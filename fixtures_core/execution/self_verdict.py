"""An arm's verdict about its own work, read from a file it leaves in its workspace.

devlyn's harness disqualifies a pipeline arm whose ``pipeline.state.json``
does not say PASS (or PASS_WITH_ISSUES) for its final report and its verify
phase: the harness's own checks passed, but the pipeline said it did not
finish. ``SelfVerdict`` names the files, the fields and the accepted values.
"""

from __future__ import annotations

import json
from pathlib import Path

from fixtures_core.suite import SelfVerdict


def self_verdict_problem(spec: SelfVerdict, workspace: Path) -> str | None:
    """Why the arm's own verdict does not pass, or None when every field holds an accepted value."""
    path = _newest(spec, workspace)
    if path is None:
        return f"no verdict file of its own ({', '.join(spec.files)})"
    shown = path.relative_to(workspace).as_posix()
    try:
        document = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError) as exc:
        return f"its verdict file {shown} is not JSON ({exc})"
    for dotted in spec.fields:
        value = _field(document, dotted)
        if value not in spec.accepted:
            return f"its verdict file {shown} says {dotted} = {value!r} (accepted: {', '.join(spec.accepted)})"
    return None


def _newest(spec: SelfVerdict, workspace: Path) -> Path | None:
    """The first glob of ``files`` that matches a regular file; of several matches, the last in name order
    (devlyn keeps one folder per pipeline run, named by time)."""
    for pattern in spec.files:
        found = sorted(p for p in workspace.glob(pattern) if p.is_file() and not p.is_symlink())
        if found:
            return found[-1]
    return None


def _field(document: object, dotted: str) -> object:
    value = document
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value
