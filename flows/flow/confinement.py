"""Where a deployment's flow run may read fixtures and write state: its working folder, or an allow-list.

Anyone who may start a custom run of a deployment (the UI's form, ``prefect
deployment run --param``) chooses its parameters, and a fixture is commands
that run on the worker. So a flow run that was not started by ``assay run``
resolves ``paths``, ``out`` and ``baseline`` (symlinks followed) and refuses,
in one line and before any command runs, anything outside the flow run's
working folder and the folders its deployment allows (``ASSAY_ALLOWED_ROOTS``,
separated like ``PATH``). A person's own ``assay run`` is not confined.

The allow-list comes from what a custom run cannot change:

* a deployment on a work pool: the deployment's own job variables
  (``assay_allowed_roots`` in ``prefect.yaml``, the variable of the locked
  pool ``deployments/process-pool.json``; or ``env: {ASSAY_ALLOWED_ROOTS:
  ...}`` on a pool that passes ``env`` on) and a fixed ``env`` in the pool's
  base job template, all read from the API, never from the flow run's
  environment. A flow run whose job variables differ from its deployment's
  is refused first (``flows.flow.job_variables``);
* a deployment served by ``deployments/nightly.py`` (no work pool): the
  serving process's environment, which Prefect's runner gives every run it
  starts and no custom run can change (it ignores a run's job variables);
* a flow called without a deployment: the caller's own environment.

The working folder is the flow run's: on a work pool, the deployment's pull
step put it there, or the worker's ``working_dir``, which only the
deployment and its pool set.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fixtures_core.errors import AssayError
from fixtures_core.runs.options import RunOptions, store_for
from fixtures_core.spec import Matrix
from fixtures_core.text import excerpt
from flows.flow.job_variables import check_unchanged
from flows.flow.parameters import QUOTED_CHARS, ParameterError, quoted

if TYPE_CHECKING:
    from prefect.client.orchestration import SyncPrefectClient
    from prefect.client.schemas.objects import FlowRun

ALLOWED_ROOTS = "ASSAY_ALLOWED_ROOTS"
ALLOWED_ROOTS_VARIABLE = "assay_allowed_roots"  # the locked pool's job variable (deployments/process-pool.json)


class OutsideRoots(ParameterError):
    """A deployment parameter that names a place outside the deployment's working folder and allow-list."""


@dataclass(frozen=True)
class Confinement:
    """The folders a deployment's flow run may use: its working folder first, then the allow-list."""

    roots: tuple[Path, ...]
    source: str = ALLOWED_ROOTS  # where the allow-list is set, as the refusal tells it

    @classmethod
    def of_process(cls, environ: Mapping[str, str] = os.environ) -> Confinement:
        """The working folder and ``ASSAY_ALLOWED_ROOTS`` of this process's environment."""
        return cls.of(Path.cwd(), environ.get(ALLOWED_ROOTS, ""), f"{ALLOWED_ROOTS} (this process's environment)")

    @classmethod
    def of(cls, working: Path, listed: str, source: str = ALLOWED_ROOTS) -> Confinement:
        """``working`` and the folders of an ``ASSAY_ALLOWED_ROOTS`` value."""
        folders = [Path(p) for p in listed.split(os.pathsep) if p.strip()]
        return cls(tuple(dict.fromkeys(Path(os.path.realpath(p)) for p in [working, *folders])), source)

    @classmethod
    def of_flow_run(cls, client: SyncPrefectClient, flow_run: FlowRun | None) -> Confinement:
        """The confinement of a flow run, from its deployment's definition (see the module docstring)."""
        if flow_run is None or flow_run.deployment_id is None:
            return cls.of_process()
        deployment = client.read_deployment(flow_run.deployment_id)
        if not deployment.work_pool_name:  # served: Prefect's runner starts it with the serving process's environment
            return cls.of(Path.cwd(), os.environ.get(ALLOWED_ROOTS, ""), f"{ALLOWED_ROOTS} of the serving process")
        check_unchanged(deployment.job_variables or {}, flow_run.job_variables or {})
        pool = client.read_work_pool(deployment.work_pool_name)
        listed = [_allowed(deployment.job_variables or {}), _allowed(_fixed_job(pool.base_job_template or {}))]
        source = f"{ALLOWED_ROOTS_VARIABLE} (the deployment's job variables)"
        return cls.of(Path.cwd(), os.pathsep.join(p for p in listed if p), source)

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
        where = Path(os.path.realpath(resolved or Path(given)))  # realpath: a symlink loop is no exception
        if not _inside(where, self.roots):
            what = "a fixture file found at" if found else "it names"
            raise OutsideRoots(
                f"refused: {field} {quoted(given)}: {what} {excerpt(str(where), QUOTED_CHARS - 1, tail=True)}, outside "
                f"this deployment's working folder {self.roots[0]}{_also(self.roots[1:])}; a deployment may allow "
                f"more folders in {self.source}"
            )


def _fixed_job(template: Mapping[str, Any]) -> Mapping[str, Any]:
    """The job configuration of a base job template, when it sets a fixed ``env`` (an allow-list for every run)."""
    job = template.get("job_configuration")
    return job if isinstance(job, Mapping) and isinstance(job.get("env"), Mapping) else {}


def _allowed(variables: Mapping[str, Any]) -> str:
    """The folders of a job's ``assay_allowed_roots`` and ``ASSAY_ALLOWED_ROOTS`` in its ``env``, or ''."""
    env = variables.get("env")
    values = [variables.get(ALLOWED_ROOTS_VARIABLE), env.get(ALLOWED_ROOTS) if isinstance(env, Mapping) else None]
    return os.pathsep.join(v for v in values if isinstance(v, str) and v)


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _also(roots: tuple[Path, ...]) -> str:
    return f" and ({', '.join(str(r) for r in roots)})" if roots else ""
