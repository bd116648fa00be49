"""What every sample of a run shares: the run's id, output cap, folders, dry run and daemons.

Its own module, below ``rows`` and ``attempt``, which both read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fixtures_core.execution.daemons import DaemonPort
from fixtures_core.execution.sampling import DEFAULT_CAPTURE_LIMIT


@dataclass(frozen=True)
class RunSettings:
    """What every sample of a run shares.

    evidence_dir: the run's folder, where A/B attempts keep their evidence.
    dry_run:      attempts prepare, set up and verify, but never start the command.
    daemons:      the started daemons of the run's files (``execution.daemons``).
    """

    run_id: str
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    tmp_root: str | None = None
    evidence_dir: str | None = None
    dry_run: bool = False
    daemons: Mapping[str, DaemonPort] = field(default_factory=dict)  # by ``Daemon.where``: ports or errors
