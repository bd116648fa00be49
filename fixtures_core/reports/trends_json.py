"""``assay trends --json FILE``: what the trends page shows, as one JSON document (``assay.trends/v1``).

The same figures as the page and the terminal (``analysis.trends``): the
runs (oldest first, numbered from 1 as the page numbers them), the newest
run's verdict, and per row its status in each run, its flip since the
previous run, its last change in the window, its age when it fails now, its
flaky runs and each metric's values and step; then the cost per metric over
the window and the notes on runs that could not be read. Run numbers
(``run``) count from 1, the oldest run shown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fixtures_core.analysis.trends import Age, Cost, MetricTrend, RowTrend, RunPoint, Trends
from fixtures_core.changes import Changes
from fixtures_core.records.history import History
from fixtures_core.reports.trends import age_text

SCHEMA = "assay.trends/v1"

Json = Mapping[str, object]


def trends_document(history: History, trends: Trends) -> dict[str, object]:
    """The whole document (module docstring)."""
    runs = trends.runs
    numbers = {point.run_id: index for index, point in enumerate(runs, 1)}
    latest = runs[-1] if runs else None
    return {
        "schema": SCHEMA,
        "suite": history.suite.shown,
        "complete": history.complete,
        "newest": None
        if latest is None
        else {
            "run_id": latest.run_id,
            "verdict": latest.verdict,
            "rows": sum(row.latest is not None for row in trends.rows),
            "failing": len(trends.failing),
        },
        "runs": [_run(point, index) for index, point in enumerate(runs, 1)],
        "rows": [_row(row, numbers) for row in trends.rows],
        "cost": [_cost(cost) for cost in trends.total_cost()],
        "changes": None if trends.changes is None else _changes(trends.changes),
        "notes": list(history.notes),
    }


def _changes(changes: Changes) -> Json:
    return {
        "before": changes.before,
        "after": changes.after,
        "total": changes.total,
        "commits": [{"sha": commit.sha, "subject": commit.subject} for commit in changes.commits],
        "link": changes.link,
    }


def _run(point: RunPoint, number: int) -> Json:
    return {
        "run": number,
        "run_id": point.run_id,
        "label": point.label,
        "started_at": point.started_at,
        "commit": point.commit,
        "verdict": point.verdict,
        "cost": [_cost(cost) for cost in point.costs],
    }


def _cost(cost: Cost) -> Json:
    return {"metric": cost.metric, "unit": cost.unit, "total": cost.total, "samples": cost.samples}


def _row(row: RowTrend, numbers: Mapping[str, int]) -> Json:
    change = row.change
    return {
        "file": row.file,
        "name": row.name,
        "statuses": list(row.statuses),
        "latest": row.latest,
        "flip": None if row.flip is None else {"before": row.flip[0], "after": row.flip[1]},
        "flips": row.flips,
        "change": None if change is None else {"run": change.index + 1, "before": change.before, "after": change.after},
        "age": None if row.age is None else _age(row.age, numbers),
        "flaky": list(row.flaky),
        "flaky_runs": row.flaky_runs,
        "ran": row.ran,
        "metrics": [_metric(metric) for metric in row.metrics],
    }


def _age(age: Age, numbers: Mapping[str, int]) -> Json:
    return {
        "text": age_text(age),
        "new": age.new,
        "runs": age.runs,
        "at_least": age.at_least,
        "since": {
            "run": numbers.get(age.since.run_id),
            "run_id": age.since.run_id,
            "started_at": age.since.started_at,
            "commit": age.since.commit,
        },
    }


def _metric(metric: MetricTrend) -> Json:
    step = metric.step
    return {
        "name": metric.name,
        "unit": metric.unit,
        "direction": metric.direction,
        "values": [value if value is not None and math.isfinite(value) else None for value in metric.values],
        "step": None
        if step is None
        else {
            "run": step.index + 1,
            "before": step.before,
            "after": step.after,
            "change": step.change,
            "noise": step.noise,
            "worse": metric.worse,
        },
    }
