"""The execution environment one Lambda function gets inside the in-process harness.

On Lambda each function runs in its own sandbox: a read-only file system except its own
`/tmp`, the environment variables of its configuration plus the runtime's reserved ones
(its role's credentials among them) and nothing else, and a process of its own, so module
state such as boto3's default session belongs to that function. The local stack runs the
handlers as threads of one process, so a `Sandbox` gives each function the same things,
per thread, while its handler runs (`Sandbox.running()`):

- `os.environ` is the function's own mapping (the process keeps its own outside handlers);
- `tempfile` hands out paths in the function's own temporary directory, and an audit hook
  refuses every write outside it with EROFS, as Lambda's file system would (tests run as
  root here, so `chmod` would prove nothing);
- `boto3`'s default session is the function's: clients sign with its role's credentials;
- `zoneinfo` finds IANA zones only in the `tzdata` package of the function's layers, never
  in the host's /usr/share/zoneinfo. The Lambda runtime's system zone database is not
  something to rely on: the AL2023-based runtimes (python3.12's among them) shipped
  without one (aws/aws-lambda-dotnet#1620, Nov 2023: "tzdb is not installed"; rolled out
  later, amazonlinux/amazon-linux-2023#615, Jan 2024), and a function keeps the runtime
  version it was deployed on when its runtime updates are pinned. So the layer carries
  `tzdata` (requirements-lambda.txt) and the sandbox proves that is enough.

Known limits, each looser than Lambda: threads a handler starts itself do not inherit its
sandbox (the standard library does not copy context into new threads); concurrent
invocations of one function share its sandbox (Lambda would give each its own execution
environment; our handlers write to the environment only NESSIEDIR, idempotently); and
modules are imported once per process, not once per function (our functions share only
`ingestion`, whose client cache is keyed per function); and zoneinfo caches the zones the
process loaded (outside any sandbox too) process-wide, so a zone the harness already
loaded is found inside a sandbox whatever its layers carry (tests clear that key first).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import functools
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

_current: contextvars.ContextVar[Sandbox | None] = contextvars.ContextVar(
    "lambda_sandbox", default=None
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
# Audit events that change the file system, and which of their arguments are paths.
_PATH_EVENTS = {
    "os.mkdir": (0,),
    "os.remove": (0,),
    "os.rmdir": (0,),
    "os.rename": (0, 1),
    "os.replace": (0, 1),
    "os.truncate": (0,),
    "os.symlink": (1,),
    "os.link": (1,),
    "os.chmod": (0,),
    "os.chown": (0,),
    "os.utime": (0,),
    "shutil.rmtree": (0,),
}
_install_lock = threading.Lock()
_installed = False


@dataclass
class Sandbox:
    """One function's environment variables, temporary directory and boto3 session."""

    function_name: str
    environment: dict[str, str]
    tmp: str = ""
    # The `python/` directories of the function's layers (Lambda's /opt/python): where its
    # zone data (the `tzdata` package) is looked up.
    layer_paths: tuple[str, ...] = ()
    _session: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if not self.tmp:
            self.tmp = tempfile.mkdtemp(prefix=f"lambda-{self.function_name}-")
        self.tmp = os.path.realpath(self.tmp)
        self.environment = dict(self.environment)
        self.environment.setdefault("TMPDIR", self.tmp)

    @contextlib.contextmanager
    def running(self) -> Iterator[Sandbox]:
        """While the block runs on this thread, it runs inside this sandbox."""
        install()
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def boto3_session(self) -> Any:
        """The function's default boto3 session, created inside the sandbox (so from its
        environment: region and credentials), once, like a Lambda process's."""
        with self._lock:
            if self._session is None:
                import boto3

                with self.running():
                    self._session = boto3.session.Session()
                    # One model loader for every sandbox: parsing service models is the slow
                    # part of a cold session and they are the same for all functions.
                    share_service_models(self._session)
            return self._session

    def open_zone(self, key: str) -> BinaryIO:
        """The TZif file of IANA zone `key` from the `tzdata` package of the function's
        layers, as zoneinfo falls back to it where the system has no zone database."""
        from zoneinfo import ZoneInfoNotFoundError

        for path in self.layer_paths:
            candidate = os.path.join(path, "tzdata", "zoneinfo", *key.split("/"))
            if os.path.isfile(candidate):
                return open(candidate, "rb")
        raise ZoneInfoNotFoundError(f"No time zone found with key {key}")

    def remove(self) -> None:
        """Delete the temporary directory (when the local stack stops)."""
        shutil.rmtree(self.tmp, ignore_errors=True)


def current_sandbox() -> Sandbox | None:
    """The sandbox of the handler running on this thread, if any."""
    return _current.get()


class _SandboxEnviron(MutableMapping[str, str]):
    """`os.environ`: the running sandbox's variables, or the process's outside handlers."""

    def __init__(self, process: MutableMapping[str, str]) -> None:
        self.process = process

    def _target(self) -> MutableMapping[str, str]:
        sandbox = _current.get()
        return self.process if sandbox is None else sandbox.environment

    def __getitem__(self, key: str) -> str:
        return self._target()[key]

    def __setitem__(self, key: str, value: str) -> None:
        self._target()[key] = value

    def __delitem__(self, key: str) -> None:
        del self._target()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._target()))

    def __len__(self) -> int:
        return len(self._target())

    def copy(self) -> dict[str, str]:
        return dict(self._target())

    def __repr__(self) -> str:
        return f"environ({dict(self._target())!r})"


@functools.cache
def _shared_loader() -> Any:
    import botocore.loaders

    return botocore.loaders.create_loader()


def share_service_models(session: Any) -> None:
    """Let a boto3 session read service models through the process's one loader, which
    parses each model file once (a new session's own loader parses them all again)."""
    session._session.register_component("data_loader", _shared_loader())


def default_session_sharing_models() -> None:
    """Create boto3's default session, when there is none, on the shared model loader.

    moto's `mock_aws().start()` drops the default session, so each local stack's clients
    would otherwise come from a session that parses every service model again: about
    half the CPU of a stack start."""
    import boto3

    if boto3.DEFAULT_SESSION is None:
        boto3.setup_default_session()
        share_service_models(boto3.DEFAULT_SESSION)


def _outside(path: Any, root: str) -> bool:
    if path is None or isinstance(path, int):  # a file descriptor: opened earlier
        return False
    real = os.path.realpath(os.fsdecode(path))
    return not (real == root or real.startswith(root + os.sep))


def _refuse(path: Any) -> None:
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))


def _hook(event: str, args: tuple[Any, ...]) -> None:
    sandbox = _current.get()
    if sandbox is None:
        return
    root = sandbox.tmp
    if event == "open":
        path, mode, flags = [*args, None, None, 0][:3]
        writing = (isinstance(mode, str) and any(ch in mode for ch in "wax+")) or bool(
            (flags or 0) & _WRITE_FLAGS
        )
        if writing and _outside(path, root):
            _refuse(path)
    elif event in _PATH_EVENTS:
        for index in _PATH_EVENTS[event]:
            if index < len(args) and _outside(args[index], root):
                _refuse(args[index])


def install() -> None:
    """Put the per-sandbox `os.environ`, `tempfile` and boto3 default session in place, and
    add the file-system audit hook (once per process: audit hooks cannot be removed).
    Outside a running sandbox each behaves exactly as before."""
    global _installed
    if _installed:  # every handler call enters here: no lock once it is done
        return
    with _install_lock:
        if _installed:
            return
        sys.addaudithook(_hook)
        if not isinstance(os.environ, _SandboxEnviron):
            # Replaced, not cleared: outside a sandbox it passes through to the process's.
            os.environ = _SandboxEnviron(os.environ)  # type: ignore[assignment]  # noqa: B003
        _patch_tempfile()
        _patch_boto3()
        _patch_zoneinfo()
        _installed = True


def _patch_tempfile() -> None:
    process_gettempdir, process_gettempdirb = tempfile.gettempdir, tempfile.gettempdirb

    def gettempdir() -> str:
        sandbox = _current.get()
        return process_gettempdir() if sandbox is None else sandbox.tmp

    def gettempdirb() -> bytes:
        sandbox = _current.get()
        return process_gettempdirb() if sandbox is None else os.fsencode(sandbox.tmp)

    tempfile.gettempdir, tempfile.gettempdirb = gettempdir, gettempdirb


def _patch_boto3() -> None:
    import boto3

    process_default = boto3._get_default_session

    def default_session() -> Any:
        sandbox = _current.get()
        return process_default() if sandbox is None else sandbox.boto3_session()

    boto3._get_default_session = default_session


class _SandboxTzPath(tuple):  # type: ignore[type-arg]
    """zoneinfo's search path for system zone files: none inside a sandbox (see the module's
    docstring), the process's outside."""

    def __iter__(self) -> Iterator[str]:
        return iter(()) if _current.get() is not None else super().__iter__()


def _patch_zoneinfo() -> None:
    # zoneinfo (its C implementation too) reads `_tzpath.TZPATH` and calls
    # `_common.load_tzdata` by name on every zone it has not cached.
    import zoneinfo._common
    import zoneinfo._tzpath

    if not isinstance(zoneinfo._tzpath.TZPATH, _SandboxTzPath):
        zoneinfo._tzpath.TZPATH = _SandboxTzPath(zoneinfo._tzpath.TZPATH)
    process_load_tzdata = zoneinfo._common.load_tzdata

    def load_tzdata(key: str) -> BinaryIO:
        sandbox = _current.get()
        return process_load_tzdata(key) if sandbox is None else sandbox.open_zone(key)

    zoneinfo._common.load_tzdata = load_tzdata


def reserved_environment(
    *,
    function_name: str,
    handler: str,
    memory_mb: int,
    region: str,
    credentials: Mapping[str, str],
    runtime: str,
) -> dict[str, str]:
    """The variables the Lambda runtime sets for every function (its role's credentials
    among them), as documented under "Defined runtime environment variables"."""
    return {
        "AWS_REGION": region,
        "AWS_DEFAULT_REGION": region,
        "AWS_LAMBDA_FUNCTION_NAME": function_name,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(memory_mb),
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function_name}",
        "AWS_LAMBDA_LOG_STREAM_NAME": "local",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{runtime}",
        "_HANDLER": handler,
        "TZ": ":UTC",
        "LANG": "en_US.UTF-8",
        "PATH": "/var/lang/bin:/usr/local/bin:/usr/bin/:/bin",
        **credentials,
    }
