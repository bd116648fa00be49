"""The API secret of a Prefect home: with it, the home's server requires Prefect's own API authentication.

A home that holds the secret file (``assay-api-auth``, mode 0600: its owner's only) gets a server started
with ``PREFECT_SERVER_API_AUTH_STRING`` set to it, and every client assay starts for that server (a run,
``deployments/nightly.py``, the idle stop, the lease guard) sends it (``PREFECT_API_AUTH_STRING``, HTTP
Basic). ``deployments/postgres_server.py`` makes one at the team server's first start; ``assay server start
--auth`` makes one for a home's local server. The Prefect UI then asks for a password: the file's content.

Standard library only: the idle stop and the supervisor read it too.
"""

from __future__ import annotations

import base64
import contextlib
import os
import secrets
import stat
from pathlib import Path

from fixtures_core.errors import AssayError

SECRET_FILE = "assay-api-auth"
USER = "assay"  # Prefect compares the whole string; a user part makes it read like the "user:password" it asks for


class CredentialsError(AssayError):
    """The home's secret file cannot be used (unreadable, readable by others, empty); says what to do."""


def secret_path(home: Path) -> Path:
    return home / SECRET_FILE


def read_secret(home: Path) -> str | None:
    """The home's API secret, or None when it has none (its server runs without API authentication)."""
    path = secret_path(home)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CredentialsError(f"{path}: cannot read the Prefect API secret ({exc.strerror})") from None
    with os.fdopen(descriptor, encoding="utf-8", errors="replace") as opened:
        found = os.fstat(opened.fileno())
        if not stat.S_ISREG(found.st_mode):
            raise CredentialsError(f"{path}: the Prefect API secret is not a regular file")
        if found.st_mode & 0o077:
            raise CredentialsError(
                f"{path}: the Prefect API secret is readable by others (mode {stat.S_IMODE(found.st_mode):04o}): "
                f"`chmod 600 {path}` (and remove it for a new secret if others may have read it)"
            )
        value = opened.read(4096).strip()
    if not value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise CredentialsError(f"{path}: the Prefect API secret is empty or holds control characters: remove it")
    return value


def create_secret(home: Path) -> str:
    """The home's API secret, made (random, 256 bits, mode 0600) when it has none yet.

    Made beside the file and linked into place: two first starts at the same moment agree on one secret.
    """
    found = read_secret(home)
    if found is not None:
        return found
    home.mkdir(parents=True, exist_ok=True)
    value = f"{USER}:{secrets.token_urlsafe(32)}"
    draft = home / f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as written:
            os.fchmod(written.fileno(), 0o600)  # whatever the umask
            written.write(value + "\n")
            written.flush()
            os.fsync(written.fileno())
        with contextlib.suppress(FileExistsError):  # another start made it first: theirs is the secret
            os.link(draft, secret_path(home))
    finally:
        draft.unlink(missing_ok=True)
    made = read_secret(home)
    assert made is not None
    return made


def authorization(secret: str) -> str:
    """The HTTP ``Authorization`` header value Prefect's server expects for ``secret``."""
    return "Basic " + base64.b64encode(secret.encode()).decode()
