"""The state folder is untrusted input: a shared runner or a checked-out repository may plant files in it.

assay never follows a symlink, and never opens a FIFO or a device, where it
keeps its own files and folders (``runs/``, a run's folder, its ``evidence/``,
``running.lock``): ``check_folder`` looks with ``lstat``, and ``open_own``
opens with ``O_NOFOLLOW | O_NONBLOCK`` and checks the type of what it opened.
A planted entry is refused with one line naming it (``StateError``).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from fixtures_core.errors import StateError

_WHY = "assay never follows links or opens special files in its state folder; remove it"


def check_folder(path: Path) -> None:
    """Raise StateError when ``path`` exists and is anything but a real folder (a symlink to one included)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise StateError(str(path), f"cannot be examined: {exc.strerror}") from None
    if not stat.S_ISDIR(mode):
        raise StateError(str(path), f"{kind(mode)} where assay keeps a folder: {_WHY}")


def is_real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a symlink to one (listings skip the others)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open one of assay's own files without following a symlink or blocking on a FIFO; a descriptor of a
    regular file, or StateError for anything else (OSError for the usual failures: missing, no room)."""
    try:
        descriptor = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateError(str(path), f"a symlink where assay keeps a file: {_WHY}") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise StateError(str(path), f"a FIFO where assay keeps a file: {_WHY}") from None
        raise
    file_mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(file_mode):
        os.close(descriptor)
        raise StateError(str(path), f"{kind(file_mode)} where assay keeps a file: {_WHY}")
    os.set_blocking(descriptor, True)
    return descriptor


def kind(mode: int) -> str:
    """What a file mode is, for a message ("a symlink", "a FIFO", ...)."""
    kinds = {
        stat.S_ISLNK: "a symlink",
        stat.S_ISFIFO: "a FIFO",
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISSOCK: "a socket",
        stat.S_ISDIR: "a folder",
        stat.S_ISREG: "a file",
    }
    return next((name for test, name in kinds.items() if test(mode)), "a special file")
