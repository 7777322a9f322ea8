"""Run moto's Lambda invocations in-process with our real handlers instead of Docker.

The seam is `moto.awslambda.models.LambdaFunction._invoke_lambda(event) ->
(payload, errored, logs)`: everything above it (the Lambda API, Step Functions'
lambda tasks, S3 notifications) stays moto's own code. A raised exception is
returned the way the Python runtime reports it (`errorType` = class name), so
the state machine's Retry/Catch match on the same names as on AWS. Which
handler runs, and the memory, timeout and ARN its context reports, are each
function's configuration (the local stack registers them from the template).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from local.aws.lambda_sandbox import Sandbox

_log = logging.getLogger(__name__)

Handler = Callable[[Any, Any], Any]


@dataclass
class LambdaContext:
    """The attributes of the Lambda runtime's context object that handlers read."""

    function_name: str
    memory_limit_in_mb: int = 256
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    timeout_seconds: int = 300
    invoked_function_arn: str = ""
    log_group_name: str = ""
    log_stream_name: str = "local"
    function_version: str = "$LATEST"

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_seconds
        if not self.invoked_function_arn:
            self.invoked_function_arn = (
                f"arn:aws:lambda:us-east-1:123456789012:function:{self.function_name}"
            )
        self.log_group_name = self.log_group_name or f"/aws/lambda/{self.function_name}"

    def get_remaining_time_in_millis(self) -> int:
        return max(int((self._deadline - time.monotonic()) * 1000), 0)


def load_handler(spec: str) -> Handler:
    """The function a Lambda `Handler` setting names: `package.module.function`."""
    module, _, attribute = spec.rpartition(".")
    if not module:
        raise ValueError(f"Lambda handler {spec!r}: expected module.function")
    return getattr(importlib.import_module(module), attribute)


def error_payload(exc: BaseException) -> dict[str, Any]:
    """What the Python Lambda runtime returns for an unhandled exception."""
    return {
        "errorMessage": str(exc),
        # The runtime names an init failure `Runtime.ImportModuleError`.
        "errorType": (
            "Runtime.ImportModuleError"
            if isinstance(exc, ImportModuleError)
            else type(exc).__name__
        ),
        "requestId": str(uuid.uuid4()),
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


class ImportModuleError(Exception):
    """What the Python runtime reports when the handler's module does not import."""


def _failing_import(spec: str, exc: Exception) -> Handler:
    def handler(event: Any, context: Any) -> Any:
        raise ImportModuleError(
            f"Unable to import module '{spec.rpartition('.')[0]}': {type(exc).__name__}: {exc}"
        )

    return handler


@dataclass
class Invocation:
    """One recorded invocation (for tests and the CLI)."""

    function_name: str
    event: Any
    result: Any = None
    error: dict[str, Any] | None = None


def _point(handler: logging.StreamHandler, stream: Any) -> None:
    """`handler.setStream(stream)` without flushing the old stream first: that may be the
    stdout of an earlier command in this process (the tests run many), closed by now."""
    with handler.lock or contextlib.nullcontext():
        handler.stream = stream


class LambdaDispatcher:
    """Registry of in-process handlers plus the moto patch that calls them."""

    def __init__(
        self,
        handlers: dict[str, str | Handler] | None = None,
        *,
        async_retries: int = 2,
        async_retry_delay: float = 0.5,
        async_workers: int = 4,
        log_stream: Any = None,
    ) -> None:
        self._handlers: dict[str, Handler] = {}
        # The functions' stdout: None is the process's `sys.stdout` as each call finds it.
        self.log_stream = log_stream
        self._log_streams: dict[logging.StreamHandler, Any] = {}  # handler -> its own stream
        self._contexts: dict[str, dict[str, Any]] = {}
        self.sandboxes: dict[str, Sandbox] = {}
        self.import_errors: dict[str, str] = {}  # function -> why its handler did not import
        for name, target in (handlers or {}).items():
            self.register(name, target)
        self.invocations: list[Invocation] = []
        self._lock = threading.Lock()
        self._original: Any = None
        self._async_retries = async_retries
        self._async_retry_delay = async_retry_delay
        self._pool = ThreadPoolExecutor(
            max_workers=async_workers, thread_name_prefix="lambda-async"
        )
        self._pending: set[Future] = set()
        # Tests wrap a handler to inject faults: name -> wrapper(handler) -> handler.
        self.interceptors: dict[str, Callable[[Handler], Handler]] = {}

    def register(
        self, name: str, target: str | Handler, *, sandbox: Sandbox | None = None, **context: Any
    ) -> None:
        """Run `target` (a Lambda `Handler` setting or a callable) for function `name`, inside
        `sandbox` (its environment, /tmp and credentials; by default the process's environment
        with a /tmp of its own); `context` sets its LambdaContext fields (memory, timeout, ARN)."""
        if sandbox is None:
            sandbox = Sandbox(name, dict(os.environ))
        self.sandboxes[name] = sandbox
        self._contexts[name] = context
        if not isinstance(target, str):
            self._handlers[name] = target
            return
        try:
            with sandbox.running():  # the module's cold start runs in the sandbox too
                self._handlers[name] = load_handler(target)
        except Exception as exc:
            # As on Lambda: the function exists, and every invocation fails at init.
            self.import_errors[name] = f"{type(exc).__name__}: {exc}"
            self._handlers[name] = _failing_import(target, exc)

    def run_handler(self, name: str, event: Any) -> Any:
        """Call function `name`'s handler directly, in its sandbox, as its role; exceptions
        propagate (tests that race handlers or inject faults between them)."""
        return self._call(name, self._handlers[name], event)

    def _call(self, name: str, handler: Handler, event: Any) -> Any:
        """`handler` as function `name`'s runtime calls it: in its sandbox, with its context."""
        self._route_logs()
        with self.sandboxes[name].running():
            return handler(event, LambdaContext(name, **self._contexts[name]))

    def _route_logs(self) -> None:
        """Point the functions' Powertools loggers at `log_stream` (or the current stdout).

        On Lambda a function's stdout is its CloudWatch log stream, and Powertools' Logger
        writes there through a handler of its own (on `sys.stdout` as it was at import).
        Here the functions are threads of a process that runs many commands (`wap`, the
        test suite), whose stdout at import may be closed by now: their handlers are
        re-pointed, the process's stdout is left alone. Loggers are created when handler
        modules import, so this runs before every call (cheap).
        """
        stream = sys.stdout if self.log_stream is None else self.log_stream
        for logger in list(logging.Logger.manager.loggerDict.values()):
            handler = getattr(logger, "powertools_handler", None)
            if isinstance(handler, logging.StreamHandler) and handler.stream is not stream:
                with self._lock:
                    self._log_streams.setdefault(handler, handler.stream)
                _point(handler, stream)

    def _restore_logs(self) -> None:
        with self._lock:
            routed, self._log_streams = self._log_streams, {}
        for handler, stream in routed.items():
            _point(handler, stream)

    def invoke(self, name: str, event: Any) -> tuple[Any, dict[str, Any] | None]:
        """Run the handler of function `name`: (result, None) or (None, error payload)."""
        handler = self._handlers.get(name)
        if handler is None:
            raise KeyError(f"no in-process handler registered for Lambda function {name!r}")
        if name in self.interceptors:
            handler = self.interceptors[name](handler)
        record = Invocation(name, event)
        with self._lock:
            self.invocations.append(record)
        try:
            # Round-trip through JSON like the real service: handlers never share objects.
            record.result = json.loads(json.dumps(self._call(name, handler, event)))
        except Exception as exc:
            record.error = error_payload(exc)
            _log.info("lambda %s raised %s: %s", name, type(exc).__name__, exc)
        return record.result, record.error

    def invoke_async(self, name: str, event: Any) -> Future:
        """`InvocationType=Event`: run later on a pool, retried twice on error like AWS."""

        def run() -> None:
            for attempt in range(self._async_retries + 1):
                _, error = self.invoke(name, event)
                if error is None:
                    return
                if attempt < self._async_retries:
                    time.sleep(self._async_retry_delay * (attempt + 1))
            _log.warning("async invocation of %s failed after retries", name)

        future = self._pool.submit(run)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(lambda f: self._discard(f))
        return future

    def _discard(self, future: Future) -> None:
        with self._lock:
            self._pending.discard(future)

    def async_idle(self) -> bool:
        with self._lock:
            return not self._pending

    def calls(self, name: str) -> list[Invocation]:
        with self._lock:
            return [i for i in self.invocations if i.function_name == name]

    def install(self) -> None:
        """Patch moto so invoking a function runs its registered handler."""
        from moto.awslambda.models import LambdaFunction

        dispatcher = self
        self._original = LambdaFunction._invoke_lambda

        def _invoke_lambda(fn: Any, event: Any = None) -> tuple[str, bool, str]:
            if isinstance(event, str | bytes):
                event = json.loads(event or "{}")
            result, error = dispatcher.invoke(fn.function_name, event if event is not None else {})
            if error is not None:
                return json.dumps(error), True, json.dumps(error)
            return json.dumps(result), False, ""

        LambdaFunction._invoke_lambda = _invoke_lambda

    def uninstall(self) -> None:
        from moto.awslambda.models import LambdaFunction

        if self._original is not None:
            LambdaFunction._invoke_lambda = self._original
            self._original = None
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._restore_logs()
        for sandbox in self.sandboxes.values():
            sandbox.remove()
