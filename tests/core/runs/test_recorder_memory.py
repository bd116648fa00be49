"""What a row keeps in memory once a sample's evidence is on disk: the form run.json keeps, so a run's
memory grows with that form and not with each sample's captured output (bench/memory.py measures it)."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures_core.execution.containment import Containment
from fixtures_core.execution.rows import RunSettings, run_row
from fixtures_core.records.shareable import EXCERPT_CHARS
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.runs.plan import plan
from fixtures_core.runs.recorder import Recorder

BYTES = 300_000  # captured whole (under the cap), far above what run.json keeps


def test_a_row_keeps_the_shareable_form_and_the_evidence_keeps_the_whole_output(
    tmp_path: Path, containment: Containment
) -> None:
    fixture = tmp_path / "f.md"
    command = f"yes x \\| head -c {BYTES}"
    fixture.write_text(
        "---\nrepeat: 3\n---\n\n| Name | Command | CEL |\n|---|---|---|\n"
        f"| pass | `{command}` | `size(stdout) == {BYTES}` |\n"
        f"| fail | `{command}; exit 3` | |\n"
    )
    options = RunOptions(paths=(str(fixture),), out=str(tmp_path / "state"), engine="local")
    recorder = Recorder(store_for(options), "r1", plan(options).matrix)
    rows = [run_row(spec, RunSettings(run_id="r1"), containment, on_sample=recorder.on_sample)
            for spec in recorder.matrix.rows]  # fmt: skip
    passing, failing = rows
    assert passing.status == "PASS" and failing.status == "FAIL"  # the checks saw the whole output
    # A passing sample keeps nothing of its output, a failing one its first EXCERPT_CHARS characters.
    assert [len(s.stdout) for s in passing.samples] == [0, 0, 0]
    assert [len(s.stdout) for s in failing.samples] == [EXCERPT_CHARS] * 3
    assert all(s.excerpted for s in passing.samples + failing.samples)
    evidence = sorted((tmp_path / "state" / "runs" / "r1" / "evidence").iterdir())
    kept = [json.loads(line)["sample"]["stdout"] for path in evidence for line in path.read_text().splitlines()]
    assert [len(text) for text in kept] == [BYTES] * 6
