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
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

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


def repair_torn_tail(path: Path) -> bool:
    """Cut a last line that a crash or a full disk left without its newline (before appending to the
    file again, which would glue the next line onto it); True when something was cut."""
    with open(path, "rb+") as handle:
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
        # Evidence lives in the state folder, where a symlink or FIFO may have been planted: a link is never
        # followed, and a FIFO without a reader fails at once (ENXIO) instead of hanging the run.
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        try:
            written = os.write(descriptor, data)
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise _naming(exc, path) from None
    if written != len(data):
        raise OSError(errno.ENOSPC, f"wrote {written} of {len(data)} bytes of an evidence line (is the disk full?)",
                      str(path))  # fmt: skip
