"""JUnit XML of a run, for the test tab of every CI system.

A testsuite per fixture file and a testcase per row (a row of an A/B suite
is one per arm, named ``row [arm]``): FAIL is a ``failure``, ERR an
``error``, SKIP ``skipped``, each with the reason. Per-row figures (pass@k,
pass^k, pass rate, metric aggregates) are suite ``properties`` named
``ROW: FIGURE`` and a readable table in the suite's ``system-out``.

The file validates against both published schemas CI tools follow: the
Apache Ant JUnit schema (strict: testcase has at most one child and no
properties, the suite carries ``id``, ``package``, ``hostname``, a
zone-less ``timestamp``, and ``system-out``/``system-err``) and the Jenkins
xUnit plugin's ``junit-10.xsd``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from fixtures_core.analysis.finalize import Summary
from fixtures_core.records.rundoc import FixtureResult, RunResult
from fixtures_core.reports.describe import failure, row_reason, sample_reason
from fixtures_core.results import RowResult
from fixtures_core.text import excerpt

_MESSAGE_CHARS = 1000
# XML 1.0 cannot carry most control characters, even escaped: a sample's output may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def junit(run: RunResult) -> str:
    """The run as a JUnit XML document."""
    root = ET.Element("testsuites")
    for index, fixture in enumerate(run.fixtures):
        root.append(_suite(run, fixture, index))
    _keep_to_xml(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def case_name(row: RowResult) -> str:
    """A row's testcase name: its name, and its arm when it has one."""
    arm = row.properties.get("arm")
    return f"{row.name} [{arm}]" if arm not in (None, "") else row.name


def _suite(run: RunResult, fixture: FixtureResult, index: int) -> ET.Element:
    rows = fixture.rows
    counts = Summary.of(rows)
    package = _classname(fixture.file)
    suite = ET.Element(
        "testsuite",
        {
            "name": fixture.file,
            "package": package,
            "id": str(index),
            "tests": str(counts.rows),
            "failures": str(counts.failed),
            "errors": str(counts.errored),
            "skipped": str(counts.skipped),
            "time": _seconds(sum(_row_ms(r) for r in rows)),
            "timestamp": run.started_at.removesuffix("Z")[:19],  # Ant's pattern has no zone; assay's times are UTC
            "hostname": "localhost",  # a public-safe report names no machine
        },
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in _suite_properties(run, fixture):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    for row in rows:
        suite.append(_case(row, package))
    ET.SubElement(suite, "system-out").text = _clean(_figures_text(rows))
    ET.SubElement(suite, "system-err").text = ""
    return suite


def _case(row: RowResult, classname: str) -> ET.Element:
    case = ET.Element("testcase", {"name": case_name(row), "classname": classname, "time": _seconds(_row_ms(row))})
    if row.status == "PASS":
        return case
    reason = excerpt(_clean(row_reason(row) or row.status), _MESSAGE_CHARS)
    if row.status == "SKIP":
        ET.SubElement(case, "skipped", {"message": reason})
        return case
    tag = "failure" if row.status == "FAIL" else "error"
    element = ET.SubElement(case, tag, {"type": row.status, "message": reason})
    element.text = _clean(_details(row))
    return case


def _suite_properties(run: RunResult, fixture: FixtureResult) -> list[tuple[str, str]]:
    found = [("assay.run_id", run.run_id), ("assay.verdict", run.verdict), ("assay.sha256", fixture.sha256)]
    if run.label:
        found.append(("assay.label", run.label))
    for row in fixture.rows:
        found += [(f"{case_name(row)}: {name}", value) for name, value in row_figures(row)]
    return found


def row_figures(row: RowResult) -> list[tuple[str, str]]:
    """A row's figures as (name, text): pass rate, pass@k, pass^k, then each metric's aggregate."""
    figures: list[tuple[str, str]] = []
    s = row.stochastic
    if s is not None:
        if s.withheld:
            figures.append(("pass@k", f"withheld: {s.withheld}"))
        else:
            figures += [
                ("samples passed", f"{s.passed}/{s.n}"),
                (f"pass@{s.k}", _number(s.pass_at_k)),
                (f"pass^{s.k}", _number(s.pass_hat_k)),
            ]
    for name, metric in row.metrics.items():
        value = "-" if metric.value is None else f"{metric.value:.6g} {metric.unit}"
        verdict = "informational" if not metric.gate else metric.status
        figures.append((f"{name} ({metric.aggregate})", f"{value} [{verdict}]"))
    return figures


def _figures_text(rows: Sequence[RowResult]) -> str:
    lines = []
    for row in rows:
        figures = "; ".join(f"{name} {value}" for name, value in row_figures(row))
        lines.append(f"{row.status:4} {case_name(row)}" + (f": {figures}" if figures else ""))
    return "\n".join(lines) + "\n"


def _details(row: RowResult) -> str:
    """The failure text: where the row is, its CEL, each failing sample's check, one output excerpt."""
    told = failure(row)
    lines = [told.where]
    if told.expression:
        lines.append(f"CEL: {told.expression}")
    lines += [f"sample {s.index}: {s.status}: {sample_reason(s)}" for s in row.samples if not s.passed]
    for stream, text in told.excerpts:
        lines += [f"{stream} of sample {told.first_sample} (excerpt):", text]
    return "\n".join(lines)


def _row_ms(row: RowResult) -> float:
    return sum(s.duration_ms for s in row.samples)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


def _classname(file: str) -> str:
    """``examples/matrix.md`` -> ``examples.matrix``: CI tools split class names on dots."""
    stem = file.removesuffix(".md")
    return re.sub(r"[/\\]+", ".", stem).strip(".") or "assay"


def _keep_to_xml(root: ET.Element) -> None:
    """Every attribute and text in characters XML 1.0 allows: names and files come from fixtures and
    run documents, which may hold control characters that no escaping can carry."""
    for element in root.iter():
        element.attrib = {key: _clean(value) for key, value in element.attrib.items()}
        if element.text:
            element.text = _clean(element.text)


def _clean(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
