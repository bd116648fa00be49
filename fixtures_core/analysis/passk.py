"""Repeat statistics: pass@k, pass^k, the Wilson interval, row classes and suite figures.

For a row with n evaluated samples of which c passed (DESIGN.md, "Stochastic
outcomes"; seed 02):

    pass@k = 1 - C(n-c, k) / C(n, k)    chance that at least one of k samples passes
    pass^k = C(c, k) / C(n, k)          chance that all k samples pass

Both are the unbiased estimators of Chen et al. 2021 ("Evaluating Large
Language Models Trained on Code", eq. 1), computed over k samples drawn
without replacement from the n that ran; with k == n they reduce to "at least
one passed" and "all passed". They are kept as exact ``Fraction`` values until
they are stored in a ``Stochastic`` (as floats) for the report.

A row whose samples cannot all be judged (an ERR sample, a sample that needs
human judgment) withholds its estimates, and a suite headline that would
include such a row is withheld too, with the reason naming the rows. Undefined
inputs (k < 1, k > n, c outside 0..n) raise ``ValueError`` naming both numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from fixtures_core.results import RowClass, RowResult, SampleResult, Stochastic
from fixtures_core.text import listed

# z for a two-sided 95% interval: the 0.975 quantile of the standard normal.
Z_95 = 1.959963984540054

NO_PROPERTY = "(none)"


def _check_counts(n: int, c: int, k: int | None = None) -> None:
    """Raise ``ValueError`` naming both numbers unless 0 <= c <= n and 1 <= k <= n (without k: 1 <= n)."""
    if k is not None and k < 1:
        raise ValueError(f"k={k} < 1")
    if k is None and n < 1:
        raise ValueError(f"n={n} < 1")
    if c < 0:
        raise ValueError(f"c={c} < 0")
    if c > n:
        raise ValueError(f"c={c} > n={n}")
    if k is not None and k > n:
        raise ValueError(f"k={k} > n={n}")


def pass_at_k(n: int, c: int, k: int) -> Fraction:
    """Unbiased estimate of the chance that at least one of k samples passes.

    ``1 - C(n-c, k) / C(n, k)``; ``C(n-c, k)`` is 0 when fewer than k samples
    failed, so the estimate is exactly 1 then.
    """
    _check_counts(n, c, k)
    # Exact integers and a Fraction are the numerically stable form: no float
    # cancellation in "1 - tiny" and no overflow of large binomials, so the
    # product rewrite that float implementations need (Chen et al. 2021) is
    # unnecessary here.
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def pass_hat_k(n: int, c: int, k: int) -> Fraction:
    """Unbiased estimate of the chance that all of k samples pass: ``C(c, k) / C(n, k)``."""
    _check_counts(n, c, k)
    # Exact, as in pass_at_k: C(c, k) is 0 when fewer than k samples passed.
    return Fraction(math.comb(c, k), math.comb(n, k))


def wilson_interval(c: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a pass rate of c passes out of n (95% by default).

    Wilson (1927); unlike the normal approximation it stays inside [0, 1] and
    is sensible for c == 0 or c == n. Bounds are clamped to [0, 1] against
    rounding.
    """
    _check_counts(n, c)
    if not (z > 0 and math.isfinite(z)):
        raise ValueError(f"z={z} is not a positive finite number")
    p = c / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half_width = (z / denominator) * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n))
    return max(0.0, centre - half_width), min(1.0, centre + half_width)


def classify(n: int, c: int) -> RowClass:
    """``stable-pass`` when all n samples passed, ``stable-fail`` when none did, else ``flaky``."""
    _check_counts(n, c)
    if c == n:
        return "stable-pass"
    if c == 0:
        return "stable-fail"
    return "flaky"


def _samples_phrase(indices: Sequence[int]) -> str:
    """``sample 2`` or ``samples 1, 3``."""
    if len(indices) == 1:
        return f"sample {indices[0]}"
    return "samples " + ", ".join(str(i) for i in indices)


def withheld_reason(samples: Sequence[SampleResult], k: int, row_name: str) -> str | None:
    """Why a row's estimates cannot be given, or None when they can.

    In order: no samples ran; a sample errored; a sample needs human judgment
    (indeterminate); k exceeds the number of samples.
    """
    n = len(samples)
    if n == 0:
        return "no samples ran"
    errored = [s.index for s in samples if s.status == "ERR"]
    if errored:
        return f"{_samples_phrase(errored)} errored"
    undecided = [s.index for s in samples if s.indeterminate]
    if undecided:
        verb = "needs" if len(undecided) == 1 else "need"
        return f"{_samples_phrase(undecided)} {verb} human judgment (indeterminate)"
    if k > n:
        return f"k={k} > n={n}"
    return None


def row_stochastic(samples: Sequence[SampleResult], k: int | None, row_name: str) -> Stochastic:
    """A row's repeat statistics; k defaults to the row's n (None means "each row's n").

    n, passed, k, pass rate and its Wilson interval are filled whenever there
    are samples, and the class too unless a sample errored (an error is not
    an outcome, so "flaky" would mislead); pass@k and pass^k are left None, with
    ``withheld`` giving the reason, when ``withheld_reason`` finds one. A k
    below 1 is a caller error and raises ``ValueError``.
    """
    n = len(samples)
    c = sum(1 for s in samples if s.passed)
    chosen_k = n if k is None else k
    if k is not None and k < 1:
        raise ValueError(f"k={k} < 1 for row {row_name!r}")
    reason = withheld_reason(samples, chosen_k, row_name)
    at_k = None if reason else float(pass_at_k(n, c, chosen_k))
    hat_k = None if reason else float(pass_hat_k(n, c, chosen_k))
    return Stochastic(
        n=n,
        passed=c,
        k=chosen_k,
        pass_rate=c / n if n else None,
        row_class=classify(n, c) if n and not any(s.status == "ERR" for s in samples) else None,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        pass_rate_interval=wilson_interval(c, n) if n else None,
        withheld=reason,
    )


@dataclass(frozen=True)
class SuiteFigures:
    """pass@k and pass^k over a set of rows (the whole suite, or one group of it).

    A row *meets pass@k* when its pass@k estimate is 1: every k of its n
    samples include a pass (n - c < k). It *meets pass^k* when its pass^k
    estimate is 1: every sample passed (c == n). With k == n these are the
    seed's "at least one of k passes" and "all k pass". The headline figures
    are None whenever ``withheld`` is set.

    Fields:
        k: the ``--k`` value; None means each row used its own n.
        rows: rows counted (every row except SKIP rows and rows with a configuration error).
        pass_at_k: mean of the counted rows' pass@k estimates.
        pass_hat_k: mean of the counted rows' pass^k estimates.
        rows_pass_at_k: counted rows meeting pass@k (n - c < k).
        rows_pass_hat_k: counted rows meeting pass^k (c == n).
        withheld: why the headline figures are not given, naming the rows.
        skipped: names of SKIP rows, listed and never counted.
        withheld_rows: names of counted rows that withheld their estimates.
        left_out: names of rows with a configuration error (they ran nothing: no outcome to count), listed
            and never counted; they withhold nothing (the run's verdict is ERR for them).
    """

    k: int | None
    rows: int
    pass_at_k: float | None
    pass_hat_k: float | None
    rows_pass_at_k: int | None
    rows_pass_hat_k: int | None
    withheld: str | None
    skipped: tuple[str, ...] = ()
    withheld_rows: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()


def _row_figures(row: RowResult, k: int | None) -> Stochastic:
    """The row's stochastic figures, checked to be present and computed with the suite's k."""
    stochastic = row.stochastic
    if stochastic is None:
        raise ValueError(f"row {row.name!r} has no stochastic figures; fill them with row_stochastic first")
    if k is not None and stochastic.k != k:
        raise ValueError(f"row {row.name!r} was computed with k={stochastic.k}, the suite asks for k={k}")
    return stochastic


def _withheld_text(reasons: Sequence[tuple[str, str]]) -> str:
    """One line naming the withholding rows (at most five per reason) under each reason."""
    if len(reasons) == 1:
        name, reason = reasons[0]
        return f"row {name!r} ({reason})"
    by_reason: dict[str, list[str]] = {}
    for name, reason in reasons:
        by_reason.setdefault(reason, []).append(name)
    parts = [f"{reason}: {listed([repr(name) for name in names])}" for reason, names in by_reason.items()]
    return f"{len(reasons)} rows ({'; '.join(parts)})"


def suite_figures(rows: Sequence[RowResult], k: int | None) -> SuiteFigures:
    """Headline pass@k and pass^k over rows that already carry ``.stochastic``.

    SKIP rows are listed in ``skipped`` and rows with a configuration error in ``left_out``; neither is
    counted. If any counted row withheld its estimate, or no row was counted, the headline figures are
    None and ``withheld`` says why. Means are taken over exact fractions.
    """
    skipped = tuple(row.name for row in rows if row.status == "SKIP")
    left_out = tuple(row.name for row in rows if row.stopped == "configuration")
    counted = [row for row in rows if row.status != "SKIP" and row.stopped != "configuration"]
    figures = [_row_figures(row, k) for row in counted]
    withholding = [(row.name, st.withheld) for row, st in zip(counted, figures, strict=True) if st.withheld]
    if not counted or withholding:
        return SuiteFigures(
            k=k,
            rows=len(counted),
            pass_at_k=None,
            pass_hat_k=None,
            rows_pass_at_k=None,
            rows_pass_hat_k=None,
            withheld=_withheld_text(withholding) if withholding else "no rows ran",
            skipped=skipped,
            withheld_rows=tuple(name for name, _ in withholding),
            left_out=left_out,
        )
    count = len(figures)
    at_k = sum((pass_at_k(st.n, st.passed, st.k) for st in figures), Fraction(0)) / count
    hat_k = sum((pass_hat_k(st.n, st.passed, st.k) for st in figures), Fraction(0)) / count
    return SuiteFigures(
        k=k,
        rows=count,
        pass_at_k=float(at_k),
        pass_hat_k=float(hat_k),
        rows_pass_at_k=sum(1 for st in figures if st.n - st.passed < st.k),
        rows_pass_hat_k=sum(1 for st in figures if st.passed == st.n),
        withheld=None,
        skipped=skipped,
        left_out=left_out,
    )


def group_key(row: RowResult, property_name: str) -> str:
    """The row's group under ``--group-by``: ``str`` of the property, ``(none)`` when absent; for two or
    more properties named together (``provider,model``, a pivot), their values joined with `` / ``."""
    if "," in property_name and property_name not in row.properties:
        return " / ".join(group_key(row, name.strip()) for name in property_name.split(","))
    if property_name not in row.properties:
        return NO_PROPERTY
    return str(row.properties[property_name])


def group_figures(rows: Sequence[RowResult], k: int | None, property_name: str) -> dict[str, SuiteFigures]:
    """Suite figures per value of a row property, keyed by that value (sorted)."""
    groups: dict[str, list[RowResult]] = {}
    for row in rows:
        groups.setdefault(group_key(row, property_name), []).append(row)
    return {key: suite_figures(groups[key], k) for key in sorted(groups)}
