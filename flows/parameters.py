"""The parameters of the ``assay-matrix`` flow: what a deployment, a schedule or the UI's custom-run form may set.

Strict on purpose: ``repeat: "2"`` is an error, not a silent conversion, and
an unknown key (``run_id``, ``engine``) is an error, not ignored. assay picks
the run id itself (a custom run can never overwrite another run's document
or write outside the state folder), and a flow run always runs on Prefect.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from fixtures_core.errors import AssayError
from fixtures_core.limits import MAX_REPEAT
from fixtures_core.runs.options import RunOptions

Text = Annotated[str, StringConstraints(min_length=1)]


class ParameterError(AssayError):
    """Flow-run parameters that do not fit ``MatrixParameters``; one line naming each bad field."""


class MatrixParameters(BaseModel):
    """The parameters of one ``assay-matrix`` flow run.

    The bounds below (``ge``, ``le``) are the UI form's: Prefect refuses a custom run against
    them before it is created. The check every run goes through is ``RunOptions.check``
    (``to_options`` then ``plan``); a test keeps the two in agreement.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, title="assay matrix")

    paths: list[Text] = Field(
        min_length=1,
        description="Fixture files or folders of them, relative to the flow run's working directory.",
    )
    out: Text = Field(".assay", description="State folder: runs, evidence and blessed baselines.")
    repeat: int | None = Field(
        None, ge=1, le=MAX_REPEAT, description="Samples per row for every row (overrides the fixtures)."
    )
    k: int | None = Field(
        None, ge=1, le=MAX_REPEAT, description="k of pass@k and pass^k (default: each row's number of samples)."
    )
    group_by: list[Text] = Field(
        default_factory=list, description="Suite pass@k figures per value of these row properties."
    )
    filter: list[Text] = Field(
        default_factory=list,
        description="Only rows whose name matches one of these globs (the baseline rows they compare with are kept).",
    )
    parallel: int | None = Field(None, ge=1, description="Rows that run at once (default: the sample slots).")
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
        description="Samples in flight across the run (default: the fixtures', else parallel, else 4; 1 with arms).",
    )
    limit: list[Text] = Field(
        default_factory=list,
        description="Caps per property value on top of the fixtures' limits: PROPERTY=CAP or PROPERTY=COUNT/UNIT.",
    )
    budget: Text | None = Field(None, description="A summed metric and its cap for the run, e.g. cost_usd <= 5.")
    label: Text | None = Field(
        None, description="A label stored with the run; also a tag and part of the flow run's name."
    )
    baseline: Text | None = Field(
        None, description="A saved run to gate against: a run file, a run id or a blessed name (e.g. shipped)."
    )
    tolerance: float = Field(
        0.0, ge=0, le=1, description="Allowed drop of suite rates, 0 to 1; a row going pass -> fail always gates."
    )
    tags: list[Text] = Field(default_factory=list, description="More Prefect tags for the flow run.")
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
        """The parameters that describe a command-line run (what the UI shows for it)."""
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


def describe_errors(exc: ValidationError) -> str:
    """``field: what is wrong (got VALUE)`` for every error, joined on one line."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "parameters"
        if error["type"] == "extra_forbidden":
            known = ", ".join(MatrixParameters.model_fields)
            parts.append(f"{where}: not a parameter of assay-matrix (known: {known})")
        elif error["type"] == "missing":
            parts.append(f"{where}: required")
        else:
            shown = repr(error["input"])
            parts.append(f"{where}: {error['msg']} (got {shown if len(shown) <= 60 else shown[:60] + '…'})")
    return "; ".join(parts)


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
