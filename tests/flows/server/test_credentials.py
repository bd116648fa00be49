"""A home's Prefect API secret: made once, its owner's only, refused in one line when others may read it."""

from __future__ import annotations

import base64
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flows.server.credentials import CredentialsError, authorization, create_secret, read_secret, secret_path

REPO = Path(__file__).resolve().parents[3]


def test_a_secret_is_made_once_for_its_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)  # a usual umask: the file must be 0600 whatever it allows
    try:
        made = create_secret(tmp_path)
    finally:
        os.umask(old)
    assert made.startswith("assay:") and len(made) > 40
    assert stat.S_IMODE(secret_path(tmp_path).stat().st_mode) == 0o600
    assert create_secret(tmp_path) == made == read_secret(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["assay-api-auth"], "no draft left behind"
    assert authorization(made) == "Basic " + base64.b64encode(made.encode()).decode()


def test_a_home_without_a_secret_has_none(tmp_path: Path) -> None:
    assert read_secret(tmp_path) is None


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_secret_others_may_read_is_refused_in_one_line(tmp_path: Path, mode: int) -> None:
    path = secret_path(tmp_path)
    path.write_text("assay:guessable\n")
    path.chmod(mode)
    with pytest.raises(CredentialsError) as refused:
        read_secret(tmp_path)
    assert str(refused.value) == (
        f"{path}: the Prefect API secret is readable by others (mode {mode:04o}): `chmod 600 {path}` "
        "(and remove it for a new secret if others may have read it)"
    )


def test_assay_server_start_refuses_a_secret_others_may_read_before_starting_anything(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    secret_path(home).write_text("assay:guessable\n")
    secret_path(home).chmod(0o644)
    env = dict(os.environ, PYTHONPATH=str(REPO), PREFECT_HOME=str(home))
    done = subprocess.run(
        [sys.executable, "-m", "flows.run", "server", "start"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    assert done.stderr == f"error: {secret_path(home)}: the Prefect API secret is readable by others (mode 0644): " \
        f"`chmod 600 {secret_path(home)}` (and remove it for a new secret if others may have read it)\n"  # fmt: skip
    assert not (home / "server.pid").exists() and not (home / "prefect.db").exists()
