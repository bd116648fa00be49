"""The run document, schema ``assay.run/v1``: one self-describing JSON file per run.

The same file is the baseline format, so ``load_run(write(run))`` must give
back an equal ``RunResult``; a round-trip test pins it. Keys are snake_case
and optional parts are omitted when empty.
"""

from __future__ import annotations

import dataclasses
import json
import math
import platform
import re
import subprocess
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from fixtures_core.analysis.baseline import Comparison
from fixtures_core.analysis.finalize import Summary
from fixtures_core.analysis.shipgate import SuiteOutcome, disqualified_first_arms
from fixtures_core.errors import RunFileError

# The atomic writers live in ``fixtures_core.files``; re-exported where callers used to find them.
from fixtures_core.files import write_atomic as write_atomic
from fixtures_core.files import write_json_atomic as write_json_atomic
from fixtures_core.files import write_text_atomic as write_text_atomic
from fixtures_core.limits import MAX_RUN_BYTES, MAX_RUN_JSON_DEPTH, LimitExceeded, loads_json, read_regular_file
from fixtures_core.records.shareable import shareable_row, shareable_suite
from fixtures_core.results import RowResult, Status, Stop
from fixtures_core.text import excerpt
from fixtures_core.verdicts.answer import Verdict, verdict_of

SCHEMA = "assay.run/v1"
T = TypeVar("T")
# Field names that differ in JSON (Python keywords or clearer names).
_JSON_NAMES = {"row_class": "class", "before": "from", "after": "to"}
_PY_NAMES = {v: k for k, v in _JSON_NAMES.items()}


@dataclass(frozen=True)
class FixtureResult:
    """One fixture file's rows, with the digest of the file that ran."""

    file: str
    sha256: str
    rows: tuple[RowResult, ...]


@dataclass(frozen=True)
class DaskCluster:
    """The Dask cluster a run's samples ran on (``--dask-address``): its address (``local``: a LocalCluster
    of the run), its workers when the run began, and how long the run waited for it before any row started
    (a LocalCluster's start, connecting, every worker importing what a sample needs)."""

    address: str
    workers: int
    waited_s: float


@dataclass(frozen=True)
class RunResult:
    """Everything one run found; what ``run.json`` holds. ``stopped``: why the run stopped before
    every row finished on its own (``cancelled``: interrupted; ``budget``: a cost budget), else None."""

    run_id: str
    started_at: str
    finished_at: str
    status: Status
    fixtures: tuple[FixtureResult, ...]
    summary: Summary
    label: str | None = None
    error: str | None = None
    stopped: Stop | None = None
    environment: Mapping[str, object] = field(default_factory=dict)
    options: Mapping[str, object] = field(default_factory=dict)
    comparison: Comparison | None = None
    suites: tuple[SuiteOutcome, ...] = ()
    dask: DaskCluster | None = None
    rechecked: str | None = None  # the run whose stored samples this run judged again (``assay recheck``)
    schema: str = SCHEMA

    @property
    def rows(self) -> tuple[RowResult, ...]:
        return tuple(row for f in self.fixtures for row in f.rows)

    @property
    def dry_run(self) -> bool:
        """A dry run: nothing in it was scored (its verdict says only whether its wiring held)."""
        return bool(self.options.get("dry_run")) or any(suite.dry_run for suite in self.suites)

    @property
    def verdict(self) -> Verdict:
        """The run's two answers (its own verdict; with a baseline, the gate's) and its exit code."""
        return verdict_of(self)


def utc_now() -> str:
    """An ISO 8601 UTC timestamp with seconds precision."""
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def environment() -> dict[str, object]:
    """Where a run happened: assay and Python versions, platform, git state."""
    try:
        version = metadata.version("assay")
    except metadata.PackageNotFoundError:
        version = "unknown"
    found: dict[str, object] = {
        "assay_version": version,
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
    }
    git = _git_state()
    if git:
        found["git"] = git
    return found


def _git_state() -> dict[str, object]:
    def ask(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = ask("rev-parse", "HEAD")
    if commit is None:
        return {}
    status = ask("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "branch": ask("rev-parse", "--abbrev-ref", "HEAD"), "dirty": bool(status)}


# --- encoding -------------------------------------------------------------------


# The order DESIGN lists the run document's keys in; readers see them so.
_RUN_KEYS = (
    "schema", "run_id", "label", "rechecked", "started_at", "finished_at", "status", "error", "stopped",
    "environment", "options", "dask", "fixtures", "summary", "suites", "comparison",
)  # fmt: skip


def to_document(run: RunResult) -> dict[str, Any]:
    """The JSON-ready document of a run, keys in schema order."""
    encoded = encode(run)
    assert isinstance(encoded, dict)
    return {key: encoded[key] for key in _RUN_KEYS if key in encoded}


def encode(value: object) -> object:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, object] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if _omitted(item, f):
                continue
            out[_JSON_NAMES.get(f.name, f.name)] = encode(item)
        if isinstance(value, Summary):
            _nest_groups(out)
        return out
    if isinstance(value, Mapping):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def _omitted(item: object, f: dataclasses.Field[Any]) -> bool:
    if item is None:
        return True
    if item is False and f.default is False:
        return True
    if isinstance(item, (tuple, list, dict)) and not item and f.default is not dataclasses.MISSING:
        return True
    if isinstance(item, Mapping) and not item and f.default_factory is not dataclasses.MISSING:
        return True
    return dataclasses.is_dataclass(item) and hasattr(item, "is_empty") and item.is_empty()


def _nest_groups(summary: dict[str, object]) -> None:
    """The document keeps per-group figures under ``summary.stochastic.groups``."""
    groups = summary.pop("groups", None)
    if groups is not None and isinstance(summary.get("stochastic"), dict):
        summary["stochastic"]["groups"] = groups  # type: ignore[index]


# --- decoding -------------------------------------------------------------------


def from_document(document: Mapping[str, Any], path: str = "<run>") -> RunResult:
    """Rebuild a RunResult; raise RunFileError when the document is not a v1 run."""
    if not isinstance(document, Mapping) or document.get("schema") != SCHEMA:
        found = document.get("schema") if isinstance(document, Mapping) else type(document).__name__
        raise RunFileError(path, f"not an {SCHEMA} run document (schema: {_short(found)})")
    try:
        data = dict(document)
        summary = data.get("summary") or {}
        if not isinstance(summary, Mapping):
            raise _Malformed("summary", f"expected an object, got {_type(summary)}")
        summary = dict(summary)
        stochastic = summary.get("stochastic")
        if isinstance(stochastic, dict) and "groups" in stochastic:
            stochastic = dict(stochastic)
            summary["groups"] = stochastic.pop("groups")
            summary["stochastic"] = stochastic
        data["summary"] = summary
        data["suites"] = [_renamed_counts(suite) for suite in data.get("suites") or []]
        decoded = _decode(data, RunResult)
    except (TypeError, ValueError, KeyError, AttributeError) as exc:  # any shape other than the schema's
        raise RunFileError(path, f"malformed run document: {excerpt(str(exc), 160)}") from None
    assert isinstance(decoded, RunResult)
    return upgrade(decoded)


def _renamed_counts(suite: object) -> object:
    """A suite of a document written before devlyn's figures took devlyn's names: its
    ``hard_floor_violations`` counted the failed hard gates (now ``failed_hard_gates``; devlyn's figure
    of that name is counted again by ``upgrade``)."""
    if not isinstance(suite, Mapping) or "failed_hard_gates" in suite or "hard_floor_violations" not in suite:
        return suite
    renamed = dict(suite)
    renamed["failed_hard_gates"] = renamed.pop("hard_floor_violations")
    return renamed


def upgrade(run: RunResult) -> RunResult:
    """The one place that brings a run read from an older document to the current form.

    Documents written before raw output was kept apart embed every sample's
    output (and judges' whole rationales); they load as a run written now
    would be (``records.shareable``). A suite's ``hard_floor_violations`` is
    devlyn's figure, counted from its cases whatever the document says. A
    current document loads unchanged.
    """
    fixtures = tuple(replace(f, rows=tuple(map(shareable_row, f.rows))) for f in run.fixtures)
    suites = tuple(replace(s, hard_floor_violations=disqualified_first_arms(s)) for s in run.suites)
    return replace(run, fixtures=fixtures, suites=tuple(map(shareable_suite, suites)))


def decode(value: object, hint: type[T]) -> T:
    """Rebuild a dataclass of the run document (a sample, a row) from its JSON form."""
    decoded = _decode(value, hint)
    assert isinstance(decoded, hint)
    return decoded


def _short(value: object, limit: int = 160) -> str:
    """A value for a one-line message: its repr, cut."""
    return excerpt(repr(value), limit)


_PLAIN_KEY = re.compile(r"[A-Za-z0-9_@.-]+")


class _Malformed(ValueError):
    """A value of the wrong shape, and where it is (``fixtures[0].rows[2].status``)."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where or 'the document'}: {problem}")


def _decode(value: object, hint: Any, where: str = "") -> object:
    origin = get_origin(hint)
    if hint is Any or hint is object:
        return value
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        return None if value is None else _decode(value, options[0], where)
    if origin is Literal:
        if not isinstance(value, (str, int)) or value not in get_args(hint):
            raise _Malformed(where, f"{_short(value)} is not one of {', '.join(map(str, get_args(hint)))}")
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise _Malformed(where, f"expected an object, got {_type(value)}")
        hints = _hints(hint)
        kwargs = {}
        for key, item in value.items():
            name = _PY_NAMES.get(key, key)
            if name in hints:
                kwargs[name] = _decode(item, hints[name], f"{where}.{key}".lstrip("."))
        for f in dataclasses.fields(hint):
            if f.name not in kwargs and _is_optional(hints[f.name]):
                kwargs[f.name] = None  # omitted because empty
        missing = [f.name for f in dataclasses.fields(hint) if f.name not in kwargs and _required(f)]
        if missing:
            raise _Malformed(where, f"missing {', '.join(_JSON_NAMES.get(m, m) for m in missing)}")
        return hint(**kwargs)
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, list):
            raise _Malformed(where, f"expected a list, got {_type(value)}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
        if len(value) != len(args):
            raise _Malformed(where, f"expected {len(args)} items, got {len(value)}")
        return tuple(_decode(v, a, f"{where}[{i}]") for i, (v, a) in enumerate(zip(value, args, strict=True)))
    if origin in (Mapping, dict, typing.Mapping):
        if not isinstance(value, Mapping):
            raise _Malformed(where, f"expected an object, got {_type(value)}")
        _key, item_hint = get_args(hint) or (str, Any)
        return {k: _decode(v, item_hint, _member(where, k)) for k, v in value.items()}
    if hint in (int, float, str, bool):
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise _Malformed(where, "a number beyond the range of a double") from None
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise _Malformed(where, f"expected {hint.__name__}, got {_type(value)} {_short(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            why = "is not a finite number (assay writes none: was the file edited?)"
            raise _Malformed(where, f"{_json_constant(value)} {why}")
    return value


def _json_constant(value: object) -> str:
    """A non-finite number as the document spells it (``NaN``, ``Infinity``, ``-Infinity``)."""
    return json.dumps(value)


def _member(where: str, key: object) -> str:
    """``where.key``, or ``where["a key"]`` (JSON-escaped) for a key that is not a plain name: an error
    message stays one line whatever the document's keys hold."""
    text = str(key)
    return f"{where}.{text}" if _PLAIN_KEY.fullmatch(text) else f"{where}[{json.dumps(text)}]"


def _type(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _required(f: dataclasses.Field[Any]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def _is_optional(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType) and type(None) in get_args(hint)


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def load_run(path: str | Path) -> RunResult:
    """Read a run document from disk; every failure is a RunFileError (a baseline's fails closed).

    The file must be a regular file within ``MAX_RUN_BYTES`` and its JSON
    within ``MAX_RUN_JSON_DEPTH`` levels (``limits``): a FIFO, a device or a
    bomb is refused before it can hang or exhaust memory.
    """
    shown = str(path)
    try:
        data = read_regular_file(Path(path), MAX_RUN_BYTES, "run document")
    except FileNotFoundError:
        raise RunFileError(shown, "file not found") from None
    except LimitExceeded as exc:
        raise RunFileError(shown, str(exc)) from None
    except OSError as exc:
        raise RunFileError(shown, f"cannot read: {exc.strerror or exc}") from None
    try:
        document = loads_json(data.decode("utf-8"), MAX_RUN_JSON_DEPTH)
    except LimitExceeded as exc:
        raise RunFileError(shown, str(exc)) from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise RunFileError(shown, f"not JSON ({excerpt(str(exc), 160)})") from None
    return from_document(document, shown)  # type: ignore[arg-type]
