"""JUnit XML: valid against the Ant and Jenkins schemas, a testcase per row (per arm), reasons and figures."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
import xmlschema

from fixtures_core.records.rundoc import RunResult
from fixtures_core.reports.junit import junit

SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "junit"


@pytest.fixture(scope="module", params=["ant-junit.xsd", "jenkins-junit-10.xsd"])
def schema(request: pytest.FixtureRequest) -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(SCHEMAS / request.param))


def test_the_example_matrix_validates_with_4_testcases_and_3_failures(
    matrix_run: RunResult, schema: xmlschema.XMLSchema
) -> None:
    document = junit(matrix_run)
    schema.validate(document)
    cases = ET.fromstring(document).findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["API high", "CLI high", "API low", "API flaky"]
    assert [c.find("failure") is not None for c in cases] == [False, True, True, True]
    suite = ET.fromstring(document).find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "3", "0")


def test_every_status_and_an_arm_validate(mixed_run: RunResult, schema: xmlschema.XMLSchema) -> None:
    document = junit(mixed_run)
    schema.validate(document)  # a control character from a sample's output must not break the XML
    cases = {c.get("name"): c for c in ET.fromstring(document).iter("testcase")}
    assert list(cases) == ["small [A]", "small b [B]", "big [A]", "broken", "later"]
    failure = cases["big [A]"].find("failure")
    assert failure is not None and failure.get("message") == "metric size: 500 bytes is above max 100"
    error = cases["broken"].find("error")
    assert error is not None and "stdout is not a JSON object or array" in str(error.get("message"))
    skipped = cases["later"].find("skipped")
    assert skipped is not None and skipped.get("message") == "skip: true"
    assert len(cases["small [A]"]) == 0  # a passing testcase has no child


def test_the_failure_text_says_where_which_samples_and_shows_an_excerpt(matrix_run: RunResult) -> None:
    cases = {c.get("name"): c for c in ET.fromstring(junit(matrix_run)).iter("testcase")}
    failure = cases["API flaky"].find("failure")
    assert failure is not None and failure.get("message") == (
        "CEL assertion false (clause 1 of 2 is false: "
        '(json.execution.state == "completed" || json.execution.exitReason == "stop")) on sample 3 of 5'
    )
    text = failure.text or ""
    assert text.startswith("examples/matrix.md:69\nCEL: ")
    assert "sample 3: FAIL: CEL assertion false" in text and '"state": "failed"' in text


def test_metric_aggregates_and_pass_at_k_are_properties(matrix_run: RunResult) -> None:
    suite = ET.fromstring(junit(matrix_run)).find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["assay.verdict"] == "FAIL"
    assert properties["API flaky: samples passed"] == "4/5"
    assert properties["API flaky: pass@5"] == "1"  # 1 - C(1,5)/C(5,5) = 1
    assert properties["API flaky: pass^5"] == "0"  # C(4,5)/C(5,5) = 0
    assert properties["CLI high: duration_ms (median)"].endswith("ms [fail]")
    assert properties["API high: cost_usd (mean)"].endswith("usd [informational]")
    system_out = suite.find("system-out")
    assert system_out is not None and "FAIL (flaky) API flaky: samples passed 4/5" in (system_out.text or "")


def test_the_schemas_reject_what_they_should(matrix_run: RunResult) -> None:
    """The check above can fail: a testcase with two results, or a suite without its counts, is refused."""
    ant = xmlschema.XMLSchema(str(SCHEMAS / "ant-junit.xsd"))
    jenkins = xmlschema.XMLSchema(str(SCHEMAS / "jenkins-junit-10.xsd"))
    root = ET.fromstring(junit(matrix_run))
    case = root.find("testsuite/testcase")
    assert case is not None
    ET.SubElement(case, "failure", {"type": "FAIL"})
    ET.SubElement(case, "skipped")
    assert not ant.is_valid(ET.tostring(root, encoding="unicode"))
    suite = root.find("testsuite")
    assert suite is not None
    del suite.attrib["tests"]
    assert not jenkins.is_valid(ET.tostring(root, encoding="unicode"))


def test_a_testcase_takes_its_rows_wall_time_not_the_sum_of_its_samples(matrix_run: RunResult) -> None:
    cases = {c.get("name"): c for c in ET.fromstring(junit(matrix_run)).iter("testcase")}
    for row in matrix_run.rows:
        assert row.wall_ms is not None and len(row.samples) == 5
        assert cases[row.name].get("time") == f"{row.wall_ms / 1000:.3f}"
    old = replace(matrix_run.rows[0], wall_ms=None)  # a run recorded before rows had a wall time
    fixture = replace(matrix_run.fixtures[0], rows=(old,))
    (case,) = ET.fromstring(junit(replace(matrix_run, fixtures=(fixture,)))).iter("testcase")
    assert case.get("time") == f"{sum(s.duration_ms for s in old.samples) / 1000:.3f}"


def test_a_disqualified_arm_is_never_a_green_pass(ab_run: RunResult, schema: xmlschema.XMLSchema) -> None:
    document = junit(ab_run)
    schema.validate(document)
    cases = {c.get("name"): c for c in ET.fromstring(document).iter("testcase")}
    skipped = cases["config-comments/hasty [hasty]"].find("skipped")
    assert skipped is not None  # it lost its case: not a pass, and (a hard gate decides) not the verdict's failure
    assert (skipped.get("message") or "").startswith(
        "DISQUALIFIED, evidence for the ship gates, not the verdict: loses its case whatever its score: disqualifier: "
    )
    lost = cases["loud-flag/hasty [hasty]"].find("skipped")  # it lost on points: no failure, and no plain pass
    assert lost is not None and lost.get("message") == "LOST"
    assert list(cases["loud-flag/careful [careful]"]) == []  # it won: a plain pass
