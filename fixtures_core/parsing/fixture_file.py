"""Reading a fixture file: a regular file of bounded size, refused before it is read otherwise."""

from __future__ import annotations

from pathlib import Path

from fixtures_core.errors import FixtureError
from fixtures_core.limits import MAX_FIXTURE_BYTES, LimitExceeded, read_regular_file


def read_fixture(path: Path, display: str) -> bytes:
    """The file's bytes; FixtureError for a FIFO, a device, a folder, a file over the size limit or an I/O error."""
    try:
        return read_regular_file(path, MAX_FIXTURE_BYTES, "fixture file")
    except LimitExceeded as exc:
        raise FixtureError(display, None, str(exc)) from None
    except OSError as exc:
        raise FixtureError(display, None, f"cannot read fixture file: {exc.strerror or exc}") from None
