"""The assay error hierarchy.

    AssayError                 anything assay reports to the user (exit 2)
    ├── FixtureError           a fixture file is wrong: prints ``path:line: field: message``
    ├── CelError               an expression does not compile; carries the expression
    ├── RunFileError           a saved run (or its evidence, its start record) cannot be found or read
    │   └── BaselineError      ... or cannot serve as a baseline (the gate fails closed)
    ├── UsageError             a command-line option is out of range
    └── StateError             a planted file in the state folder (a symlink, a FIFO)

Every error renders as one line (``str(error)``) that names where the problem
is and, where it can, what to do next.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence


class AssayError(Exception):
    """Base of every error assay reports to the user; the CLI exits 2 on it."""


class FixtureError(AssayError):
    """A configuration error in a fixture file, located by path and line.

    ``line`` is None for an error of the whole file (it cannot be read, it does
    not exist): it renders ``path: message``, never a made-up ``path:0:``.
    """

    def __init__(self, path: str, line: int | None, message: str, field: str | None = None) -> None:
        self.path = path
        self.line = line
        self.field = field
        self.message = message
        where = path if line is None else f"{path}:{line}"
        text = f"{field}: {message}" if field else message
        super().__init__(f"{where}: {text}")


class CelError(AssayError):
    """A CEL expression that does not compile."""

    def __init__(self, expression: str, message: str) -> None:
        self.expression = expression
        self.message = message
        super().__init__(message)


class RunFileError(AssayError):
    """A saved run that cannot be found or read, or a record of one (its evidence, its start record).
    Prints ``run REFERENCE: reason``, or ``path: reason`` for a record (``role`` None)."""

    def __init__(self, path: str, reason: str, role: str | None = "run") -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{role} {path}: {reason}" if role else f"{path}: {reason}")


class BaselineError(RunFileError):
    """A saved run that cannot be used as a baseline (the gate fails closed)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason, role="baseline")


@contextlib.contextmanager
def as_baseline() -> Iterator[None]:
    """A saved run that cannot be found or read, told as the baseline it was given as."""
    try:
        yield
    except BaselineError:
        raise
    except RunFileError as exc:
        raise BaselineError(exc.path, exc.reason) from None


class UsageError(AssayError):
    """A command-line option with a value outside its allowed range."""


class ValidationFailed(AssayError):
    """A matrix with one or more configuration errors; nothing was run.

    ``errors``: each one line (a FixtureError, or the text a broken row carries).
    """

    def __init__(self, errors: Sequence[AssayError | str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in errors))


class StateError(AssayError):
    """A file or folder in the state folder that assay did not make (a symlink, a FIFO, a device where
    assay keeps a file or folder): refused, never followed or opened. Prints ``path: reason``."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")
