"""The parameters of the ``assay-matrix`` flow: what a deployment, a schedule or the UI's custom-run form may set.

Strict on purpose: ``repeat: "2"`` is an error, not a silent conversion, and
an unknown key (``run_id``, ``engine``) is an error, not ignored. assay picks
the run id itself (a custom run can never overwrite another run's document
or write outside the state folder), and a flow run always runs on Prefect.
"""

from __future__ import annotations

import inspect
import unicodedata
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from fixtures_core.errors import AssayError
from fixtures_core.limits import MAX_REPEAT, MAX_SLOTS
from fixtures_core.runs.options import RunOptions
from fixtures_core.text import excerpt

QUOTED_CHARS = 80  # of a value a refusal quotes: a 300 KB tag is named, never echoed
MAX_NAME_CHARS = 200  # a label, tag, glob, property name, limit or budget
MAX_PATH_CHARS = 4096  # Linux's PATH_MAX
MAX_PART_BYTES = 255  # one component of a path (the file system's NAME_MAX)
MAX_ITEMS = 100  # entries of a list parameter
# What a name or path may not hold, so that it reads as one line of what it says in a run name, a tag,
# a log line or a terminal: a control character (C0, DEL, C1: a NUL, a newline, U+0085, the CSI U+009B),
# a line or paragraph separator, or an invisible format character (bidi overrides and isolates, marks,
# zero-width characters, ...). The schema's pattern lists the Basic Multilingual Plane's, as escapes
# every engine reading it understands (the server's Python re, pydantic's Rust regex, the UI's
# JavaScript); ``_shown_as_is`` refuses every one the Unicode database knows, the planes above too.
_REFUSED_RANGES = (
    (0x0000, 0x001F), (0x007F, 0x009F), (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x2028, 0x202E),
    (0x2060, 0x2064), (0x2066, 0x206F), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB),
)  # fmt: skip
_REFUSED = {  # by Unicode category: what each is called in a refusal
    "Cc": "a control character",
    "Zl": "a line or paragraph separator",
    "Zp": "a line or paragraph separator",
    "Cf": "an invisible format character",
}
_REFUSED_CLASS = "".join(f"\\u{low:04x}" + (f"-\\u{high:04x}" if high > low else "") for low, high in _REFUSED_RANGES)
_ONE_VISIBLE_LINE = f"^[^{_REFUSED_CLASS}]*$"


def _not_shown(char: str) -> bool:
    """Whether a name or path may not hold ``char``: its Unicode category is one of ``_REFUSED``'s."""
    return unicodedata.category(char) in _REFUSED


def _shown_as_is(value: str) -> str:
    """``value`` when it holds no control, separator or invisible format character (the pattern's
    check, extended to every plane: the tag characters U+E0000-E007F are invisible too)."""
    found = next((char for char in value if _not_shown(char)), None)
    if found is not None:
        raise ValueError(_refused_char(found))
    return value


def _refused_char(char: str) -> str:
    """Why ``char`` is refused, naming it by code point (never the character itself: it would act)."""
    name = unicodedata.name(char, "")
    return f"{_REFUSED[unicodedata.category(char)]} (U+{ord(char):04X}{' ' + name if name else ''}) is not allowed here"


def _path_parts(value: str) -> str:
    """A path whose every component fits a file name (longer ones fail deep in the OS, as ENAMETOOLONG)."""
    for part in value.split("/"):
        if len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES:
            raise ValueError(f"a path component is longer than {MAX_PART_BYTES} bytes (a file name's limit)")
    return value


Text = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_NAME_CHARS, pattern=_ONE_VISIBLE_LINE),
    AfterValidator(_shown_as_is),
]
PathText = Annotated[
    str,
    StringConstraints(min_length=1, max_length=MAX_PATH_CHARS, pattern=_ONE_VISIBLE_LINE),
    AfterValidator(_shown_as_is),
    AfterValidator(_path_parts),
]


class ParameterError(AssayError):
    """Flow-run parameters that do not fit ``MatrixParameters``; one line naming each bad field."""


class MatrixParameters(BaseModel):
    """The parameters of one ``assay-matrix`` flow run.

    The bounds below (``ge``, ``le``) are the UI form's: Prefect refuses a custom run against
    them before it is created. The check every run goes through is ``RunOptions.check``
    (``to_options`` then ``plan``); a test keeps the two in agreement.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="assay matrix")

    paths: list[PathText] = Field(
        min_length=1,
        max_length=MAX_ITEMS,
        description="Fixture files or folders of them, relative to the flow run's working directory.",
    )
    out: PathText = Field(".assay", description="State folder: runs, evidence and blessed baselines.")
    repeat: int | None = Field(
        None, ge=1, le=MAX_REPEAT, description="Samples per row for every row (overrides the fixtures)."
    )
    k: int | None = Field(
        None, ge=1, le=MAX_REPEAT, description="k of pass@k and pass^k (default: each row's number of samples)."
    )
    group_by: list[Text] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Suite pass@k figures per value of these row properties.",
    )
    filter: list[Text] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Only rows whose name matches one of these globs (the baseline rows they compare with are kept).",
    )
    parallel: int | None = Field(
        None, ge=1, le=MAX_SLOTS, description="Rows that run at once (default: the sample slots)."
    )
    parallel_samples: bool = Field(
        False, description="Let the samples of a row that does not say serial run at once (default: in order)."
    )
    adaptive: bool = Field(
        False,
        description="Rows that do not say sampling stop sampling once more samples could not change their verdict "
        "(repeat is the maximum).",
    )
    sample_budget: Text | None = Field(
        None,
        description="Adaptive rows share a budget of samples: fixed (what fixed k spends) or a number; what "
        "decided rows leave goes to the undecided ones, past their max.",
    )
    concurrency: int | None = Field(
        None,
        ge=1,
        le=MAX_SLOTS,
        description="Samples in flight across the run (default: the fixtures', else parallel, else 4; 1 with arms).",
    )
    limit: list[Text] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Caps per property value on top of the fixtures' limits: PROPERTY=CAP or PROPERTY=COUNT/UNIT.",
    )
    budget: Text | None = Field(None, description="A summed metric and its cap for the run, e.g. cost_usd <= 5.")
    label: Text | None = Field(
        None, description="A label stored with the run; also a tag and part of the flow run's name."
    )
    baseline: PathText | None = Field(
        None, description="A saved run to gate against: a run file, a run id or a blessed name (e.g. shipped)."
    )
    tolerance: float = Field(
        0.0, ge=0, le=1, description="Allowed drop of suite rates, 0 to 1; a row going pass -> fail always gates."
    )
    tags: list[Text] = Field(
        default_factory=list, max_length=MAX_ITEMS, description="More Prefect tags for the flow run."
    )
    rows_as_tasks: bool = Field(
        False,
        description="Each row a task run of this flow run instead of a subflow run holding its sample tasks "
        "(the default).",
    )
    row_subflows: bool = Field(
        False, description="No effect: rows are subflow runs unless rows_as_tasks (kept for older deployments)."
    )

    @field_validator("filter", mode="before")
    @classmethod
    def _one_glob(cls, value: object) -> object:
        """One glob as a plain string, as deployments written before ``filter`` was a list give it."""
        return [value] if isinstance(value, str) else value

    @classmethod
    def parse(cls, value: MatrixParameters | Mapping[str, Any]) -> MatrixParameters:
        """Validate a deployment's JSON parameters; ParameterError names every bad field on one line."""
        if isinstance(value, MatrixParameters):
            return value
        try:
            return cls.model_validate(dict(value))
        except ValidationError as exc:
            raise ParameterError(f"invalid flow parameters: {describe_errors(exc)}") from None

    @classmethod
    def from_options(cls, options: RunOptions, tags: tuple[str, ...] = ()) -> MatrixParameters:
        """The parameters that describe a command-line run (what the UI shows for it); ParameterError
        names the option of every value a flow run could not take (a control character in ``--label``)."""
        try:
            return cls._of_options(options, tags)
        except ValidationError as exc:
            raise ParameterError(f"invalid options for a Prefect run: {describe_errors(exc, _RUN_OPTIONS)}") from None

    @classmethod
    def _of_options(cls, options: RunOptions, tags: tuple[str, ...]) -> MatrixParameters:
        return cls(
            paths=list(options.paths), out=options.out, repeat=options.repeat, k=options.k,
            group_by=list(options.group_by), filter=list(options.filter), parallel=options.parallel,
            parallel_samples=options.parallel_samples, adaptive=options.adaptive, label=options.label,
            baseline=options.baseline, tolerance=options.tolerance, tags=list(tags), concurrency=options.concurrency,
            limit=list(options.limits), budget=options.budget, rows_as_tasks=options.rows_as_tasks,
            row_subflows=options.row_subflows, sample_budget=options.sample_budget,
        )  # fmt: skip

    def to_options(self) -> RunOptions:
        """The run options of a flow run (always the Prefect engine)."""
        return RunOptions(
            paths=tuple(self.paths), out=self.out, filter=tuple(self.filter), repeat=self.repeat, k=self.k,
            parallel_samples=self.parallel_samples, adaptive=self.adaptive,
            group_by=tuple(self.group_by), parallel=self.parallel, label=self.label, engine="prefect",
            baseline=self.baseline, tolerance=self.tolerance, concurrency=self.concurrency, limits=tuple(self.limit),
            budget=self.budget, rows_as_tasks=self.rows_as_tasks, sample_budget=self.sample_budget,
        )  # fmt: skip


# The ``assay run`` option that sets each field a command-line run could get wrong.
_RUN_OPTIONS = {
    "paths": "PATH", "out": "--out", "label": "--label", "tags": "--tag", "filter": "--filter",
    "group_by": "--group-by", "limit": "--limit", "budget": "--budget", "baseline": "--baseline",
    "sample_budget": "--sample-budget",
}  # fmt: skip


def describe_errors(exc: ValidationError, names: Mapping[str, str] | None = None) -> str:
    """``field: what is wrong (got VALUE)`` for every error, joined on one line; ``names`` gives a
    field the name its user knows it by (``--label``)."""
    parts = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        if names and loc and loc[0] in names:  # an option names itself: its value is quoted, not its index
            loc = [names[loc[0]]]
        where = _named(".".join(loc)) or "parameters"
        if error["type"] == "extra_forbidden":
            known = ", ".join(MatrixParameters.model_fields)
            parts.append(f"{where}: not a parameter of assay-matrix (known: {known})")
        elif error["type"] == "missing":
            parts.append(f"{where}: required")
        else:
            parts.append(f"{where}: {_message(error)} (got {quoted(error['input'])})")
    return "; ".join(parts)


def _named(where: str) -> str:
    """A field's name as a refusal may print it: a key a custom run made up (``run_id``) is quoted, cut and
    escaped like a value when it is long or holds a character that would act instead of show."""
    if len(where) > QUOTED_CHARS or any(_not_shown(char) for char in where):
        return quoted(where)
    return where


def _message(error: Mapping[str, Any]) -> str:
    """Pydantic's message, without the pattern it quotes (a regex tells nobody what to change)."""
    if error["type"] == "string_pattern_mismatch":
        found = next((char for char in str(error["input"]) if _not_shown(char)), None)
        return _refused_char(found) if found is not None else "a control or invisible character is not allowed here"
    return str(error["msg"]).removeprefix("Value error, ")


def quoted(value: object) -> str:
    """``repr(value)`` cut to ``QUOTED_CHARS`` characters: what a refusal may echo of a value it was given."""
    return excerpt(repr(value), QUOTED_CHARS - 1)  # and the "…" that marks the cut


def bounded(message: str, parameters: Mapping[str, Any]) -> str:
    """``message`` with every long parameter value it quotes (as given, or as ``repr``) cut to ``QUOTED_CHARS``:
    a refusal names the value, it never echoes a 300 KB tag."""
    values = [v for value in parameters.values() for v in (value if isinstance(value, list) else [value])]
    for value in sorted((v for v in values if isinstance(v, str)), key=len, reverse=True):
        for form in (repr(value)[1:-1], value):
            if len(form) > QUOTED_CHARS and form in message:
                message = message.replace(form, excerpt(form, QUOTED_CHARS - 1))
    return excerpt(message.replace("\n", " "), 2000)


_KEYWORD = inspect.Parameter.KEYWORD_ONLY


def flow_signature() -> inspect.Signature:
    """The flow's parameters, flat: one keyword per field, typed and bounded as the field (Prefect builds
    the custom-run form and the deployment's schema from it), so an override names only what it changes."""
    parameters = []
    for name, field in MatrixParameters.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        annotation = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)
        )
    return inspect.Signature(parameters)


def flow_args_doc() -> str:
    """The ``Args:`` section of the flow's docstring: Prefect's form shows each line under its field."""
    lines = [f"        {name}: {field.description}" for name, field in MatrixParameters.model_fields.items()]
    return "\n    Args:\n" + "\n".join(lines) + "\n"
