"""Where a deployment's flow run may read fixtures and write state: its working folder, or an allow-list.

Anyone who may start a custom run of a deployment (the UI's form, ``prefect
deployment run --param``) chooses its parameters, and a fixture is commands
that run on the worker. So a flow run that was not started by ``assay run``
resolves ``paths``, ``out`` and ``baseline`` (symlinks followed) and refuses,
in one line and before any command runs, anything outside the flow run's
working folder and the folders in ``ASSAY_ALLOWED_ROOTS`` (separated like
``PATH``; set in the deployment's environment, as ``deployments/nightly.py``
does for the paths it serves). A person's own ``assay run`` is not confined.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from fixtures_core.errors import AssayError
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.spec import Matrix
from flows.parameters import ParameterError

ALLOWED_ROOTS = "ASSAY_ALLOWED_ROOTS"


class OutsideRoots(ParameterError):
    """A deployment parameter that names a place outside the deployment's working folder and allow-list."""


@dataclass(frozen=True)
class Confinement:
    """The folders a deployment's flow run may use: its working folder first, then the allow-list."""

    roots: tuple[Path, ...]

    @classmethod
    def of_deployment(cls, environ: Mapping[str, str] = os.environ) -> Confinement:
        """The working folder and ``ASSAY_ALLOWED_ROOTS`` of this process."""
        listed = [Path(p) for p in environ.get(ALLOWED_ROOTS, "").split(os.pathsep) if p.strip()]
        return cls(tuple(dict.fromkeys(p.resolve() for p in [Path.cwd(), *listed])))

    def check_options(self, options: RunOptions) -> None:
        """OutsideRoots for the first of ``paths``, ``out`` or ``baseline`` that leaves the roots."""
        for index, path in enumerate(options.paths):
            self._check(f"paths[{index}]", path)
        self._check("out", options.out)
        if options.baseline is not None:
            self._check_baseline(options)

    def check_fixtures(self, matrix: Matrix) -> None:
        """OutsideRoots for a fixture file found in a folder that leaves the roots (through a symlink)."""
        for fixture in matrix.files:
            self._check("paths", fixture.path, found=True)

    def _check_baseline(self, options: RunOptions) -> None:
        assert options.baseline is not None
        try:
            found = store_for(options).resolve_run(options.baseline)
        except AssayError:  # no such run: the plan says so in its own words
            found = None
        if found is not None:
            self._check("baseline", options.baseline, resolved=found)
        elif "/" in options.baseline or options.baseline.startswith(".."):
            self._check("baseline", options.baseline)

    def _check(self, field: str, given: str, resolved: Path | None = None, found: bool = False) -> None:
        where = (resolved or Path(given)).resolve()
        if not _inside(where, self.roots):
            what = "a fixture file found at" if found else "it names"
            raise OutsideRoots(
                f"refused: {field} {given!r}: {what} {where}, outside this deployment's working folder "
                f"{self.roots[0]}{_also(self.roots[1:])}; a deployment may allow more folders in {ALLOWED_ROOTS}"
            )


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _also(roots: tuple[Path, ...]) -> str:
    return f" and {ALLOWED_ROOTS} ({', '.join(str(r) for r in roots)})" if roots else ""
