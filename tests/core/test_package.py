"""Promises of the package itself: a pure domain, a pinned public API."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import fixtures_core


def test_fixtures_core_never_imports_prefect() -> None:
    modules = [f"fixtures_core.{m.name}" for m in pkgutil.iter_modules(fixtures_core.__path__)]
    code = "import sys\n" + "".join(f"import {m}\n" for m in modules) + "print('prefect' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", f"one of {modules} imports Prefect"


def test_public_api_is_sorted_and_importable() -> None:
    assert fixtures_core.__all__ == sorted(fixtures_core.__all__)
    for name in fixtures_core.__all__:
        assert getattr(fixtures_core, name) is not None
