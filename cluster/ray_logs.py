"""Where Ray's own messages go while a job runs in this process: the terminal, or a file.

Ray writes two kinds of messages in the driver's process that a user of ``mccfr train`` cannot act
on: records of its Python logger ``ray`` (``ray.init``'s token-authentication warning), and lines
of level ERROR and above that its C++ core worker writes straight to the process's standard
error, file descriptor 2 (``core_worker.cc: Actor ... has constructor arguments in the object
store and max_restarts > 0``, once per leader the job creates). Neither ``ray.init``'s
``logging_level`` nor ``log_to_driver`` keeps the second kind off the terminal, and
``RAY_BACKEND_LOG_LEVEL`` would also silence them in Ray's own log files (and in every process
the local cluster starts).

:class:`RayLogFile` sends both to a file while it is open: the ``ray`` logger's handlers are
swapped for one writing to the file, and descriptor 2 is pointed at the file, with
``sys.stderr`` moved to a copy of the old descriptor 2 first, so that everything Python writes to
``sys.stderr`` (progress, warnings, tracebacks) still reaches the terminal. :meth:`RayLogFile.close`
puts both back. Ray's own log files (``<session>/logs``, whose path :class:`cluster.job.RayJob`
writes into the file) are untouched.
"""

from __future__ import annotations

import io
import logging
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["RAY_LOGGER", "RayLogFile"]

RAY_LOGGER = "ray"


class RayLogFile:
    """While open, Ray's messages in this process go to ``path`` (appended), not the terminal.

    Args:
        path: the file (created if missing; its directory must exist).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._file: Any = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        logger = logging.getLogger(RAY_LOGGER)
        self._handlers = list(logger.handlers)
        self._propagate = logger.propagate
        self._handler = logging.FileHandler(
            self.path, mode="a", encoding="utf-8"
        )  # appends, as the descriptor
        self._handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.handlers = [self._handler]
        logger.propagate = False
        self._saved_fd: int | None = None
        self._stderr: Any = None
        self._old_stderr: Any = None
        try:
            sys.stderr.flush()
        except (AttributeError, ValueError, OSError):
            pass
        try:
            self._saved_fd = os.dup(2)
        except OSError:  # no descriptor 2 at all: nothing reaches a terminal anyway
            return
        if _fileno(sys.stderr) == 2:  # Python's stderr is descriptor 2: keep it on the terminal
            self._old_stderr = sys.stderr
            self._stderr = open(  # noqa: SIM115 - closed by close()
                self._saved_fd,
                "w",
                buffering=1,
                encoding=sys.stderr.encoding,
                errors=sys.stderr.errors,
                closefd=False,
            )
            sys.stderr = self._stderr
        os.dup2(self._file.fileno(), 2)

    def write(self, line: str) -> None:
        """Append one line of our own (e.g. where Ray's session logs are)."""
        self._file.write((line.rstrip("\n") + "\n").encode())

    def close(self) -> None:
        """Put the terminal back (descriptor 2, ``sys.stderr``, the ``ray`` logger's handlers)."""
        if self._file is None:
            return
        if self._saved_fd is not None:
            if self._stderr is not None:
                self._stderr.flush()
            os.dup2(self._saved_fd, 2)
            if self._stderr is not None and sys.stderr is self._stderr:
                sys.stderr = self._old_stderr
            if self._stderr is not None:
                self._stderr.close()
            os.close(self._saved_fd)
            self._saved_fd = None
        logger = logging.getLogger(RAY_LOGGER)
        if logger.handlers == [self._handler]:
            logger.handlers = self._handlers
            logger.propagate = self._propagate
        self._handler.close()
        self._file.close()
        self._file = None

    def __enter__(self) -> RayLogFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _fileno(stream: Any) -> int | None:
    try:
        return stream.fileno()
    except (AttributeError, ValueError, OSError, io.UnsupportedOperation):
        return None
