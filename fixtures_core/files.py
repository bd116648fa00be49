"""Files a run writes: safe names for them, and writes a crash never leaves half done.

Every room writes evidence (attempts and judgments in ``execution``, run
documents and evidence lines in ``records``, report files in ``reports``), so
these live in the vocabulary, where each of them can import them.

- ``slug``: a file name from a row, case, arm or baseline name; bounded
  (``MAX_SLUG``), and two different names never share one: a name that had
  to be changed or cut carries a digest of the original.
- ``write_atomic`` and its text and JSON forms: readers see the old file or
  the new one, never a part of one.
- ``append_json_line``: one JSON line appended with a single write.
- ``open_own``: the one way assay opens a file of its own in place (to append, lock or cut it), in a
  state folder where anything may have been planted: never through a symlink, never a FIFO or a
  device, never a file with a second hard link (the other name may be outside the state folder,
  and a write through either name changes both). Atomic writes need no such care: they replace the
  name with a new file, and whatever else the old file was linked to keeps its old bytes.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from fixtures_core.errors import StateError

MAX_SLUG = 80  # characters of a name kept in a file name (file names may hold 255 bytes)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(text: str) -> str:
    """A file-name-safe, bounded form of a name; two different names never give the same slug."""
    safe = _UNSAFE.sub("_", text).strip("_.")
    if safe == text and len(safe) <= MAX_SLUG:
        return safe
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe[:MAX_SLUG]}-{digest}" if safe else digest


def json_text(document: object) -> str:
    """The JSON files of a run as people read them: indented, one value per line, a final newline."""
    return json.dumps(document, indent=1, default=str) + "\n"


def write_json_atomic(path: Path, document: object, *, own: bool = False) -> None:
    """Write ``json_text(document)`` atomically (see ``write_atomic``)."""
    write_text_atomic(path, json_text(document), own=own)


def write_text_atomic(path: Path, text: str, *, own: bool = False) -> None:
    """Write a UTF-8 text file atomically (see ``write_atomic``)."""
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), own=own)


def write_atomic(path: Path, write: Callable[[Path], object], *, own: bool = False) -> None:
    """Call ``write`` on a temporary file beside ``path``, then move it into place in one step.

    Only a regular file (or a new one) is replaced: a device, FIFO or terminal the user named
    (``--json /dev/stdout``) is written through, never renamed over. One of assay's ``own`` files
    (in the state folder, where anything else was planted) is always replaced, never written through.
    """
    if not own and path.exists() and not path.is_file():
        write(path)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")  # two writers never share one
    try:
        write(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        raise _naming(exc, path) from None
    finally:
        tmp.unlink(missing_ok=True)


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` naming the file it is about (a full disk's "No space left on device" names none)."""
    if exc.filename is not None and exc.errno is not None:
        return exc
    return OSError(exc.errno or 0, exc.strerror or str(exc), str(path))


STATE_FOLDER_RULE = "assay never follows links or opens special files in its state folder; remove it"


def open_own(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open one of assay's own files without following a symlink or blocking on a FIFO; a descriptor of a
    regular file with no other hard link, or StateError for anything else (OSError for the usual
    failures: missing, no room). What was opened is checked, not what a name pointed to before."""
    try:
        descriptor = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateError(str(path), f"a symlink where assay keeps a file: {STATE_FOLDER_RULE}") from None
        if exc.errno == errno.ENXIO:  # a FIFO opened for writing with no reader
            raise StateError(str(path), f"a FIFO where assay keeps a file: {STATE_FOLDER_RULE}") from None
        raise
    refusal = own_file_refusal(os.fstat(descriptor))
    if refusal is not None:
        os.close(descriptor)
        raise StateError(str(path), f"{refusal}: {STATE_FOLDER_RULE}")
    os.set_blocking(descriptor, True)
    return descriptor


def own_file_refusal(info: os.stat_result) -> str | None:
    """Why a file found where assay keeps one of its own must not be opened, or None when it may."""
    if not stat.S_ISREG(info.st_mode):
        return f"{kind(info.st_mode)} where assay keeps a file"
    if info.st_nlink > 1:
        return f"a file with {info.st_nlink} hard links (one may be outside the state folder) where assay keeps a file"
    return None


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


def repair_torn_tail(path: Path) -> bool:
    """Cut a last line that a crash or a full disk left without its newline (before appending to the
    file again, which would glue the next line onto it); True when something was cut."""
    with os.fdopen(open_own(path, os.O_RDWR), "rb+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return False
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return False
        start = max(0, size - 1024 * 1024)
        while True:
            handle.seek(start)
            chunk = handle.read(size - start)
            cut = chunk.rfind(b"\n")
            if cut >= 0:
                handle.truncate(start + cut + 1)
                return True
            if start == 0:
                handle.truncate(0)
                return True
            start = max(0, start - 1024 * 1024)


def append_json_line(path: Path, document: object) -> None:
    """Append one compact JSON line with a single write: a crash leaves whole lines and at most
    one torn last line, which readers skip. A short write (a full disk) raises OSError."""
    data = (json.dumps(document, separators=(",", ":"), default=str) + "\n").encode("utf-8")
    try:
        # Evidence lives in the state folder, where anything may have been planted (``open_own``).
        descriptor = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            written = os.write(descriptor, data)
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise _naming(exc, path) from None
    if written != len(data):
        raise OSError(errno.ENOSPC, f"wrote {written} of {len(data)} bytes of an evidence line (is the disk full?)",
                      str(path))  # fmt: skip
