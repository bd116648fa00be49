"""Read back the raw rows a run recorded as evidence (``evidence/<row>.jsonl``).

Each file holds one line per finished sample and, once the row finished, a
``raw_row`` line: the row's verdict before finalize added metrics and
comparisons (and before any judge scored it). Re-judging and resuming start
from these. A resumed run appends to the files: a later line of a sample
replaces an earlier one, and the last ``raw_row`` line is the row's.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fixtures_core.errors import RunFileError, StateError
from fixtures_core.limits import MAX_RUN_BYTES, MAX_RUN_JSON_DEPTH, LimitExceeded, loads_json, read_regular_file
from fixtures_core.records.rundoc import decode
from fixtures_core.results import RowResult, SampleResult


def raw_rows(run_dir: Path) -> dict[str, RowResult]:
    """Row id -> the raw row with its samples, for every row that finished; a torn last line is skipped.
    Each row's ``evidence`` names the file it was read from, relative to ``run_dir``."""
    folder = run_dir / "evidence"
    if not folder.is_dir():
        raise RunFileError(str(run_dir), "no evidence folder: the run kept no evidence to re-judge")
    rows: dict[str, RowResult] = {}
    for path in sorted(folder.glob("*.jsonl")):
        samples, row = read_evidence(path)
        if row is not None:
            ordered = tuple(samples[i] for i in sorted(samples))
            rows[row.id] = replace(row, samples=ordered, evidence=path.relative_to(run_dir).as_posix())
    return rows


def read_evidence(path: Path) -> tuple[dict[int, SampleResult], RowResult | None]:
    """A row's evidence file: each sample by index (a later line wins) and the last raw row, if any.
    A line torn by a crash is skipped."""
    samples: dict[int, SampleResult] = {}
    raw: RowResult | None = None
    try:  # a regular file only: a FIFO planted in the evidence folder would hang the resume
        text = read_regular_file(path, MAX_RUN_BYTES, "evidence file").decode("utf-8")
    except (OSError, ValueError) as exc:
        raise RunFileError(str(path), f"unreadable evidence: {exc}", role=None) from None
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            entry = loads_json(line, MAX_RUN_JSON_DEPTH)
        except LimitExceeded as exc:  # no crash tears a line into this: someone wrote it
            raise StateError(f"{path}:{number}", f"evidence line refused: {exc}") from None
        except ValueError:
            continue  # a line torn by a crash
        if not isinstance(entry, dict):
            raise StateError(f"{path}:{number}", "evidence line refused: not a JSON object")
        try:
            if "sample" in entry:
                sample = decode(entry["sample"], SampleResult)
                samples[sample.index] = sample
            elif "raw_row" in entry:
                document = dict(entry["raw_row"])
                document["samples"] = []
                raw = decode(document, RowResult)
        except (TypeError, ValueError, KeyError) as exc:
            raise RunFileError(str(path), f"malformed evidence line: {exc}", role=None) from None
    return samples, raw
