"""Reading the throughput settings of a fixture file: ``concurrency``, ``limits``, ``budget``, ``serial``.

The same text forms are accepted on the command line (``--limit provider=2``,
``--budget "cost_usd <= 5"``): ``parse_limit`` and ``parse_budget`` raise
ValueError with the reason, which each caller turns into its own error.
"""

from __future__ import annotations

import math
import re

from fixtures_core.parsing.config import Where
from fixtures_core.spec import Budget, Limit, Rate

_UNITS = {
    "s": 1.0, "sec": 1.0, "second": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0,
    "h": 3600.0, "hour": 3600.0,
}  # fmt: skip
_RATE = re.compile(r"\s*([0-9]+)\s*/\s*([A-Za-z]+)\s*")
_BUDGET = re.compile(r"\s*(?P<metric>.+?)\s*(?P<op><=|<)\s*(?P<cap>[-+0-9.eE]+)\s*")
_BUDGET_FORM = "a summed metric and a cap, as in 'cost_usd <= 5'"
_LIMIT_FORM = "a cap of samples in flight (2), a rate (10/minute), or {concurrency: 2, rate: 10/minute}"


def read_serial(value: object, where: Where, field: str = "serial") -> bool:
    """``serial: false`` lets a row's samples run at once; ``true`` (the default) keeps them in order.
    A table cell may say true/false/yes/no."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise where.error(field, f"must be true or false, got {value!r}")


def read_concurrency(value: object, where: Where, field: str = "concurrency") -> int:
    """Samples in flight at once: a whole number >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise where.error(field, f"must be a whole number >= 1, got {value!r}")
    return value


def read_limits(value: object, where: Where, field: str = "limits") -> tuple[Limit, ...]:
    """``limits:``, a map of property -> cap per value (``provider: 2``, ``provider: 10/minute``)."""
    if not isinstance(value, dict) or not value:
        raise where.error(field, f"must be a map of property: limit ({_LIMIT_FORM}), got {value!r}")
    limits = []
    for key, item in value.items():
        try:
            limits.append(_limit(str(key), item))
        except ValueError as exc:
            raise where.error(f"{field}.{key}", str(exc)) from None
    return tuple(limits)


def _limit(prop: str, item: object) -> Limit:
    if isinstance(item, bool):
        raise ValueError(f"must be {_LIMIT_FORM}, got {item!r}")
    if isinstance(item, int):
        return Limit(prop, concurrency=_cap(item))
    if isinstance(item, str):
        if item.strip().isdigit():
            return Limit(prop, concurrency=_cap(int(item)))
        return Limit(prop, rate=parse_rate(item))
    if isinstance(item, dict) and item and set(map(str, item)) <= {"concurrency", "rate"}:
        concurrency = item.get("concurrency")
        rate = item.get("rate")
        if concurrency is not None and (isinstance(concurrency, bool) or not isinstance(concurrency, int)):
            raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency!r}")
        return Limit(
            prop,
            concurrency=_cap(concurrency) if concurrency is not None else None,
            rate=parse_rate(str(rate)) if rate is not None else None,
        )
    raise ValueError(f"must be {_LIMIT_FORM}, got {item!r}")


def _cap(number: int) -> int:
    if number < 1:
        raise ValueError(f"a cap must be >= 1, got {number}")
    return number


def parse_rate(text: str) -> Rate:
    """``10/minute`` (also ``/second``, ``/hour``, ``/s``, ``/min``, ``/h``)."""
    found = _RATE.fullmatch(text)
    if found is None or found.group(2).lower() not in _UNITS:
        raise ValueError(f"a rate is COUNT/UNIT with UNIT second, minute or hour (10/minute), got {text!r}")
    count = int(found.group(1))
    if count < 1:
        raise ValueError(f"a rate needs a count >= 1, got {text!r}")
    return Rate(count, _UNITS[found.group(2).lower()])


def parse_limit(text: str) -> Limit:
    """``--limit PROPERTY=CAP`` or ``--limit PROPERTY=COUNT/UNIT``."""
    prop, equals, value = text.partition("=")
    if not equals or not prop.strip() or not value.strip():
        raise ValueError(f"give PROPERTY=CAP or PROPERTY=COUNT/UNIT (provider=2, provider=10/minute), got {text!r}")
    return _limit(prop.strip(), value.strip())


def merge_limits(limits: list[Limit]) -> tuple[Limit, ...]:
    """One limit per property: a later entry's cap or rate replaces an earlier one's."""
    merged: dict[str, Limit] = {}
    for limit in limits:
        before = merged.get(limit.property, Limit(limit.property))
        merged[limit.property] = Limit(
            limit.property,
            concurrency=limit.concurrency if limit.concurrency is not None else before.concurrency,
            rate=limit.rate if limit.rate is not None else before.rate,
        )
    return tuple(merged.values())


def parse_budget(text: str, where: str) -> Budget:
    """``cost_usd <= 5``: the metric summed over the samples, and the cap at which no new sample starts."""
    found = _BUDGET.fullmatch(text)
    if found is None:
        raise ValueError(f"must be {_BUDGET_FORM}, got {text!r}")
    try:
        cap = float(found.group("cap"))
    except ValueError:
        raise ValueError(f"must be {_BUDGET_FORM}, got {text!r}") from None
    if not math.isfinite(cap) or cap <= 0:
        raise ValueError(f"the cap must be a finite number > 0, got {found.group('cap')}")
    return Budget(found.group("metric"), cap, where)


def read_budget(value: object, where: Where, field: str = "budget") -> Budget:
    """``budget: cost_usd <= 5`` in the frontmatter."""
    if not isinstance(value, str):
        raise where.error(field, f"must be {_BUDGET_FORM}, got {value!r}")
    try:
        return parse_budget(value, f"{where.path}:{where.line}")
    except ValueError as exc:
        raise where.error(field, str(exc)) from None
