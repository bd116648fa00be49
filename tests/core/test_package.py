"""Promises of the package itself: a pure domain, one-way data flow, a pinned public API."""

from __future__ import annotations

import ast
import importlib
import os
import pkgutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import fixtures_core

PACKAGE_DIR = Path(fixtures_core.__file__).parent
REPO = PACKAGE_DIR.parent

# Rooms of the domain in the order data flows through a run: a module may import
# its own room and the rooms before it, never a later one. A new room gets a rank here.
RANKS = {
    "errors": 0, "durations": 0, "spec": 0, "results": 0, "cel": 0, "limits": 0, "redaction": 0, "suite": 0,
    "files": 0, "text": 0, "sequential": 0, "properties": 0, "threshold": 0, "judgment": 0, "changes": 0,
    "parsing": 1, "verdicts": 1,
    "execution": 2,
    "analysis": 3,
    "records": 4,
    "reports": 5,
    "runs": 6,
}  # fmt: skip


def all_modules() -> list[str]:
    return [m.name for m in pkgutil.walk_packages(fixtures_core.__path__, prefix="fixtures_core.")]


def runtime_imports(module: str) -> set[str]:
    """fixtures_core modules that ``module`` imports at run time (``if TYPE_CHECKING:`` blocks excluded)."""
    relative = module.removeprefix("fixtures_core").lstrip(".").replace(".", "/")
    path = (
        PACKAGE_DIR / relative / "__init__.py" if (PACKAGE_DIR / relative).is_dir() else PACKAGE_DIR / f"{relative}.py"
    )
    tree = ast.parse(path.read_text())
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fixtures_core"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in known else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("fixtures_core"))
        for child in ast.iter_child_nodes(node):
            visit(child)

    known = set(all_modules())
    visit(tree)
    return found - {"fixtures_core"}


def room(module: str) -> str:
    return module.split(".")[1]


def test_fixtures_core_never_imports_prefect() -> None:
    modules = all_modules()
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('prefect' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", f"one of {modules} imports Prefect"


def test_every_room_has_a_rank() -> None:
    assert {room(m) for m in all_modules()} <= set(RANKS)


def test_data_flows_one_way_between_rooms() -> None:
    backward = [
        f"{module} imports {target}"
        for module in all_modules()
        if module != "fixtures_core"
        for target in runtime_imports(module)
        if RANKS[room(target)] > RANKS[room(module)]
    ]
    assert backward == []


def test_no_import_cycles() -> None:
    graph = {m: runtime_imports(m) for m in all_modules() if m != "fixtures_core"}
    state: dict[str, str] = {}

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for target in graph.get(node, ()):
            if state.get(target) == "open":
                return [*path, node, target]
            if target not in state and (found := cycle_from(target, [*path, node])):
                return found
        state[node] = "done"
        return None

    for module in graph:
        if module not in state:
            assert cycle_from(module, []) is None


def test_the_wheel_holds_every_subpackage(monkeypatch: pytest.MonkeyPatch) -> None:
    """The packages setuptools puts in the wheel, read from pyproject.toml as a build reads it."""
    from setuptools.config.pyprojecttoml import apply_configuration
    from setuptools.dist import Distribution

    monkeypatch.chdir(REPO)  # package discovery is relative to the project folder
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # setuptools calls [tool.setuptools] "beta"
        built = apply_configuration(Distribution(), REPO / "pyproject.toml").packages
    folders = [
        Path(folder).relative_to(REPO)
        for top in ("fixtures_core", "flows")
        for folder, _dirs, files in os.walk(REPO / top)
        if "__init__.py" in files
    ]
    assert sorted(built) == sorted(".".join(folder.parts) for folder in folders)


# Every module that declares ``__all__``, and what it declares: a change to a public API shows here.
PUBLIC_API = {
    "fixtures_core": [
        "AssayError",
        "BaselineError",
        "CelError",
        "Containment",
        "FixtureError",
        "Matrix",
        "MetricSpec",
        "RowResult",
        "RowSpec",
        "RunFileError",
        "RunResult",
        "RunSettings",
        "SampleResult",
        "UsageError",
        "ValidationFailed",
        "Verdict",
        "load_matrix",
        "load_run",
        "run_row",
        "select",
        "validate_matrix",
    ],
    "fixtures_core.analysis.baseline": [
        "Comparison",
        "MetricDelta",
        "RateDelta",
        "RowChange",
        "RunFacts",
        "check_tolerance",
        "compare",
    ],
    "fixtures_core.verdicts.answer": ["Verdict", "verdict_of"],
    "fixtures_core.reports.comparison": [
        "ComparisonLines",
        "FigureLine",
        "Mark",
        "RowLine",
        "baseline_facts",
        "baseline_named",
        "comparison_lines",
        "regressions",
        "still_failing_text",
        "text_lines",
    ],
    "fixtures_core.text": ["counted", "excerpt", "listed", "visible"],
}


def declares_all(path: Path) -> bool:
    """True when the module assigns ``__all__`` at its top level."""
    tree = ast.parse(path.read_text())
    targets = [t for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign) for t in _targets(node)]
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _targets(node: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_module_declaring_all_is_pinned() -> None:
    # flows/ too, read without importing it (it imports Prefect).
    files = [*PACKAGE_DIR.rglob("*.py"), *(PACKAGE_DIR.parent / "flows").rglob("*.py")]
    assert sorted(module_name(f) for f in files if declares_all(f)) == sorted(PUBLIC_API)


@pytest.mark.parametrize("module", sorted(PUBLIC_API))
def test_public_api_is_pinned_sorted_and_importable(module: str) -> None:
    imported = importlib.import_module(module)
    assert imported.__all__ == PUBLIC_API[module]
    assert PUBLIC_API[module] == sorted(PUBLIC_API[module])
    for name in imported.__all__:
        assert hasattr(imported, name), f"{module}.__all__ names {name}, which it lacks"
