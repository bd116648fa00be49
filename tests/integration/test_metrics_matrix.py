"""Issue 3 acceptance through the command line: metrics, baseline rows, metric errors.

Every test writes its own fixture under ``tmp_path`` and runs
``python -m flows.run FIXTURE --engine local --out tmp_path`` as a user would.
The fake agent is deterministic (seeded by selector, prompt and
``ASSAY_SAMPLE``); its ``cli`` runtime is 1.4x slower than ``api`` with +-5 %
noise, so the median duration regresses by 27-47 %: always above 25, always
below 60.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import REPO, run_local

FAKE_AGENT = REPO / "examples" / "fake_agent.py"

AGENT_MATRIX = """\
---
exec: python3
args: ["FAKE_AGENT", observe, "What is 2 + 2?", --runtime, "{{ .selector }}"]
repeat: 3
metrics:
  - name: duration_ms
    extract: json.metrics.durationMs.value
    unit: ms
    aggregate: median
    direction: lower
    baseline: API high
    threshold:
      regressionPercent: ALLOWED
  - name: cost_usd
    extract: json.metrics.costUsd.value
    unit: usd
    gate: false
    threshold: {max: 0.0001}
---

# API against CLI runtime

| Name     | selector   | CEL Validation                        |
|----------|------------|---------------------------------------|
| API high | api:m:high | `json.execution.state == "completed"` |
| CLI high | cli:m:high | `json.execution.state == "completed"` |
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def line_of(text: str, needle: str) -> int:
    """1-based line number of the first line of ``text`` containing ``needle``."""
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def rows_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for fixture in document["fixtures"] for row in fixture["rows"]}


def keys_anywhere(value: object) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys_anywhere(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys_anywhere(item)


def agent_matrix(tmp_path: Path, allowed: int) -> Path:
    text = AGENT_MATRIX.replace("FAKE_AGENT", str(FAKE_AGENT)).replace("ALLOWED", str(allowed))
    return write(tmp_path, "agents.md", text)


def sample_values(row: dict[str, Any], metric: str) -> list[float]:
    return [sample["metrics"][metric]["value"] for sample in row["samples"]]


def test_the_regressed_row_and_only_it_fails(tmp_path: Path) -> None:
    done, document = run_local(agent_matrix(tmp_path, 25), tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    rows = rows_of(document)
    assert {name: row["status"] for name, row in rows.items()} == {"API high": "PASS", "CLI high": "FAIL"}
    assert document["status"] == "FAIL"

    api, cli = rows["API high"], rows["CLI high"]
    # The aggregate is the median of the three extracted sample values, computed here independently.
    api_median = statistics.median(sample_values(api, "duration_ms"))
    cli_median = statistics.median(sample_values(cli, "duration_ms"))
    assert api["metrics"]["duration_ms"]["value"] == pytest.approx(api_median)
    assert cli["metrics"]["duration_ms"]["value"] == pytest.approx(cli_median)
    expected_percent = (cli_median - api_median) / abs(api_median) * 100  # lower is better
    comparison = cli["metrics"]["duration_ms"]["comparison"]
    assert comparison["baseline"] == "API high"
    assert comparison["baseline_value"] == pytest.approx(api_median)
    assert comparison["regression_percent"] == pytest.approx(expected_percent)
    assert comparison["regression_percent"] > 25
    assert comparison["status"] == "fail"
    assert cli["metrics"]["duration_ms"]["status"] == "fail"
    # The baseline row names itself through the inherited frontmatter: no comparison, no error.
    assert "comparison" not in api["metrics"]["duration_ms"]
    assert api["metrics"]["duration_ms"]["status"] == "pass"

    # The CEL passed on every sample; only the metric failed the row, and both are reported apart.
    assert cli["outcomes"] == {"command": "pass", "assertions": "pass", "metrics": "fail"}
    assert api["outcomes"] == {"command": "pass", "assertions": "pass", "metrics": "pass"}
    assert [s["status"] for s in cli["samples"]] == ["PASS"] * 3

    # cost_usd is far above its max on both rows, but gate: false never fails a row.
    for row in (api, cli):
        cost = row["metrics"]["cost_usd"]
        assert cost["gate"] is False and cost["unit"] == "usd"
        assert cost["value"] > 0.0001
    assert "cost_usd" not in (cli.get("error") or "")

    # Terminal: the aggregate with its unit, the baseline value and the signed percent.
    line = next(line for line in done.stdout.splitlines() if "CLI high" in line and "duration_ms" in line)
    assert f"{cli_median:g} ms" in line
    assert f"{api_median:g} (API high)" in line
    assert f"{expected_percent:+.1f}%" in line and f"{expected_percent:+.1f}%".startswith("+")
    assert "exceeds the allowed 25%" in done.stdout
    assert "FAIL" in done.stdout.strip().splitlines()[-1]


def test_a_regression_within_the_allowed_percent_passes(tmp_path: Path) -> None:
    done, document = run_local(agent_matrix(tmp_path, 60), tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = rows_of(document)
    assert {name: row["status"] for name, row in rows.items()} == {"API high": "PASS", "CLI high": "PASS"}
    comparison = rows["CLI high"]["metrics"]["duration_ms"]["comparison"]
    assert 25 < comparison["regression_percent"] < 60
    assert comparison["status"] == "pass"
    assert rows["CLI high"]["outcomes"]["metrics"] == "pass"


def test_a_fixture_without_metrics_has_no_new_fields(tmp_path: Path) -> None:
    fixture = write(
        tmp_path,
        "plain.md",
        """\
| Name | Command | CEL |
|---|---|---|
| echo json | `echo '{"ok": true}'` | `json.ok` |
| plain | `echo hello` | |

### command: block

```bash
echo done
```

- contains: done
""",
    )
    done, document = run_local(fixture, tmp_path, "--repeat", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = rows_of(document)
    assert set(rows) == {"echo json", "plain", "block"}
    for row in rows.values():
        assert row["status"] == "PASS"
        assert len(row["samples"]) == 2
        assert "outcomes" in row and "metrics" not in row["outcomes"]
        assert "metrics" not in row
        for sample in row["samples"]:
            assert "metrics" not in sample
    assert "comparison" not in set(keys_anywhere(document))
    assert not any(line.strip() == "metrics" for line in done.stdout.splitlines())  # no metrics table


@pytest.mark.parametrize("key", ["metrics", "measurements"])
def test_a_missing_baseline_row_is_a_configuration_error(tmp_path: Path, key: str) -> None:
    marker = tmp_path / "ran.txt"
    text = f"""\
---
{key}:
  - name: duration_ms
    extract: json.d
    unit: ms
    direction: lower
    baseline: API nope
    threshold: {{regressionPercent: 25}}
---

| Name | Command |
|---|---|
| API high | `touch {marker}; echo '{{"d": 1}}'` |
"""
    fixture = write(tmp_path, "missing.md", text)
    done, _ = run_local(fixture, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    line = line_of(text, "- name: duration_ms")
    # an error of the file's frontmatter: every row of the file is ERR with it (the other files would run)
    assert f"{fixture}:{line}:" in done.stdout
    assert "baseline row 'API nope' not found" in done.stdout
    assert "ERR API high" in done.stdout
    assert not marker.exists(), "a row of a broken file runs nothing"


@pytest.mark.parametrize("key", ["metrics", "measurements"])
def test_a_unit_mismatch_with_the_baseline_row_is_that_rows_configuration_error(tmp_path: Path, key: str) -> None:
    text = f"""\
---
metrics:
  - name: d
    extract: json.d
    unit: ms
    direction: lower
    baseline: base
    threshold: {{regressionPercent: 25}}
---

### command: base

```bash
echo '{{"d": 10}}'
```

### command: other

```yaml
{key}:
  - name: d
    extract: json.d
    unit: s
    direction: lower
    baseline: base
    threshold: {{regressionPercent: 25}}
```

```bash
echo '{{"d": 11}}'
```
"""
    fixture = write(tmp_path, "units.md", text)
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    base, other = document["fixtures"][0]["rows"]
    assert (base["status"], other["status"], other["stopped"]) == ("PASS", "ERR", "configuration")
    line = _block_metric_line(text)
    assert other["error"].startswith(f"{fixture}:{line}:")
    assert "unit 's'" in other["error"] and "'ms'" in other["error"] and "'base'" in other["error"]


def _block_metric_line(text: str) -> int:
    """The line of the block's own metric item (the second ``- name: d``)."""
    lines = [number for number, line in enumerate(text.splitlines(), 1) if "- name: d" in line]
    assert len(lines) == 2
    return lines[1]


def test_a_zero_baseline_value_is_an_error(tmp_path: Path) -> None:
    # The alias `measurements:` drives a row-to-row comparison like `metrics:`.
    fixture = write(
        tmp_path,
        "zero.md",
        """\
---
measurements:
  - name: d
    extract: json.d
    unit: ms
    direction: lower
    baseline: base
    threshold: {regressionPercent: 25}
---

| Name | Command |
|---|---|
| base | `echo '{"d": 0}'` |
| other | `echo '{"d": 5}'` |
""",
    )
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    rows = rows_of(document)
    assert rows["base"]["status"] == "PASS"
    assert rows["other"]["status"] == "ERR"
    assert rows["other"]["outcomes"]["metrics"] == "error"
    comparison = rows["other"]["metrics"]["d"]["comparison"]
    assert comparison["status"] == "error"
    assert comparison["baseline_value"] == 0
    assert "regression_percent" not in comparison
    assert "baseline value is 0" in comparison["error"]
    assert "baseline value is 0" in done.stdout
    assert "ERR" in done.stdout.strip().splitlines()[-1]


def test_a_metric_that_extracts_a_string_names_metric_sample_and_value(tmp_path: Path) -> None:
    fixture = write(
        tmp_path,
        "string.md",
        """\
---
repeat: 3
serial: true
metrics:
  - name: latency
    extract: json.d
    unit: ms
---

| Name | Command |
|---|---|
| r | `if [ "$ASSAY_SAMPLE" = 1 ]; then echo '{"d": "slow"}'; else echo '{"d": 3}'; fi` |
""",
    )
    done, document = run_local(fixture, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    row = rows_of(document)["r"]
    assert row["status"] == "ERR"
    assert [s["status"] for s in row["samples"]] == ["PASS", "ERR"]  # a serial row stops after an error
    extracted = row["samples"][1]["metrics"]["latency"]
    assert extracted["status"] == "error"
    assert "sample 1" in extracted["error"] and "string 'slow'" in extracted["error"]
    assert "metric latency" in row["samples"][1]["error"]
    assert row["metrics"]["latency"]["status"] == "error"
    assert row["outcomes"]["metrics"] == "error"
    line = next(line for line in done.stdout.splitlines() if "metric latency" in line)
    assert "sample 1" in line and "'slow'" in line
