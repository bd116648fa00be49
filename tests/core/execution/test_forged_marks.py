"""The marks a sample's process could forge to survive its run: another run's token, a helper's mark.

A process that leaves its sample every way (``setsid``, ``env -i``) and then
claims to belong elsewhere, with a made-up ``ASSAY_SAMPLE_ID`` or
``ASSAY_HELPER``, is still swept when the run closes: those marks spare a
process only when they are this process's own (a live run's secret token, the
helper secret drawn at start).
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from fixtures_core.execution import procfs
from fixtures_core.execution.cgroups import cgroup_base
from fixtures_core.execution.containment import HELPER_VARIABLE, TOKEN_VARIABLE, Containment, is_helper
from fixtures_core.execution.sampling import execute
from tests.core.execution.test_containment import MODES, bash, soon
from tests.processes import gone_soon

FORGERIES = {
    # setsid + env -i (and, as root with cgroups, out of its cgroup): no group, session, token or cgroup holds
    # it; assay adopted it as subreaper when its sample's leader ended, and sweeps it at close.
    "no mark at all": "",
    "a made-up token": f"{TOKEN_VARIABLE}=0123456789ab-0",
    "a helper's mark": f"{HELPER_VARIABLE}=prefect-server",
}


@pytest.mark.parametrize("cgroups", MODES)
@pytest.mark.parametrize("forgery", list(FORGERIES))
def test_a_process_with_a_forged_mark_is_swept_when_the_run_closes(forgery: str, cgroups: bool, tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    quoted = shlex.quote(str(pid_file))
    # As root with cgroups it leaves its sample's cgroup too, for the cgroup assay's own cgroup sits in.
    base = cgroup_base()
    leave = f"echo $$ > {shlex.quote(str(base[0] / 'cgroup.procs'))} 2>/dev/null;" if cgroups and base else ""
    mark = f"{FORGERIES[forgery]} " if FORGERIES[forgery] else ""
    script = (
        f"setsid env -i {mark}sh -c '{leave} grep ^0:: /proc/$$/cgroup > {quoted}.cgroup;"
        f" echo $$ > {quoted}.tmp; mv {quoted}.tmp {quoted};"
        f" exec sleep 60' >/dev/null 2>&1 </dev/null & while [ ! -e {quoted} ]; do sleep 0.01; done"
    )
    with Containment(use_cgroups=cgroups) as containment:
        result = execute(bash(script), deadline=soon(), containment=containment)
        escaped = int(pid_file.read_text())
        assert result.exit_code == 0
    if cgroups and base is not None:  # it did leave: no cgroup of the run holds it
        assert Path(f"{pid_file}.cgroup").read_text().strip() == f"0::{base[1]}"
    assert gone_soon(escaped), f"the process with {forgery} outlived the run"
    assert procfs.stat(escaped) is None, "and it was reaped, not left a zombie"


def test_the_run_token_is_a_128_bit_secret() -> None:
    tokens = {Containment(watchdog=False).token for _ in range(50)}
    assert len(tokens) == 50
    assert all(len(token) == 32 and int(token, 16) >= 0 for token in tokens)


def test_a_sample_never_inherits_a_helper_mark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HELPER_VARIABLE, "anything")
    with Containment(use_cgroups=False) as containment:
        result = execute(bash(f'echo "${{{HELPER_VARIABLE}-unset}}"'), deadline=soon(), containment=containment)
    assert result.stdout == b"unset\n"
    assert not is_helper(os.getpid()) and procfs.environ_value(os.getpid(), b"NO_SUCH_VARIABLE") is None
