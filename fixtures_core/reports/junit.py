"""JUnit XML of a run, for the test tab of every CI system.

A testsuite per fixture file and a testcase per row (a row of an A/B suite
is one per arm, named ``row [arm]``): FAIL is a ``failure``, ERR an
``error``, SKIP ``skipped``, each with the reason. Per-row figures (pass@k,
pass^k, pass rate, metric aggregates) are suite ``properties`` named
``ROW: FIGURE`` and a readable table in the suite's ``system-out``.

CI systems read JUnit, not the exit code, so the file gives the same answer
(``verdicts.answer``): a last testsuite, ``assay verdict``, holds the
baseline gate (a ``failure`` when the run regressed), each ship gate (a
hard gate that failed is a ``failure``, a soft one ``skipped`` with its
warning) and, for a run that could not complete, its error. A FAIL row
that takes no part in the exit code (with a baseline: it failed there too;
an arm row of a suite with a hard gate: evidence for the gates) is
``skipped``, its message saying so. So the file has a failure or an error
exactly when the run exits non-zero.

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

from fixtures_core.analysis.trends import Since
from fixtures_core.records.rundoc import FixtureResult, RunResult
from fixtures_core.reports import status_words
from fixtures_core.reports.comparison import text_lines
from fixtures_core.reports.describe import answer, baseline_context, failure, row_reason, sample_reason
from fixtures_core.reports.trends import age_text
from fixtures_core.results import RowResult
from fixtures_core.text import excerpt

_MESSAGE_CHARS = 1000
# XML 1.0 cannot carry most control characters, even escaped: a sample's output may contain them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def junit(run: RunResult, since: Since | None = None) -> str:
    """The run as a JUnit XML document; with ``since`` (the previous run of its suite), a failure's message
    ends with its age (``new tonight``, ``failing since run ...``)."""
    root = ET.Element("testsuites")
    for index, fixture in enumerate(run.fixtures):
        root.append(_suite(run, fixture, index, since))
    gates = _verdict_suite(run, len(run.fixtures))
    if gates is not None:
        root.append(gates)
    _keep_to_xml(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def case_name(row: RowResult) -> str:
    """A row's testcase name: its name, and its arm when it has one."""
    arm = row.properties.get("arm")
    return f"{row.name} [{arm}]" if arm not in (None, "") else row.name


def _suite(run: RunResult, fixture: FixtureResult, index: int, since: Since | None = None) -> ET.Element:
    package = _classname(fixture.file)
    cases = [_case(row, package, run, since) for row in fixture.rows]
    suite = _testsuite(fixture.file, package, index, run, cases, sum(_row_ms(r) for r in fixture.rows))
    properties = ET.SubElement(suite, "properties")
    for name, value in _suite_properties(run, fixture):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    suite.extend(cases)
    ET.SubElement(suite, "system-out").text = _clean(_figures_text(fixture.rows))
    ET.SubElement(suite, "system-err").text = ""
    return suite


def _testsuite(
    name: str, package: str, index: int, run: RunResult, cases: Sequence[ET.Element], ms: float
) -> ET.Element:
    """A testsuite element whose counts are those of its testcases' outcomes."""

    def count(tag: str) -> str:
        return str(sum(1 for case in cases if case.find(tag) is not None))

    return ET.Element(
        "testsuite",
        {
            "name": name,
            "package": package,
            "id": str(index),
            "tests": str(len(cases)),
            "failures": count("failure"),
            "errors": count("error"),
            "skipped": count("skipped"),
            "time": _seconds(ms),
            "timestamp": run.started_at.removesuffix("Z")[:19],  # Ant's pattern has no zone; assay's times are UTC
            "hostname": "localhost",  # a public-safe report names no machine
        },
    )


def _case(row: RowResult, classname: str, run: RunResult, since: Since | None = None) -> ET.Element:
    """A row's testcase, as ``status_words`` shows the row: a plain pass when it passed (or won its case);
    ``skipped`` with why when it did not run, lost or tied its case (no failure: the other arm winning is
    what a suite measures), or failed without deciding the exit code; else a ``failure`` or an ``error``."""
    verdict = run.verdict
    look = status_words.row(row)
    case = ET.Element("testcase", {"name": case_name(row), "classname": classname, "time": _seconds(_row_ms(row))})
    if look.tone == "pass":
        return case
    reason = row_reason(row) or look.word
    if look.settled:
        told = reason if row.status == "SKIP" else f"{look.word}: {reason}" if reason != look.word else look.word
        ET.SubElement(case, "skipped", {"message": excerpt(_clean(told), _MESSAGE_CHARS)})
        return case
    if row.status == "FAIL" and row.id not in verdict.deciding:
        why = _not_deciding(row, run)
        told = f"{look.word}, {why}: {reason}"
        ET.SubElement(case, "skipped", {"message": excerpt(_clean(told), _MESSAGE_CHARS)})
        return case
    tag = "failure" if row.status == "FAIL" else "error"
    age = since.age_of(row) if since is not None else None
    told = f"{age_text(age)}: {reason}" if age is not None else reason  # first: a long reason is cut
    element = ET.SubElement(case, tag, {"type": row.status, "message": excerpt(_clean(told), _MESSAGE_CHARS)})
    element.text = _clean(_details(row))
    return case


def _not_deciding(row: RowResult, run: RunResult) -> str:
    """Why a FAIL row takes no part in the exit code (``Verdict.deciding``)."""
    verdict = run.verdict
    if verdict.regressed is not None:
        if run.comparison is not None and row.id in run.comparison.added:  # the run did not regress
            tolerance = f"{run.comparison.tolerance:g}"
            return f"new since {verdict.baseline}; the suite rates it lowered stayed within the tolerance ({tolerance})"
        return f"not a regression against {verdict.baseline} (it did not pass there)"
    return "evidence for the ship gates, not the verdict"


def _verdict_suite(run: RunResult, index: int) -> ET.Element | None:
    """``assay verdict``: the baseline gate and the ship gates as testcases; None when there are none."""
    verdict = run.verdict
    classname = "assay.verdict"
    cases = []
    if run.error and run.status == "ERR":  # the run could not complete (an interrupt, a budget, a baseline)
        case = ET.Element("testcase", {"name": "run", "classname": classname, "time": "0"})
        ET.SubElement(case, "error", {"type": "ERR", "message": excerpt(_clean(run.error), _MESSAGE_CHARS)})
        cases.append(case)
    if verdict.regressed is not None and run.comparison is not None:
        case = ET.Element("testcase", {"name": f"baseline {verdict.baseline}", "classname": classname, "time": "0"})
        if verdict.regressed:
            failure = ET.SubElement(case, "failure", {"type": "REGRESSION", "message": _clean(verdict.gate or "")})
            failure.text = _clean("\n".join(text_lines(run.comparison)))
        cases.append(case)
    for suite in run.suites:
        for gate in suite.gates:
            case = ET.Element(
                "testcase", {"name": f"{gate.severity} gate {gate.name}", "classname": classname, "time": "0"}
            )
            said = f"{gate.severity} ship gate '{gate.name}' of {suite.file}: {status_words.gate_text(gate)}"
            message = excerpt(_clean(f"{said} ({gate.cel})"), _MESSAGE_CHARS)
            if gate.status == "fail" and gate.severity == "hard":
                ET.SubElement(case, "failure", {"type": "GATE", "message": message})
            elif gate.status == "error":
                ET.SubElement(case, "error", {"type": "GATE", "message": message})
            elif gate.status != "pass":  # a soft gate that warned; a gate not evaluated
                ET.SubElement(case, "skipped", {"message": message})
            cases.append(case)
    if not cases:
        return None
    suite_element = _testsuite("assay verdict", classname, index, run, cases, 0.0)
    properties = ET.SubElement(suite_element, "properties")
    for name, value in _verdict_properties(run):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    suite_element.extend(cases)
    told = [f"verdict: {answer(run)}", *baseline_context(run)]
    ET.SubElement(suite_element, "system-out").text = _clean("\n".join(told) + "\n")
    ET.SubElement(suite_element, "system-err").text = ""
    return suite_element


def _verdict_properties(run: RunResult) -> list[tuple[str, str]]:
    """Both answers and the exit code, the same names in every testsuite; the saved run compared with."""
    verdict = run.verdict
    found = [
        ("assay.run_id", run.run_id),
        ("assay.verdict", status_words.verdict(verdict).word),
        ("assay.baseline", verdict.gate_word),
        ("assay.exit_code", str(verdict.exit_code)),
    ]
    return found + [(f"assay.baseline_context.{index}", line) for index, line in enumerate(baseline_context(run))]


def _suite_properties(run: RunResult, fixture: FixtureResult) -> list[tuple[str, str]]:
    found = [*_verdict_properties(run), ("assay.sha256", fixture.sha256)]
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
        lines.append(f"{status_words.row(row).word:4} {case_name(row)}" + (f": {figures}" if figures else ""))
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
    """The row's wall time (a run recorded before rows had one: its samples' durations)."""
    return row.wall_ms if row.wall_ms is not None else sum(s.duration_ms for s in row.samples)


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
