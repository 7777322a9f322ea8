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

import base64
import functools
import json
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

_lock = threading.RLock()


def _once(install: Callable[[], None]) -> Callable[[], None]:
    """`install` (a patch of moto's classes) run once for the process, however many local
    stacks start and from however many threads; later calls return at once."""
    done = False

    @functools.wraps(install)
    def once() -> None:
        nonlocal done
        with _lock:
            if not done:
                install()
                done = True

    return once


@_once
def make_dynamodb_requests_atomic() -> None:
    """Serialise moto's DynamoDB requests (idempotent; lasts for the process)."""
    from moto.dynamodb.responses import DynamoHandler

    # One request, from parsing to the serialised response, is the unit: the handlers
    # copy and serialise items outside the backend's methods.
    _serialise(DynamoHandler, "call_action", _lock, then=_notify_writes)


def _serialise(
    cls: type,
    name: str,
    lock: AbstractContextManager[Any],
    then: Callable[[Any], None] | None = None,
) -> None:
    """Method `name` of moto's `cls` runs whole under `lock`, followed (still under it) by
    `then(instance)`."""
    original = getattr(cls, name)

    @functools.wraps(original)
    def atomic(self: Any, *args: Any, **kwargs: Any) -> Any:
        with lock:
            response = original(self, *args, **kwargs)
            if then is not None:
                then(self)
            return response

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


_write_observers: list[Callable[[Any], None]] = []


# The DynamoDB requests that change items.
WRITE_ACTIONS = frozenset(
    {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"}
)


def request_action(handler: Any) -> str | None:
    """The action of the DynamoDB request `handler` served (`PutItem`, `Query`, ...)."""
    return handler.get_endpoint_name(handler.headers)


def observe_dynamodb_writes(observer: Callable[[Any], None]) -> None:
    """Call `observer(handler)` after each DynamoDB request, inside the request's lock (so
    observers see the requests in the order they took effect)."""
    make_dynamodb_requests_atomic()
    with _lock:
        if observer not in _write_observers:
            _write_observers.append(observer)


def forget_dynamodb_writes(observer: Callable[[Any], None]) -> None:
    with _lock:
        if observer in _write_observers:
            _write_observers.remove(observer)


def _notify_writes(handler: Any) -> None:
    for observer in list(_write_observers):
        observer(handler)


@_once
def make_transactions_item_scoped() -> None:
    """moto's TransactWriteItems deep-copies every table it touches to roll back (16 ms a
    transaction at 100 items, 323 ms at 10,000); DynamoDB's cost does not grow with the
    table. Here the rollback keeps the items the transaction names, and restores those:
    the same all-or-nothing answer, at a cost independent of the table's size."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table

    original = DynamoDBBackend.transact_write_items

    @functools.wraps(original)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        with _lock:  # (DynamoDB requests hold it already; direct backend calls too)
            saved = _items_named(self, transact_items)
            Table.__deepcopy__ = _itself  # the original's whole-table backup: a no-op
            try:
                return original(self, transact_items)
            except Exception:
                _restore_items(self, saved)
                raise
            finally:
                del Table.__deepcopy__

    DynamoDBBackend.transact_write_items = transact_write_items


def _itself(table: Any, memo: Any) -> Any:
    return table


def _items_named(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple]:
    import copy

    saved, seen = [], set()
    for entry in transact_items[:100]:
        if len(entry) != 1:
            continue
        op_type, op = next(iter(entry.items()))
        table = backend.tables.get(op.get("TableName"))
        if table is None:
            continue
        attrs = op.get("Item") if op_type == "Put" else op.get("Key")
        if not isinstance(attrs, dict):
            continue
        names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
        if any(name not in attrs for name in names):
            continue
        key = {name: attrs[name] for name in names}
        ident = (table.name, json.dumps(key, sort_keys=True, default=str))
        if ident in seen:
            continue
        seen.add(ident)
        current = backend.get_item(table.name, key)
        saved.append(
            (table.name, key, copy.deepcopy(current.to_json()["Attributes"]) if current else None)
        )
    return saved


def _restore_items(backend: Any, saved: list[tuple]) -> None:
    for table_name, key, attrs in saved:
        if attrs is None:
            if backend.get_item(table_name, key) is not None:
                backend.delete_item(table_name, key)
        else:
            backend.put_item(table_name, attrs)


@_once
def validate_each_definition_once() -> None:
    """moto's CreateStateMachine parses the definition with its ANTLR grammar only to
    validate it, and throws the parse away: 23 ms of CPU for ours, on each local stack's
    start. A definition that parsed once is accepted again without parsing it; one that
    failed is parsed (and refused) again, so what is refused stays refused."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    original = StepFunctionsParserBackend._validate_definition
    valid: set[str] = set()

    def _validate_definition(definition: str) -> None:
        if definition not in valid:
            original(definition)
            valid.add(definition)

    StepFunctionsParserBackend._validate_definition = staticmethod(_validate_definition)


@_once
def make_start_execution_atomic() -> None:
    """Step Functions' StartExecution is idempotent by name: a second start with the same
    name and input returns the first execution. moto looks for one, then copies the state
    machine and appends the new one without a lock, so two racing starts (two deliveries
    of one upload) made two executions of one ingest. Here the look and the append are
    one step (idempotent; lasts for the process)."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    # A lock of its own: a start copies the state machine, no DynamoDB request need wait.
    _serialise(StepFunctionsParserBackend, "start_execution", threading.Lock())


# Step Functions' GetExecutionHistory page sizes: the default, and the largest allowed.
HISTORY_PAGE_DEFAULT = 100
HISTORY_PAGE_MAX = 1000


@_once
def page_execution_histories() -> None:
    """moto's GetExecutionHistory answers the whole history, oldest first, whatever
    `maxResults`, `reverseOrder` and `nextToken` say. Step Functions answers one page of
    `maxResults` events (0 or absent: 100; more than 1000 is refused), newest first with
    `reverseOrder`, and a `nextToken` while events are left; a token it did not issue
    for this execution and order is InvalidToken. So a caller that reads one page sees
    one page here too (idempotent; lasts for the process)."""
    from moto.stepfunctions.responses import StepFunctionResponse

    StepFunctionResponse.get_execution_history = _paged_execution_history


def _paged_execution_history(self: Any) -> Any:
    from moto.core.responses import ActionResult
    from moto.stepfunctions.exceptions import InvalidToken, ValidationException

    arn = self._get_param("executionArn")
    size = self._get_int_param("maxResults") or HISTORY_PAGE_DEFAULT
    if size > HISTORY_PAGE_MAX:
        raise ValidationException(
            f"1 validation error detected: Value '{size}' at 'maxResults' failed to "
            f"satisfy constraint: Member must have value less than or equal to "
            f"{HISTORY_PAGE_MAX}"
        )
    newest_first = self._get_bool_param("reverseOrder", False)
    events = list(self.stepfunction_backend.get_execution_history(arn)["events"])
    if newest_first:
        events.reverse()
    start = 0
    token = self._get_param("nextToken")
    if token is not None:
        try:
            issued = json.loads(base64.urlsafe_b64decode(token.encode()))
            start = int(issued["start"])
        except (ValueError, TypeError, KeyError):
            raise InvalidToken("not a token this operation issued") from None
        if (issued.get("arn"), issued.get("newest_first")) != (arn, newest_first):
            raise InvalidToken("issued for another execution or order")
    page: dict[str, Any] = {"events": events[start : start + size]}
    if start + size < len(events):
        issued = {"arn": arn, "newest_first": newest_first, "start": start + size}
        page["nextToken"] = base64.urlsafe_b64encode(json.dumps(issued).encode()).decode()
    return ActionResult(page)
