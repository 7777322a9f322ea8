"""Send OpenLineage events with the openlineage-python client's HTTP transport.

A receiver that is down never changes an ingest: each event is tried a bounded number of
times (the client's own retries are off, so the bound and the waits are ours and tests
can make them instant), then given up, logged and counted (`LineageEventsNotSent`).
The API key is read from Secrets Manager only when a secret is configured, and is never
logged: the client puts it in a header, and failures are described by type and status.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from ingestion import metrics
from ingestion.config import Settings
from ingestion.log import logger

# botocore logs every response body at DEBUG, GetSecretValue's (the API key) included, as
# ingestion/alerting/secrets.py says for the Slack token: keep it above DEBUG here too.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)

ENDPOINT = "api/v1/lineage"  # Marquez's and DataHub's (under /openapi/openlineage/) path


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try one event: `tries` in all, `base_delay_seconds` doubling between."""

    tries: int = 3
    base_delay_seconds: float = 0.5
    # Per request (connect, then read): a receiver that never answers costs an event at most
    # 3 x 2 s + 1.5 s of waits, which finish (60 s) and the sweeper can afford.
    timeout_seconds: float = 2.0

    def delay(self, failed_try: int) -> float:
        return self.base_delay_seconds * 2 ** (failed_try - 1)


RETRY = RetryPolicy()
_sleep = time.sleep  # the waits between tries (tests record them instead of waiting)


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
    sent = 0
    for index, event in enumerate(events):
        for attempt in range(1, policy.tries + 1):
            try:
                transport.emit(event)
            except Exception as exc:
                if attempt < policy.tries:
                    sleep(policy.delay(attempt))
                    continue
                _given_up(
                    events[index : index + 1], table, f"{_describe(exc)} after {policy.tries} tries"
                )
            else:
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

    api_key = _api_key(secret_arn, secrets) if secret_arn else None
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
def _api_key(secret_arn: str, secrets: Any = None) -> str | None:
    """The receiver's API key: the secret's string, or its JSON `apiKey`; None when empty.
    Cached per process (a warm Lambda reads it once)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from ingestion import aws

    try:
        client = secrets if secrets is not None else aws.client("secretsmanager")
        secret = client.get_secret_value(SecretId=secret_arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "unknown")
        raise LineageKeyError(f"cannot read the lineage API key secret: {code}") from None
    except BotoCoreError as exc:
        raise LineageKeyError(
            f"cannot read the lineage API key secret: {type(exc).__name__}"
        ) from None
    value = (secret.get("SecretString") or "").strip()
    if value.startswith("{"):
        try:
            document = json.loads(value)
        except json.JSONDecodeError:
            raise LineageKeyError(
                "the lineage API key secret is JSON that does not parse"
            ) from None
        value = str(document.get("apiKey") or "").strip() if isinstance(document, dict) else ""
    return value or None
