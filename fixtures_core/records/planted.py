"""The state folder is untrusted input: a shared runner or a checked-out repository may plant files in it.

assay never follows a symlink, and never opens a FIFO or a device, where it
keeps its own files and folders (``runs/``, a run's folder, its ``evidence/``,
``running.lock``): ``check_folder`` looks with ``lstat``, and ``open_own``
(``fixtures_core.files``) opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks
what it opened. A file it writes into in place (the lock, evidence) must also
have no second hard link: its other name may be outside the state folder. A
planted entry is refused with one line naming it (``StateError``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from fixtures_core.errors import StateError
from fixtures_core.files import STATE_FOLDER_RULE
from fixtures_core.files import kind as kind  # re-exported with open_own
from fixtures_core.files import open_own as open_own  # re-exported: the state folder's files open here


def check_folder(path: Path) -> None:
    """Raise StateError when ``path`` exists and is anything but a real folder (a symlink to one included)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(str(path), f"cannot be examined: {exc.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise StateError(str(path), f"{kind(mode)} where assay keeps a folder: {STATE_FOLDER_RULE}")


def is_real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a symlink to one (listings skip the others)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
