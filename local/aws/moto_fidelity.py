"""Make moto behave like the services where our code depends on it.

DynamoDB evaluates a write's condition and applies the write atomically, and a
read sees whole items: the ledger's table lock (a conditional put on `version`)
relies on the first to allow one active ingest per table, and every poll of the
ledger on the second. moto checks a condition and then writes without holding a
lock, and copies items for reads while another thread may change them in place
("dictionary changed size during iteration"). Our local stack runs handlers in
threads, so every DynamoDB request goes through one process-wide lock here.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

_lock = threading.RLock()
_installed = False


def make_dynamodb_requests_atomic() -> None:
    """Serialise moto's DynamoDB requests (idempotent; lasts for the process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from moto.dynamodb.responses import DynamoHandler

        # One request, from parsing to the serialised response, is the unit: the handlers
        # copy and serialise items outside the backend's methods.
        _serialise(DynamoHandler, "call_action")
        _installed = True


def _serialise(cls: type, name: str) -> None:
    original = getattr(cls, name)

    @functools.wraps(original)
    def atomic(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _lock:
            return original(self, *args, **kwargs)

    setattr(cls, name, atomic)


class ScaledRetryClock:
    """The clock moto's Step Functions interpreter sleeps on between a task's Retry
    attempts, with every wait multiplied by `scale` (the definition's IntervalSeconds and
    BackoffRate still decide the sequence; tests that exhaust a Retry need not wait it)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self._module: Any = None
        self._original: Any = None

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(seconds * self.scale)

    def __getattr__(self, name: str) -> Any:  # the rest of the `time` module
        import time

        return getattr(time, name)

    def install(self) -> None:
        from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

        self._module, self._original = retrier_decl, retrier_decl.time
        retrier_decl.time = self

    def uninstall(self) -> None:
        if self._module is not None:
            self._module.time = self._original
            self._module = None
