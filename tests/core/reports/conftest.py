"""Runs for the report tests, made by the real pipeline (parse, run, finalize) once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures_core.records.rundoc import RunResult
from tests.suites import EXAMPLE_SUITE, run_fixture

REPO = Path(__file__).resolve().parents[3]

# Every status a row can end in, an arm property, a metric with thresholds, control characters in output.
MIXED = """---
repeat: 3
metrics:
  - name: size
    extract: json.size
    unit: bytes
    direction: lower
    threshold: {max: 100}
---

| Name | Command | arm | CEL Validation | Skip |
|---|---|---|---|---|
| small | `echo '{"size": 10}'` | A | `json.size < 50` | |
| small b | `echo '{"size": 12}'` | B | `json.size < 50` | |
| big | `echo '{"size": 500}'` | A | `true` | |
| broken | `printf 'not json\\001'` | | `json.size > 0` | |
| later | `true` | | | true |
"""


@pytest.fixture(scope="session")
def matrix_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The example matrix: 4 rows x 5 samples, 3 metrics, 3 FAIL rows (one flaky)."""
    state = tmp_path_factory.mktemp("matrix") / "state"
    return run_fixture(REPO / "examples" / "matrix.md", state, group_by=("selector",))


@pytest.fixture(scope="session")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """PASS, FAIL (metric threshold), ERR (CEL on non-JSON), SKIP rows, two arms of one row."""
    folder = tmp_path_factory.mktemp("mixed")
    (folder / "mixed.md").write_text(MIXED)
    return run_fixture(folder / "mixed.md", folder / "state")


@pytest.fixture(scope="session")
def ab_run(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    """The example A/B suite with one hard gate made to fail (careful must win by 50 points)."""
    import shutil

    folder = tmp_path_factory.mktemp("ab") / "ab"
    shutil.copytree(EXAMPLE_SUITE.parent, folder)
    suite = folder / "suite.md"
    text = suite.read_text(encoding="utf-8")
    assert "r.margin >= 5.0" in text
    suite.write_text(text.replace("r.margin >= 5.0", "r.margin >= 50.0"), encoding="utf-8")
    return run_fixture(suite, folder / "state")
