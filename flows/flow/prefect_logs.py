"""What Prefect logs, kept useful: the run's own lines in the UI, Prefect's internals in a file.

Two kinds of noise otherwise reach people:

* Prefect's task engine writes two lines per task run besides assay's own
  (``Finished in state Completed('PASS')`` for every sample, and ``Task run
  failed with state: ... NoneType: None`` for a failing one). assay already
  logs one line per row and one per failing sample, with the reason, so the
  engine's lines go (``EngineChatter``): a passing sample logs nothing.
* A deployment's flow run process turns a Failed flow run into an exception
  when the flow returns, and logs it as "Engine execution exited with
  unexpected exception" with a traceback (``VerdictExit`` drops that record: a
  FAIL verdict is an answer, already logged in one line, not a crash).
* Prefect's own warnings and errors (its client retrying, its events and
  log workers, its lease renewals) are about Prefect, not about the run. A
  run keeps them in ``prefect.log`` in its folder (``InternalLog``) and, when
  there were any, says so in one line on stderr.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import TracebackType

from prefect.exceptions import FailedRun

from flows.flow.states import Carried

# The loggers of a flow run's and task runs' own lines (assay's, through get_run_logger, and the engine's).
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
_CHATTER = ("Finished in state ", "Task run failed with ")
# "prefect._internal" does not propagate to "prefect" (Prefect's logging.yml): it needs the handler too.
_INTERNAL_ROOTS = ("prefect", "prefect._internal")


class EngineChatter(logging.Filter):
    """Drops the task engine's per-task lines; assay's own row and sample lines say the same, once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "prefect.task_runs" and str(record.msg).startswith(_CHATTER))


def quiet_task_runs() -> None:
    """Install ``EngineChatter`` on the task runs' logger (once; after Prefect configured its logging)."""
    logger = logging.getLogger("prefect.task_runs")
    if not any(isinstance(f, EngineChatter) for f in logger.filters):
        logger.addFilter(EngineChatter())


class VerdictExit(logging.Filter):
    """Drops the engine's traceback for a flow run that ended Failed by returning its verdict's state."""

    def filter(self, record: logging.LogRecord) -> bool:
        raised = record.exc_info[1] if record.exc_info else None
        return not isinstance(raised, (Carried, FailedRun))


def quiet_verdict_exits() -> None:
    """Install ``VerdictExit`` (once) on the loggers that report the engine's exit: the flow run's
    ("Engine execution exited with unexpected exception") and the engine process's own."""
    for name in ("prefect.flow_runs", "prefect.engine"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, VerdictExit) for f in logger.filters):
            logger.addFilter(VerdictExit())


class _Internal(logging.Filter):
    """Prefect's own records: any ``prefect.*`` logger but a run's."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(RUN_LOGGERS)


class InternalLog:
    """For as long as it is open, Prefect's internal warnings and errors go to ``path`` (created only
    when there is one) and are counted; ``note`` is the one line to show for them, if any."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.count = 0
        self._handler = _CountingHandler(self, path)
        self._handler.setLevel(logging.WARNING)
        self._handler.addFilter(_Internal())
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def __enter__(self) -> InternalLog:
        for name in _INTERNAL_ROOTS:
            logging.getLogger(name).addHandler(self._handler)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        for name in _INTERNAL_ROOTS:
            logging.getLogger(name).removeHandler(self._handler)
        self._handler.close()

    def note(self) -> str | None:
        """``assay: Prefect logged 3 warnings or errors of its own: see PATH``, or None."""
        if not self.count:
            return None
        noun = "warning or error" if self.count == 1 else "warnings or errors"
        return f"assay: Prefect logged {self.count} {noun} of its own (not the run's): see {self.path}"


class _CountingHandler(logging.FileHandler):
    def __init__(self, log: InternalLog, path: Path) -> None:
        super().__init__(path, delay=True, encoding="utf-8")  # no file unless there is something to keep
        self._log = log

    def emit(self, record: logging.LogRecord) -> None:
        self._log.count += 1
        try:
            Path(self.baseFilename).parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            return
        super().emit(record)
