"""How a run is found in Prefect: its flow-run name, its tags, and its artifact keys.

Artifact keys derive from what runs again and again: a run's label, or else
its set of fixture files, so the history of one label's (or file set's)
reports never mixes with another's.

``artifact_key`` has its own rules rather than ``fixtures_core.files.slug``:
Prefect accepts only lower-case letters, digits and dashes in an artifact
key (``slug`` keeps case, dots and underscores), and the key is what people
read and search in the UI, so it stays readable and the same from run to
run. Labels that differ only in case or punctuation (``Nightly EU / v2``,
``nightly-eu-v2``) therefore share one key; only a key cut to length
carries a digest.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from fixtures_core.runs.options import RunOptions
from fixtures_core.spec import Matrix

ASSAY_TAG = "assay"
_KEY_MAX = 60  # keeps "assay-report-<key>" readable in the UI's artifact list
_NOT_KEY = re.compile(r"[^a-z0-9]+")


def flow_run_name(run_id: str, label: str | None) -> str:
    """The flow run's name: the assay run id, and the label when there is one."""
    return f"{run_id} {label}" if label else run_id


def fixture_names(matrix: Matrix) -> list[str]:
    """The fixture files of a run as the run document names them."""
    return [f.identity or f.path for f in matrix.files]


def run_tags(options: RunOptions, matrix: Matrix, extra: Iterable[str] = ()) -> list[str]:
    """``assay``, the label, the extra (``--tag``) values and the fixture names; each once, in that order."""
    found = [ASSAY_TAG, *([options.label] if options.label else []), *extra, *fixture_names(matrix)]
    return list(dict.fromkeys(tag for tag in found if tag))


def artifact_key(options: RunOptions, matrix: Matrix) -> str:
    """What a run's artifact keys share: the label, else the fixture files (lower-case letters, digits, dashes)."""
    source = options.label or " ".join(sorted(name.removesuffix(".md") for name in fixture_names(matrix)))
    key = _NOT_KEY.sub("-", source.lower()).strip("-") or "suite"
    if len(key) > _KEY_MAX:
        digest = hashlib.sha256(source.encode()).hexdigest()[:8]
        key = key[: _KEY_MAX - 9].rstrip("-") + "-" + digest
    return key
