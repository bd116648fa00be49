"""devlyn's fixture lint (``fixtures/SCHEMA.md``, "Drift Prevention"): warnings ``assay validate`` shows.

* all six files are present (``metadata.json``, ``spec.md``, ``task.txt``,
  ``expected.json``, ``NOTES.md``, ``setup.sh``), and ``setup.sh`` is executable;
* ``metadata.json``'s ``id`` and ``spec.md``'s frontmatter ``id`` name the folder;
* spec/task drift: both prompts derive from ``metadata.json``'s ``intent``, so
  each intent item (the intent, or each item of a list) must share at least
  60% of its words with ``spec.md``'s Context section and with ``task.txt``.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from fixtures_core.spec import FixtureWarning

OVERLAP = 0.6  # SCHEMA.md: ">= 60% token overlap using simple tokenization"
_WORD = re.compile(r"[a-z0-9]+")
_CONTEXT = re.compile(r"^##\s+Context\s*$(.*?)(?=^##\s|\Z)", re.M | re.S)
_SPEC_ID = re.compile(r"^id:\s*[\"']?([^\"'\n]+?)[\"']?\s*$", re.M)
SIX_FILES = ("metadata.json", "spec.md", "task.txt", "expected.json", "NOTES.md", "setup.sh")


def lint_fixture(folder: Path) -> list[FixtureWarning]:
    """What a fixture folder breaks of devlyn's lint, one warning each (none for a folder that cannot be read:
    its rows carry that error)."""
    found = [
        _warn(folder / name, "missing (SCHEMA.md: all six files)")
        for name in SIX_FILES
        if not (folder / name).is_file()
    ]
    setup = folder / "setup.sh"
    if setup.is_file() and not os.access(setup, os.X_OK):
        found.append(_warn(setup, "is not executable (chmod +x)"))
    metadata = _json(folder / "metadata.json")
    if metadata is None:
        return found
    if metadata.get("id") != folder.name:
        found.append(
            _warn(folder / "metadata.json", f"id {metadata.get('id')!r} does not name the folder {folder.name!r}")
        )
    spec = _text(folder / "spec.md")
    spec_id = _SPEC_ID.search(spec.split("\n---", 1)[0]) if spec.startswith("---") else None
    if spec and (spec_id is None or spec_id.group(1) != folder.name):
        shown = repr(spec_id.group(1)) if spec_id else "no id"
        found.append(_warn(folder / "spec.md", f"frontmatter has {shown}, not the folder's {folder.name!r}"))
    found += _drift(folder, metadata.get("intent"), spec, _text(folder / "task.txt"))
    return found


def _drift(folder: Path, intent: object, spec: str, task: str) -> list[FixtureWarning]:
    items = intent if isinstance(intent, list) else [intent] if isinstance(intent, str) else []
    context = _CONTEXT.search(spec)
    prompts = (("spec.md", context.group(1) if context else ""), ("task.txt", task))
    found = []
    for item in (str(i) for i in items):
        for name, text in prompts:
            share = overlap(item, text)
            if share < OVERLAP:
                where = "its Context section" if name == "spec.md" else name
                found.append(
                    _warn(
                        folder / name,
                        f"spec/task drift: {where} holds {math.floor(share * 100)}% of the words of "
                        f"metadata.json's intent {_short(item)!r} (at least {OVERLAP:.0%})",
                    )
                )
    return found


def overlap(intent: str, text: str) -> float:
    """The share of the intent's distinct words that ``text`` holds (lower-cased letters and digits)."""
    words = set(_WORD.findall(intent.lower()))
    return len(words & set(_WORD.findall(text.lower()))) / len(words) if words else 1.0


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _json(path: Path) -> dict[str, object] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) else None


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _warn(path: Path, message: str) -> FixtureWarning:
    return FixtureWarning(str(path), 1, message)
