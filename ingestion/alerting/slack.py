"""Post to Slack with slack-sdk: bounded retries, and Slack's errors mapped to ours.

Retries use slack-sdk's retry handlers (429 with Retry-After, 5xx, connection errors) inside one
invocation; once they are used up, AlertDeliveryError lets Step Functions retry the task later.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.client import HTTPException, RemoteDisconnected
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry import (
    BackoffRetryIntervalCalculator,
    ConnectionErrorRetryHandler,
    RateLimitErrorRetryHandler,
    RetryHandler,
)
from slack_sdk.http_retry.builtin_handlers import ServerErrorRetryHandler

from ingestion.alerting.exceptions import AlertDeliveryError, AlertRejectedError
from ingestion.alerting.message import SlackMessage

# ok:false codes that Slack documents as transient; everything else is a final answer.
RETRYABLE_SLACK_ERRORS = frozenset(
    {
        "ratelimited",
        "rate_limited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
    }
)
_ERROR_CODE = re.compile(r"^[a-z0-9_]{1,64}$")


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one invocation tries before handing the retry to Step Functions."""

    max_retries: int = 3
    backoff_factor: float = 0.5  # 5xx/connection waits: factor * 2**attempt + jitter
    max_retry_after: float = 20.0  # longer Retry-After values are left to Step Functions
    timeout: int = 10  # seconds per HTTP request
    sleep: Callable[[float], None] = field(default=time.sleep)


def _retry_after(response) -> float:
    for name, values in (response.headers or {}).items():
        if name.lower() == "retry-after":
            value = values[0] if isinstance(values, list) else values
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                break
    return 1.0


class _RateLimitRetry(RateLimitErrorRetryHandler):
    """Honours Retry-After, through an injectable sleep, when the wait fits our budget."""

    def __init__(self, policy: RetryPolicy):
        super().__init__(max_retry_count=policy.max_retries)
        self._policy = policy

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        return (
            super()._can_retry(state=state, request=request, response=response, error=error)
            and _retry_after(response) <= self._policy.max_retry_after
        )

    def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:
        state.next_attempt_requested = True
        self._policy.sleep(_retry_after(response))
        state.increment_current_attempt()


class _BackoffSleep(RetryHandler):
    """Mixin before a built-in handler: the policy's retry count and backoff, the wait slept
    through the policy's sleep function."""

    def __init__(self, policy: RetryPolicy, **handler_args: Any):
        super().__init__(
            max_retry_count=policy.max_retries,
            interval_calculator=BackoffRetryIntervalCalculator(policy.backoff_factor),
            **handler_args,
        )
        self._policy = policy

    def prepare_for_next_attempt(self, *, state, request, response=None, error=None) -> None:
        state.next_attempt_requested = True
        self._policy.sleep(self.interval_calculator.calculate_sleep_duration(state.current_attempt))
        state.increment_current_attempt()


class _ServerErrorRetry(_BackoffSleep, ServerErrorRetryHandler):
    """Every 5xx, not only the built-in handler's 500 and 503 (load balancers send 502/504)."""

    def _can_retry(self, *, state, request, response=None, error=None) -> bool:
        return response is not None and 500 <= response.status_code <= 599


class _ConnectionRetry(_BackoffSleep, ConnectionErrorRetryHandler):
    """Connection refused/reset/dropped and timeouts."""

    def __init__(self, policy: RetryPolicy):
        super().__init__(
            policy, error_types=[URLError, ConnectionError, RemoteDisconnected, TimeoutError]
        )


def retry_handlers(policy: RetryPolicy) -> list[RetryHandler]:
    """The retry handlers a WebClient gets; they share one attempt counter per request."""
    return [_RateLimitRetry(policy), _ServerErrorRetry(policy), _ConnectionRetry(policy)]


def build_client(token: str, *, base_url: str | None = None, retry: RetryPolicy | None = None):
    """A slack-sdk WebClient for `token` (base_url: a stand-in's `/api/` URL, None = Slack)."""
    retry = retry or RetryPolicy()
    kwargs: dict[str, Any] = {"token": token, "timeout": retry.timeout}
    if base_url:
        kwargs["base_url"] = base_url
    return WebClient(retry_handlers=retry_handlers(retry), **kwargs)


def post_message(client: WebClient, channel: str, message: SlackMessage) -> dict[str, Any]:
    """chat.postMessage; returns Slack's response body.

    Raises AlertDeliveryError when Slack stayed unavailable, AlertRejectedError (with the Slack
    error code) when Slack refused the message for good.
    """
    # The errors are raised outside the except blocks on purpose: slack-sdk's exceptions keep
    # the request (with its Authorization header) and chaining would carry the token along.
    failure: Exception
    try:
        response = client.chat_postMessage(
            channel=channel,
            text=message.text,
            blocks=message.blocks,
            unfurl_links=False,
            unfurl_media=False,
        )
        return dict(response.data) if isinstance(response.data, dict) else {}
    except SlackApiError as exc:
        failure = _api_failure(exc)
    except (URLError, OSError, HTTPException) as exc:
        failure = AlertDeliveryError(f"Slack unreachable after retries: {_describe(exc)}")
    except SlackClientError as exc:
        failure = AlertDeliveryError(f"Slack client error: {type(exc).__name__}")
    raise failure


def _describe(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return f"{type(exc).__name__}: {reason if reason is not None else exc}"


def _api_failure(exc: SlackApiError) -> Exception:
    response = exc.response
    status = getattr(response, "status_code", None)
    data = response.data if isinstance(getattr(response, "data", None), dict) else {}
    error = data.get("error")
    # Non-JSON bodies (an HTML 5xx page) come back as a long sentence in `error`.
    code = error if isinstance(error, str) and _ERROR_CODE.match(error) else f"http_{status}"
    if status == 429 or (status is not None and status >= 500) or code in RETRYABLE_SLACK_ERRORS:
        return AlertDeliveryError(
            f"Slack unavailable after retries: HTTP {status}, error {code}",
            slack_error=code,
            status=status,
        )
    detail = ""
    errors = data.get("errors") or (data.get("response_metadata") or {}).get("messages")
    if isinstance(errors, list) and errors:
        detail = ": " + "; ".join(str(e) for e in errors[:3])[:500]
    return AlertRejectedError(f"Slack rejected the alert: {code}{detail}", slack_error=code)
