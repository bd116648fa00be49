"""The options of a run, as the command line or a deployment gives them, and what they settle
alone: a resumed run's options, the state folder, what every sample shares."""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from fixtures_core.analysis.baseline import check_tolerance
from fixtures_core.errors import StateError, UsageError
from fixtures_core.execution.rows import RunSettings
from fixtures_core.execution.sampling import DEFAULT_CAPTURE_LIMIT
from fixtures_core.limits import MAX_CAPTURE_BYTES, MAX_REPEAT, MAX_SEED, MAX_SLOTS
from fixtures_core.parsing.throughput import merge_limits, parse_budget, parse_limit
from fixtures_core.records.planted import kind
from fixtures_core.records.resume import Started, check_resumable, find_started
from fixtures_core.records.store import Store
from fixtures_core.reports.outputs import ReportFiles
from fixtures_core.spec import Budget, Limit
from fixtures_core.text import excerpt

DEFAULT_PARALLEL = 4
# The working folder a run read its fixture paths in, recorded beside its options: a relative path is
# read from there again by a re-judge or a resume given in another folder.
WORKDIR = "workdir"
# What a resumed run may change: how it runs and what it writes besides run.json, never what it runs.
EXECUTION_OPTIONS = frozenset(
    {
        "engine",
        "parallel",
        "concurrency",
        "limits",
        "dask_address",
        "row_subflows",
        "rows_as_tasks",
        "capture_limit",
        "html",
        "junit",
        "summary",
        "frame",
    }
)


@dataclass(frozen=True)
class RunOptions:
    """The options of one run, as the command line or a deployment gives them."""

    paths: tuple[str, ...]
    out: str = ".assay"
    filter: tuple[str, ...] = ()  # row-name globs: a row matching any of them runs (none: every row)
    repeat: int | None = None
    k: int | None = None
    group_by: tuple[str, ...] = ()
    parallel: int | None = None  # rows in flight (default: the sample slots)
    parallel_samples: bool = False  # the samples of a row that does not say ``serial`` may run at once
    adaptive: bool = False  # rows that do not say ``sampling`` stop once their gates are decided (``repeat`` is max)
    # Adaptive rows share a budget of samples: "fixed" (what fixed k spends) or a number; what decided rows
    # leave goes to the undecided ones, past their max (``execution.sample_budget``).
    sample_budget: str | None = None
    concurrency: int | None = (
        None  # samples in flight across the run (default: the files' own, else --parallel, else 4)
    )
    limits: tuple[str, ...] = ()  # PROPERTY=CAP or PROPERTY=COUNT/UNIT, on top of the files' limits
    budget: str | None = None  # a summed metric and its cap for the whole run: "cost_usd <= 5"
    resume: str | None = None  # the interrupted run this run continues
    dask_address: str | None = None  # run samples on this Dask scheduler ("local": a LocalCluster of processes)
    row_subflows: bool = False  # --row-subflows: asks for the default shape (each row a Prefect subflow run)
    rows_as_tasks: bool = False  # each row a Prefect task run of the matrix's flow run instead of a subflow run
    label: str | None = None
    engine: str = "prefect"
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    baseline: str | None = None
    tolerance: float = 0.0
    dry_run: bool = False  # A/B suites: prepare, set up and verify; never run an arm or the judge
    judge: str | None = None  # a judge command line replacing every suite's own
    seed: int | None = None  # the seed of the judge's blind labels (default: the suite's, else a new one)
    rejudge: str | None = None  # the run whose evidence this run re-judges
    recheck: str | None = None  # the run whose stored samples this run checks again (no sample runs)
    html: str | None = None
    junit: str | None = None
    summary: str | None = None
    frame: str | None = None

    @property
    def reports(self) -> ReportFiles:
        """The report files this run writes once it is complete."""
        return ReportFiles(html=self.html, junit=self.junit, summary=self.summary, frame=self.frame)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> RunOptions:
        """Options from JSON-like values (a deployment's parameters); lists become tuples."""
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - fields)
        if unknown:
            raise UsageError(f"unknown run option(s): {', '.join(unknown)} (known: {', '.join(sorted(fields))})")
        converted = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        for name in ("paths", "filter"):  # one path or glob as a plain string (run files before 0.2: filter)
            if isinstance(converted.get(name), str):
                converted[name] = (converted[name],)
        return cls(**converted)  # type: ignore[arg-type]

    def check(self) -> None:
        """Raise UsageError for values out of range: the one check of option values, whether they
        come from the command line, a deployment's parameters or ``deployments/nightly.py``."""
        if Path(self.out).exists() and not Path(self.out).is_dir():
            raise UsageError(f"--out {self.out} is not a folder: give the state folder (default .assay)")
        if self.repeat is not None and self.repeat < 1:
            raise UsageError(f"--repeat must be a whole number >= 1, got {self.repeat}")
        for flag, value in (("--repeat", self.repeat), ("--k", self.k)):
            if value is not None and value > MAX_REPEAT:
                raise UsageError(f"{flag} must be at most {MAX_REPEAT:,} samples, got {_number(value)}")
        for flag, value in (("--parallel", self.parallel), ("--concurrency", self.concurrency)):
            if value is not None and value < 1:
                raise UsageError(f"{flag} must be >= 1, got {_number(value)}")
            if value is not None and value > MAX_SLOTS:
                raise UsageError(f"{flag} must be at most {MAX_SLOTS:,}, got {_number(value)}")
        if not 1 <= self.capture_limit <= MAX_CAPTURE_BYTES:
            raise UsageError(
                f"the capture limit must be between 1 and {MAX_CAPTURE_BYTES:,} bytes, "
                f"got {_number(self.capture_limit)}"
            )
        self.run_limits()
        self.run_budget()
        self.run_sample_budget()
        for flag, given in (("--row-subflows", self.row_subflows), ("--rows-as-tasks", self.rows_as_tasks)):
            if given and self.engine != "prefect":
                raise UsageError(f"{flag} shapes the Prefect flow run: not with --engine local")
        if self.row_subflows and self.rows_as_tasks:
            raise UsageError(
                "--row-subflows and --rows-as-tasks ask for opposite shapes: give one (subflows are the default)"
            )
        if self.dask_address is not None and self.engine != "prefect":
            raise UsageError("--dask-address runs samples on Dask workers through Prefect: not with --engine local")
        if self.k is not None and self.k < 1:
            raise UsageError(f"--k must be >= 1, got {self.k}")
        if self.engine not in ("prefect", "local"):
            raise UsageError(f"--engine must be prefect or local, got {self.engine!r}")
        if self.dry_run and self.baseline is not None:
            raise UsageError("--dry-run scores nothing, so it cannot be compared with a --baseline")
        if self.seed is not None and not 0 <= self.seed <= MAX_SEED:
            raise UsageError(f"--seed must be between 0 and 2**63 - 1, got {_number(self.seed)}")
        check_tolerance(self.tolerance)
        self.reports.check()

    def run_limits(self) -> tuple[Limit, ...]:
        """``--limit`` values (UsageError when one does not parse)."""
        parsed = []
        for text in self.limits:
            try:
                parsed.append(parse_limit(text))
            except ValueError as exc:
                raise UsageError(f"--limit {text}: {exc}") from None
        return merge_limits(parsed)

    def run_budget(self) -> Budget | None:
        """``--budget`` (UsageError when it does not parse)."""
        if self.budget is None:
            return None
        try:
            return parse_budget(self.budget, "--budget")
        except ValueError as exc:
            raise UsageError(f"--budget: {exc}") from None

    def run_sample_budget(self) -> str | None:
        """``--sample-budget``: ``fixed`` or a whole number of samples (UsageError otherwise)."""
        given = self.sample_budget
        if given is None or given == "fixed":
            return given
        if not (given.isascii() and given.isdigit() and len(given) <= 9 and int(given) >= 1):
            raise UsageError(
                f"--sample-budget must be fixed (what fixed k spends) or a whole number of samples >= 1, got {given!r}"
            )
        return given

    def recorded(self) -> dict[str, object]:
        """The options as the run document records them, and the working folder they were given in."""
        values = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items() if v not in (None, ())}
        return {**values, WORKDIR: str(Path.cwd())}


def paths_read_from(paths: Sequence[str], workdir: object) -> tuple[str, ...]:
    """Recorded fixture paths as this folder reads them: a relative one that is not here is joined to the
    working folder the run read it in, when the run recorded one (an absolute folder) and it is not this one.
    One that is here is read here: a project copied or moved with its state folder resumes as it is now."""
    if not isinstance(workdir, str) or not os.path.isabs(workdir) or Path(workdir) == Path.cwd():
        return tuple(paths)
    return tuple(path if os.path.isabs(path) or os.path.exists(path) else os.path.join(workdir, path) for path in paths)


def _number(value: int) -> str:
    """A number for a message: in full, or in short when it would not fit a line (a forged 10**18)."""
    if abs(value) < 10**15:
        return str(value)
    return f"{value:.3g}" if abs(value) < 10**300 else f"a number of {len(str(abs(value)))} digits"


def resume_options(options: RunOptions) -> RunOptions:
    """``--resume RUN``: that run's own options, with this command's way of running it (engine,
    slots, limits, report files); anything that would change what runs is a usage error."""
    if options.resume is None:
        return options
    store = store_for(options)
    started = find_started(store, options.resume)
    check_resumable(store, started)
    defaults = RunOptions(paths=())
    changed = [f.name for f in dataclasses.fields(RunOptions) if getattr(options, f.name) != getattr(defaults, f.name)]
    conflicting = [name for name in changed if name not in EXECUTION_OPTIONS | {"resume", "out"}]
    if conflicting:
        flags = ", ".join("PATH" if n == "paths" else "--" + n.replace("_", "-") for n in conflicting)
        raise UsageError(f"--resume {started.run_id} runs that run's own fixtures and options: drop {flags}")
    mine = {name: getattr(options, name) for name in changed if name in EXECUTION_OPTIONS}
    recorded = _recorded_options(started, store, set(mine))
    given = recorded.get("paths", [])
    given = [given] if isinstance(given, str) else typing.cast(list[str], given)
    recorded["paths"] = list(paths_read_from(given, started.options.get(WORKDIR)))
    return RunOptions.from_mapping({**recorded, **mine, "out": options.out, "resume": started.run_id})


_REPORT_OPTIONS = ("html", "junit", "summary", "frame")
# Where a resumed run writes a report its start record asked for: in the run's own folder, under a fixed
# name; the record's own path is never used (a planted one could name fixture.md or latest.json).
_REDERIVED = {"html": "report.html", "junit": "junit.xml", "summary": "summary.md", "frame": "frame"}


def _recorded_options(started: Started, store: Store, given: set[str]) -> dict[str, object]:
    """A start record's options, checked as untrusted input: each of the right type and in range (one
    UsageError naming the record and the field otherwise), report files (unless given again) re-derived."""
    hints = typing.get_type_hints(RunOptions)
    recorded: dict[str, object] = {}
    for name, value in started.options.items():
        if name not in hints or name in ("out", "resume"):
            continue
        if not _conforms(value, hints[name]):
            raise UsageError(
                f"{started.path}: options.{name}: {excerpt(repr(value), 60)} is not a valid value "
                f"(was it edited?); start a new run instead of --resume {started.run_id}"
            )
        if isinstance(value, int | float) and not isinstance(value, bool):
            _check_recorded_number(started, name, value)
        recorded[name] = value
    for name in _REPORT_OPTIONS:
        target = recorded.get(name)
        if name not in given and isinstance(target, str):
            recorded[name] = str(_rederived(store.run_dir(started.run_id), name, target))
    return recorded


def _check_recorded_number(started: Started, name: str, value: int | float) -> None:
    """A number in a start record is held to the bounds the command line has (a forged 10**18 included)."""
    try:
        RunOptions.from_mapping({"paths": (), name: value}).check()
    except UsageError as exc:
        raise UsageError(f"{started.path}: options.{name}: {exc}; start a new run") from None


def _rederived(run_folder: Path, name: str, recorded: str) -> Path:
    """The run folder's own file for a recorded report (a frame keeps the format it asked for)."""
    suffix = ".parquet" if name == "frame" and Path(recorded).suffix.lower() == ".parquet" else ".csv"
    target = run_folder / (_REDERIVED[name] + suffix if name == "frame" else _REDERIVED[name])
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise StateError(str(target), f"{kind(target.lstat().st_mode)} where a resumed run writes its {name} report")
    return target


def _conforms(value: object, hint: object) -> bool:
    """Whether a JSON value fits a RunOptions field's type (``int | None``, ``tuple[str, ...]``, ...)."""
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    arguments = typing.get_args(hint)
    if typing.get_origin(hint) is tuple:
        return isinstance(value, list | tuple) and all(_conforms(item, arguments[0]) for item in value)
    if arguments:  # a union
        return any(_conforms(value, argument) for argument in arguments)
    return False


def settings_for(options: RunOptions, run_id: str) -> RunSettings:
    """What every sample of a run shares (A/B attempts keep their evidence in the run's folder)."""
    return RunSettings(
        run_id=run_id,
        capture_limit=options.capture_limit,
        evidence_dir=str(store_for(options).run_dir(run_id)),
        dry_run=options.dry_run,
    )


def store_for(options: RunOptions) -> Store:
    """The state folder of a run."""
    return Store(Path(options.out))
