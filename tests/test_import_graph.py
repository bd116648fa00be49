"""No import circles in the product: data flows one way through fixtures_core/ and flows/.

The graph is read from the source (a small AST walk), so an import inside a
function or under ``TYPE_CHECKING`` counts too: a lazy import hides a circle
from Python, not from a reader.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fixtures_core", "flows")


def modules_of(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Every module of ``packages`` under ``root`` by its dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


def imported_names(path: Path, module: str) -> Iterator[str]:
    """The dotted names ``path`` imports anywhere in its body (``from a import b`` gives ``a`` and ``a.b``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path, packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the modules of the product it imports (its own parent packages left out: Python
    imports them first whatever the module says)."""
    modules = modules_of(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        parents = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        graph[name] = {t for t in imported_names(path, name) if t in modules and t != name and t not in parents}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_product_has_no_import_circles() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 100  # the walk saw the product, not an empty folder
    assert circles(graph) == []


def test_fixtures_core_never_imports_flows_or_prefect() -> None:
    for name, path in modules_of(ROOT, ["fixtures_core"]).items():
        tops = {t.split(".")[0] for t in imported_names(path, name)}
        assert not tops & {"flows", "prefect"}, name


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    "files",
    [
        {"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import x\n", "pkg/b.py": "import pkg.a\n"},
        {  # lazily, under TYPE_CHECKING and relatively: a circle all the same
            "pkg/__init__.py": "",
            "pkg/room/__init__.py": "",
            "pkg/room/a.py": "def f():\n    from ..c import y\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.room import a\n",
            "pkg/c.py": "from . import b\n",
        },
    ],
    ids=["direct", "lazy-relative-typing"],
)
def test_a_planted_circle_is_found(tmp_path: Path, files: dict[str, str]) -> None:
    graph = import_graph(write(tmp_path, files), ["pkg"])
    assert len(circles(graph)) == 1


def test_a_package_importing_its_own_module_is_no_circle(tmp_path: Path) -> None:
    files = {"pkg/__init__.py": "from pkg.a import x\n", "pkg/a.py": "x = 1\n", "pkg/b.py": "from pkg import a\n"}
    assert circles(import_graph(write(tmp_path, files), ["pkg"])) == []


FLOWS_ROOMS = {"flows.server": 0, "flows.flow": 1, "flows.cli": 2, "flows.run": 3}  # each imports only lower ones


def test_the_rooms_of_flows_import_downwards() -> None:
    """The command line calls the flow and the server; the flow runs on the server; the server knows neither."""

    def rank(module: str) -> int | None:
        return next((r for room, r in FLOWS_ROOMS.items() if module == room or module.startswith(room + ".")), None)

    upward: list[tuple[str, str]] = []
    for source, targets in import_graph(ROOT).items():
        level = rank(source)
        if level is not None:
            upward += [(source, t) for t in sorted(targets) if (above := rank(t)) is not None and above > level]
    assert upward == []
