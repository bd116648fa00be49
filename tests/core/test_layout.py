"""The tests of the domain keep its layering: nothing under tests/core imports flows (or Prefect)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE_TESTS = Path(__file__).resolve().parent


def imported_tops(path: Path) -> set[str]:
    """The top-level packages a Python file imports, anywhere in it."""
    tops = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            tops.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            tops.add(node.module.split(".")[0])
    return tops


def test_imported_tops_sees_nested_and_from_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os.path\nfrom flows.flow import matrix\ndef f():\n    import prefect\nfrom . import y\n")
    assert imported_tops(sample) == {"os", "flows", "prefect"}


def test_no_core_test_imports_flows_or_prefect() -> None:
    files = sorted(CORE_TESTS.rglob("*.py"))
    assert len(files) > 40  # the walk found the tests
    offenders = [
        f"{path.relative_to(CORE_TESTS)}: {top}"
        for path in files
        for top in sorted(imported_tops(path) & {"flows", "prefect"})
    ]
    assert offenders == []
