"""What produced a row's samples, as digests a later run can compare: ``assay recheck`` judges a
stored row again only when none of them changed (its samples would be another command's output).

Each part is digested on its own so that a changed row can say which part changed. A run records
them in its start record (``started.json``); the digests hold no text of the fixture (an env value
may be a secret).
"""

from __future__ import annotations

import hashlib
import json

from fixtures_core.spec import RowSpec

# The parts, in the order a message names them.
PARTS = ("command", "template values", "env", "working folder")


def produced_by(row: RowSpec) -> dict[str, str]:
    """Part -> sha256 of what it was for ``row`` (``PARTS``)."""
    parts: dict[str, object] = {
        "command": list(row.argv),
        "template values": {str(k): v for k, v in row.properties.items()},
        "env": dict(row.env),
        "working folder": row.cwd,
    }
    return {name: _digest(value) for name, value in parts.items()}


def changed_parts(recorded: dict[str, str], now: dict[str, str]) -> list[str]:
    """The parts whose digest differs (a part the record lacks counts as changed)."""
    return [name for name in PARTS if recorded.get(name) != now.get(name)]


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()
