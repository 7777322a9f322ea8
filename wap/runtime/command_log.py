"""Where a `wap` command's diagnostics go: a log file per command under the home.

A command's stdout carries its progress and results only. Everything else the local
runtime produces goes to `<home>/logs/<timestamp>-<command>.log` (and, with `--verbose`,
to stderr as well):

- the in-process Lambdas' Powertools JSON logs: on AWS they go to the function's stdout
  (CloudWatch); locally the dispatcher points their handlers at this log
  (`StackSettings.lambda_log_stream`), the process's stdout stays the command's;
- the JVM's own output (log4j, Hadoop's `NativeCodeLoader` warning, Spark's start-up
  lines): Spark is started with its stdout and stderr on this log (`jvm_output()`);
- Python logging (py4j, botocore, the Spark job's own loggers, the local stack) and
  Python warnings (`logging.captureWarnings`).

The file is created on the first line written to it, so a command that logs nothing
(`wap runs` on a quiet home) leaves no file and creates no home.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

LOGS_DIR = "logs"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Loggers that log every request at INFO: kept to warnings so the file stays readable.
_CHATTY = ("werkzeug", "urllib3", "botocore.credentials", "py4j", "responses")

_active: CommandLog | None = None


def active() -> CommandLog | None:
    """The log of the command running in this process, if one was installed."""
    return _active


class CommandLog:
    """A line-oriented, thread-safe text sink: the log file, plus stderr when `verbose`."""

    def __init__(
        self,
        logs_dir: Path,
        command: str,
        *,
        verbose: bool = False,
        echo: IO[str] | None = None,
        now: datetime | None = None,
    ) -> None:
        stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S")
        self.path = _free_path(logs_dir, stamp, command or "wap")
        self.verbose = verbose
        self._echo = echo if echo is not None else sys.stderr
        self._file: IO[str] | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._handler: logging.Handler | None = None
        self._saved_levels: dict[str, int] = {}
        self._captured_warnings = False
        self.announced = False  # its path was already shown (in an error line)

    # ---- a stream (logging.StreamHandler and Powertools write here) -----------------------

    @property
    def opened(self) -> bool:
        """Whether anything was written (the file exists)."""
        return self._file is not None

    def open(self) -> CommandLog:
        """Create the file now. Lines written from inside a Lambda sandbox cannot create it
        (its file system is read-only outside its /tmp, as on Lambda): the local stack
        opens it before any handler runs."""
        with self._lock:
            self._open()
        return self

    def _open(self) -> IO[str]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Append mode: the JVM writes to the same file through its own descriptor.
            self._file = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        return self._file

    def write(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            if self._closed:  # a late line (a thread still finishing): not lost
                return self._echo.write(text)
            self._open().write(text)
            if self.verbose:
                self._echo.write(text)
                self._echo.flush()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._file is not None and not self._closed:
                self._file.flush()

    def isatty(self) -> bool:
        return False

    # ---- the JVM ------------------------------------------------------------------------

    def jvm_output(self) -> int:
        """A file descriptor for a child process's stdout and stderr (Spark's JVM): the
        log file itself, or with `verbose` a pipe whose lines a thread copies to the file
        and to stderr. The caller does not close it."""
        with self._lock:
            if not self.verbose:
                self._open().flush()
                return self._open().fileno()
        read_end, write_end = os.pipe()
        threading.Thread(
            target=self._copy, args=(read_end,), name="wap-jvm-output", daemon=True
        ).start()
        self._jvm_pipe = write_end  # kept open: the child's copy is what matters
        return write_end

    def _copy(self, fd: int) -> None:
        with open(fd, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                self.write(line)

    # ---- this process's logging and warnings -----------------------------------------------

    def install(self) -> CommandLog:
        """Send Python logging and warnings here while the command runs."""
        global _active
        handler = logging.StreamHandler(self)
        handler.setFormatter(logging.Formatter(_FORMAT))
        handler.addFilter(_not_powertools)
        root = logging.getLogger()
        root.addHandler(handler)
        self._handler = handler
        self._saved_levels = {"": root.level}
        root.setLevel(logging.INFO)
        for name in _CHATTY:
            chatty = logging.getLogger(name)
            self._saved_levels[name] = chatty.level
            chatty.setLevel(logging.WARNING)
        logging.captureWarnings(True)
        self._captured_warnings = True
        _active = self
        return self

    def close(self) -> Path | None:
        """Stop logging here; the file's path, or None when nothing was written."""
        global _active
        if _active is self:
            _active = None
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
            self._handler = None
        for name, level in self._saved_levels.items():
            logging.getLogger(name or None).setLevel(level)
        self._saved_levels = {}
        if self._captured_warnings:
            logging.captureWarnings(False)
            self._captured_warnings = False
        with self._lock:
            self._closed = True
            if self._file is None:
                return None
            self._file.close()
        return self.path


def _not_powertools(record: logging.LogRecord) -> bool:
    """Powertools loggers write their JSON lines through their own handler (routed here by
    the local Lambda dispatcher); their records also propagate to the root: not twice."""
    logger = logging.Logger.manager.loggerDict.get(record.name)
    return getattr(logger, "powertools_handler", None) is None


def _free_path(logs_dir: Path, stamp: str, command: str) -> Path:
    """`<stamp>-<command>.log`, or `<stamp>-<n>-<command>.log` when that exists already."""
    path, n = logs_dir / f"{stamp}-{command}.log", 1
    while path.exists():
        n += 1
        path = logs_dir / f"{stamp}-{n}-{command}.log"
    return path
