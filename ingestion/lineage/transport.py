"""Send OpenLineage events with the openlineage-python client's HTTP transport.

A receiver that is down never changes an ingest: each event is tried a bounded number of
times (the client's own retries are off, so the bound and the waits are ours and tests
can make them instant), then given up, logged and counted (`LineageEventsNotSent`).
Ingestion never waits long on lineage: one Lambda invocation spends at most
`INVOCATION_SECONDS` sending events (finish and the sweeper send one per ingest in a
loop), and once a receiver has not answered in time, the invocation's later events are
given up without being tried.
The API key is read from Secrets Manager only when a secret is configured, and is never
logged: the client puts it in a header, and failures are described by type and status.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ingestion import metrics
from ingestion.config import Settings
from ingestion.log import logger
from ingestion.secrets import SecretUnreadableError, read_secret_string, secret_field

ENDPOINT = "api/v1/lineage"  # Marquez's and DataHub's (under /openapi/openlineage/) path


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one event: `tries` in all, `base_delay_seconds` doubling between."""

    tries: int = 3
    base_delay_seconds: float = 0.5
    # Per request (connect, then read): a receiver that never answers costs one such timeout
    # per invocation (its later events are not tried), INVOCATION_SECONDS at most in all.
    timeout_seconds: float = 2.0

    def delay(self, failed_try: int) -> float:
        return self.base_delay_seconds * 2 ** (failed_try - 1)


RETRY = RetryPolicy()
_sleep = time.sleep  # the waits between tries (tests record them instead of waiting)
_clock = time.monotonic  # what sending took (tests tick it instead)
# The most one invocation spends on lineage, waits included (finish's timeout is 60 s).
INVOCATION_SECONDS = 10.0


class _Budget:
    """What one invocation (a Lambda request; outside Lambda, one `emit_to` call) has
    left for lineage, and whether its receiver stopped answering."""

    def __init__(self, request_id: str | None) -> None:
        self.request_id, self.spent, self.closed = request_id, 0.0, None

    def left(self) -> float:
        return INVOCATION_SECONDS - self.spent

    def close(self, why: str) -> None:
        self.closed = self.closed or why


_budgets = threading.local()  # the local stack runs invocations on threads of one process


def _invocation_budget() -> _Budget:
    """The current Lambda request's budget (Powertools' `function_request_id`), kept per
    thread; a fresh one per call outside a Lambda invocation."""
    from ingestion.log import logger

    request_id = logger.get_current_keys().get("function_request_id")
    current = getattr(_budgets, "current", None)
    if request_id is None or current is None or current.request_id != request_id:
        current = _Budget(request_id)
        _budgets.current = current
    return current


def _unanswered(exc: BaseException) -> bool:
    """A request that timed out: the receiver is not answering (a refused connection
    fails at once, and is tried again)."""
    import requests

    return isinstance(exc, requests.Timeout)


class LineageKeyError(RuntimeError):
    """The configured API key secret could not be read (the message never holds its value)."""


def emit_quietly(
    settings: Settings,
    events: Sequence[Any],
    *,
    table: str | None = None,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
) -> int:
    """Send `events` in order to the configured receiver; return how many it accepted.

    Sends nothing when no receiver is configured. Never raises.
    """
    return emit_to(
        settings.lineage_url,
        settings.lineage_api_key_secret_arn,
        events,
        table=table,
        policy=policy,
        sleep=sleep,
    )


def emit_to(
    url: str | None,
    secret_arn: str | None,
    events: Sequence[Any],
    *,
    table: str | None = None,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
    secrets: Any = None,
) -> int:
    """`emit_quietly` to the receiver at `url` (its API key in the secret `secret_arn`,
    read with `secrets`, a Secrets Manager client: default the function's): what `wap`
    uses against a deployed stack, whose receiver its outputs name."""
    if not url or not events:
        return 0
    policy, sleep = policy or RETRY, sleep or _sleep
    try:
        transport = _transport(url, secret_arn, policy.timeout_seconds, secrets)
    except Exception as exc:
        _given_up(events, table, f"transport not available: {_describe(exc)}")
        return 0
    budget = _invocation_budget()
    sent = 0
    for index, event in enumerate(events):
        if budget.closed is None and budget.left() <= 0:
            budget.close(f"this invocation's {INVOCATION_SECONDS:g} s for lineage are spent")
        if budget.closed is not None:
            _given_up(events[index : index + 1], table, f"not tried: {budget.closed}")
            continue
        for attempt in range(1, policy.tries + 1):
            began = _clock()
            try:
                transport.emit(event)
            except Exception as exc:
                budget.spent += _clock() - began
                why = f"{_describe(exc)} after {attempt} tries"
                if _unanswered(exc):
                    budget.close(f"the receiver did not answer ({_describe(exc)})")
                    _given_up(events[index : index + 1], table, why)
                    break
                delay = policy.delay(attempt)
                if attempt < policy.tries and delay < budget.left():
                    sleep(delay)
                    budget.spent += delay
                    continue
                _given_up(events[index : index + 1], table, why)
            else:
                budget.spent += _clock() - began
                sent += 1
            break
    return sent


def _given_up(events: Sequence[Any], table: str | None, why: str) -> None:
    for event in events:
        logger.error(
            "OpenLineage event not sent",
            extra={
                "lineage_run_id": event.run.runId,
                "event_type": event.eventType.value,
                "problem": why,
            },
        )
    try:
        metrics.emit({metrics.LINEAGE_NOT_SENT: len(events)}, table=table)
    except Exception:  # counting must not raise either
        logger.exception("could not count the unsent OpenLineage events")


def _describe(exc: BaseException) -> str:
    """The failure without its request: an HTTP status, or the exception's type."""
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status is not None:
        return f"HTTP {status}"
    return type(exc).__name__


def _transport(url: str, secret_arn: str | None, timeout: float, secrets: Any = None) -> Any:
    from openlineage.client.transport.http import (
        ApiKeyTokenProvider,
        HttpConfig,
        HttpTransport,
        TokenProvider,
    )

    function = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
    api_key = _api_key(secret_arn, secrets, function) if secret_arn else None
    auth = ApiKeyTokenProvider({"api_key": api_key}) if api_key else TokenProvider({})
    # urljoin keeps a base path (DataHub's /openapi/openlineage/) only with its slash.
    return HttpTransport(
        HttpConfig(
            url=url.rstrip("/") + "/",
            endpoint=ENDPOINT,
            timeout=timeout,
            auth=auth,
            retry={
                "total": 0,
                "connect": 0,
                "read": 0,
                "status": 0,
                "redirect": 0,
                "raise_on_status": False,
            },
        )
    )


@cache
def _api_key(secret_arn: str, secrets: Any = None, function: str = "") -> str | None:
    """The receiver's API key: the secret's string, or its JSON `apiKey`; None when empty.
    Cached per process and `function` (a warm Lambda reads it once; the local stack runs
    several functions in one process, each reading it as its own role)."""
    try:
        text = read_secret_string(secret_arn, secrets)
    except SecretUnreadableError as exc:
        raise LineageKeyError(f"cannot read the lineage API key secret: {exc.code}") from None
    unparseable = LineageKeyError("the lineage API key secret is JSON that does not parse")
    value = secret_field(text.strip(), "apiKey", unparseable=unparseable)
    return str(value or "").strip() or None
