"""Names every row sees without declaring them, as Gavel provides them.

Gavel puts the platform (``GOOS``, ``GOARCH``, ``GOPATH``) and the roots of
the fixture's folder (``GIT_ROOT_DIR``, ``GO_ROOT_DIR``, ``ROOT_DIR``) into
each command's environment, its templates and its CEL context; fixtures
write ``$GIT_ROOT_DIR`` and ``GOOS == "linux"``. Templates and CEL also see
``name``, ``sourceDir``, ``CWD`` and ``workDir`` (the resolved working
directory), and CEL sees ``ansi`` (facts about escape sequences in the output).
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

from fixtures_core.spec import RowSpec

# Environment variables assay sets for every command unless the fixture's env sets them.
PLATFORM_ENV = ("GOOS", "GOARCH", "GIT_ROOT_DIR", "GO_ROOT_DIR", "ROOT_DIR", "GOPATH")
# Names templates can use besides the row's properties.
TEMPLATE_BUILTINS = ("name", "sample", "tmpdir", "sourceDir", "CWD", "workDir", *PLATFORM_ENV)
# Names CEL can use besides the sample's own variables (stdout, json, ...) and the row's properties.
CEL_BUILTINS = ("name", "sourceDir", "CWD", "workDir", "ansi", *PLATFORM_ENV)
# Names a suite's own templates (its workspace folder, its judge command) can use besides properties:
# they are rendered once per row or case, outside any sample, so they see no sample, env or platform.
SUITE_TEMPLATE_BUILTINS = ("name", "sourceDir")

_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i386": "386", "i686": "386"}
_GO_OS = {"linux2": "linux", "win32": "windows", "cygwin": "windows"}


def go_os() -> str:
    """This machine's operating system as Go names it (``linux``, ``darwin``, ``windows``)."""
    return _GO_OS.get(sys.platform, sys.platform)


def go_arch() -> str:
    """This machine's architecture as Go names it (``amd64``, ``arm64``)."""
    machine = platform.machine().lower()
    return _GO_ARCH.get(machine, machine)


@lru_cache(maxsize=256)
def platform_values(source_dir: str) -> Mapping[str, str]:
    """``PLATFORM_ENV`` for a fixture in ``source_dir``; a root that is not found is empty, as in Gavel."""
    git_root = _enclosing(source_dir, ".git")
    go_root = _enclosing(source_dir, "go.mod")
    return {
        "GOOS": go_os(),
        "GOARCH": go_arch(),
        "GIT_ROOT_DIR": git_root,
        "GO_ROOT_DIR": go_root,
        "ROOT_DIR": git_root or go_root or source_dir,
        "GOPATH": os.environ.get("GOPATH", ""),
    }


def _enclosing(folder: str, marker: str) -> str:
    """The nearest folder at or above ``folder`` that holds ``marker``, or ''."""
    start = Path(folder)
    for candidate in (start, *start.parents):
        if (candidate / marker).exists():
            return str(candidate)
    return ""


# Names Gavel documents that assay cannot provide, with why (shown when a template uses one).
UNSUPPORTED_NAMES = {
    "port": "a frontmatter daemon: sets it (this file has none)",
    "executablePath": "it is the path of the gavel binary",
    "query": "Gavel's Query column (AST queries) is not supported",
    **{
        name: "only rows expanded from an @glob Stdout/Stderr cell have it (frontmatter files: is not supported)"
        for name in ("file", "filename", "dir", "absfile", "absdir", "basename", "ext")
    },
}


def template_names(row: RowSpec) -> list[str]:
    """Every name a row's templates may use: properties, env variables, built-ins (``port`` with a daemon)."""
    return [*row.properties, *row.env, *TEMPLATE_BUILTINS, *(["port"] if row.daemon is not None else [])]


def suite_template_values(properties: Mapping[str, object], name: str, source_dir: str) -> dict[str, object]:
    """What a suite's workspace folder or judge command can refer to (``SUITE_TEMPLATE_BUILTINS``)."""
    return {**properties, "name": name, "sourceDir": source_dir}


def cel_names(row: RowSpec) -> list[str]:
    """Every name (besides stdout, json, ...) a row's CEL may use: properties, env variables, built-ins."""
    return [*row.properties, *row.env, *CEL_BUILTINS]
