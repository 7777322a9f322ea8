"""Lambda's filesystem inside the in-process harness: only the temporary directory is writable.

On Lambda the function code, the home directory and everything else is a read-only
file system; only `/tmp` is writable, and a write elsewhere fails with EROFS. Our
handlers run as threads of one process (as root, here), so `chmod` proves nothing:
an audit hook refuses, on the thread that is running a handler, every write outside
the system temporary directory, the way Lambda's file system would.

Known limit: Lambda gives each function its own `/tmp`; here functions share the
process's temporary directory (their environment is process-wide too).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

_writable_root: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "lambda_writable_root", default=None)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Audit events that change the file system, and which of their arguments are paths.
_PATH_EVENTS = {
    "os.mkdir": (0,), "os.remove": (0,), "os.rmdir": (0,), "os.rename": (0, 1),
    "os.replace": (0, 1), "os.truncate": (0,), "os.symlink": (1,), "os.link": (1,),
    "os.chmod": (0,), "os.chown": (0,), "os.utime": (0,), "shutil.rmtree": (0,),
}
_install_lock = threading.Lock()
_installed = False


def _outside(path: Any, root: str) -> bool:
    if path is None or isinstance(path, int):  # a file descriptor: opened earlier
        return False
    real = os.path.realpath(os.fsdecode(path))
    return not (real == root or real.startswith(root + os.sep))


def _refuse(path: Any) -> None:
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))


def _hook(event: str, args: tuple[Any, ...]) -> None:
    root = _writable_root.get()
    if root is None:
        return
    if event == "open":
        path, mode, flags = [*args, None, None, 0][:3]
        writing = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or bool(
            (flags or 0) & _WRITE_FLAGS)
        if writing and _outside(path, root):
            _refuse(path)
    elif event in _PATH_EVENTS:
        for index in _PATH_EVENTS[event]:
            if index < len(args) and _outside(args[index], root):
                _refuse(args[index])


def install() -> None:
    """Add the audit hook (once per process: audit hooks cannot be removed)."""
    global _installed
    with _install_lock:
        if not _installed:
            sys.addaudithook(_hook)
            _installed = True


@contextlib.contextmanager
def read_only_except_tmp() -> Iterator[str]:
    """While the block runs on this thread, writes outside the temporary directory fail
    with EROFS, as on Lambda. Yields the writable root."""
    install()
    root = os.path.realpath(tempfile.gettempdir())
    token = _writable_root.set(root)
    try:
        yield root
    finally:
        _writable_root.reset(token)
