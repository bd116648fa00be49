"""Reading how many samples a row takes and how many must pass: ``sampling`` (fixed or adaptive,
``sequential`` decides when an adaptive row stops) and ``pass_rate``."""

from __future__ import annotations

from dataclasses import replace

from fixtures_core.parsing.config import Where, read_repeat
from fixtures_core.spec import RowSpec, Sampling

SAMPLING_KEYS = ("mode", "min", "max", "confidence", "margin", "budget", "max_extra")
DEFAULT_ADAPTIVE_MAX = 20


def read_sampling(value: object, where: Where, field: str = "sampling") -> Sampling:
    """``sampling: adaptive`` or ``fixed``, or ``{mode: adaptive, min: 3, max: 20, confidence: 0.95, margin: 0.1,
    budget: fixed, max_extra: 40}``."""
    if isinstance(value, str) and value.strip().lower() in ("adaptive", "fixed"):
        return Sampling(adaptive=value.strip().lower() == "adaptive")
    if not isinstance(value, dict):
        raise where.error(field, f"must be adaptive, fixed, or a map of {', '.join(SAMPLING_KEYS)}, got {value!r}")
    unknown = sorted(str(k) for k in value if k not in SAMPLING_KEYS)
    if unknown:
        raise where.error(f"{field}.{unknown[0]}", f"unknown key (known: {', '.join(SAMPLING_KEYS)})")
    mode = value.get("mode", "adaptive")
    if mode not in ("adaptive", "fixed"):
        raise where.error(f"{field}.mode", f"must be adaptive or fixed, got {mode!r}")
    least = read_repeat(value["min"], where, f"{field}.min") if "min" in value else Sampling.min
    most = read_repeat(value["max"], where, f"{field}.max") if "max" in value else None
    if most is not None and most < least:
        raise where.error(f"{field}.max", f"max {most} is below min {least}")
    confidence = _fraction(value.get("confidence", Sampling.confidence), where, f"{field}.confidence", 0.5, 1.0)
    margin = _fraction(value.get("margin", Sampling.margin), where, f"{field}.margin", 0.0, 0.5)
    budget = _budget(value["budget"], where, f"{field}.budget") if "budget" in value else False
    extra = _extra(value["max_extra"], where, f"{field}.max_extra") if "max_extra" in value else None
    return Sampling(mode == "adaptive", least, most, confidence, margin, budget, extra)


def _budget(value: object, where: Where, field: str) -> bool:
    """``budget: fixed``: the row shares a run budget of what fixed k would spend (``--sample-budget N``
    gives a number for the whole run)."""
    if isinstance(value, str) and value.strip().lower() == "fixed":
        return True
    raise where.error(
        field, f"must be fixed (spend at most what fixed k would; a number is --sample-budget N), got {value!r}"
    )


def _extra(value: object, where: Where, field: str) -> int:
    """How many samples past its max a budgeted row may take: a whole number, 0 or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(field, f"must be a whole number >= 0 (samples past max), got {value!r}")
    return read_repeat(value, where, field) if value else 0


def read_pass_rate(value: object, where: Where, field: str = "pass_rate") -> float:
    """The share of samples that must pass: a number in (0, 1], or a percentage (``80%``)."""
    number = value
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise where.error(
                field, f"must be a share of samples in (0, 1] such as 0.8 or 80%, got {value!r}"
            ) from None
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number <= 1:
        raise where.error(field, f"must be a share of samples in (0, 1] such as 0.8 or 80%, got {value!r}")
    return float(number)


def _fraction(value: object, where: Where, field: str, low: float, high: float) -> float:
    """A number strictly between ``low`` and ``high``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value < high:
        raise where.error(field, f"must be a number between {low:g} and {high:g} (exclusive), got {value!r}")
    return float(value)


def with_sampling(row: RowSpec) -> RowSpec:
    """An adaptive row's ``repeat`` is its ``max`` (the row's own repeat when max is not said, 20 when
    that is 1); its ``min`` at most that."""
    sampling = row.sampling
    if sampling is None or not sampling.adaptive:
        return row
    most = sampling.max or (row.repeat if row.repeat > 1 else DEFAULT_ADAPTIVE_MAX)
    return replace(row, repeat=most, sampling=replace(sampling, max=most, min=min(sampling.min, most)))
