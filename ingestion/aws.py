"""boto3 clients, created lazily so a handler only pays for the ones it uses."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

from ingestion.exceptions import AwsUnavailableError

T = TypeVar("T")
# Error codes AWS APIs use for throttling and failures on their side (retry-safe).
_TRANSIENT_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "SlowDown",
        "ProvisionedThroughputExceededException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalServerError",
        "InternalServerException",
        "InternalFailure",
        "InternalError",
        "RequestTimeout",
        "RequestTimeoutException",
        "TransactionConflictException",
    }
)


_creating = threading.Lock()


def client(service: str) -> Any:
    """The function's boto3 client for `service` (reused across warm invocations)."""
    # boto3's default session is not safe to create clients from in parallel (its loader
    # caches are plain dicts); Lambda runs one invocation at a time, the local stack not.
    with _creating:
        return _client(service, _function())


def resource(service: str) -> Any:
    """The function's boto3 resource (e.g. the ledger's DynamoDB table)."""
    with _creating:
        return _resource(service, _function())


def _function() -> str:
    # Cached per function: on Lambda a process runs one function, but the local stack runs
    # several in one process, each signing with its own role's credentials.
    return os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")


@cache
def _client(service: str, function: str) -> Any:
    import boto3

    return boto3.client(service)


@cache
def _resource(service: str, function: str) -> Any:
    import boto3

    return boto3.resource(service)


def is_transient(exc: BaseException) -> bool:
    """Whether an AWS call failed in a way that the same call may not (throttling, 5xx,
    a dropped connection); botocore's own typed errors decide, not the message."""
    from botocore.exceptions import (
        ClientError,
        ConnectionClosedError,
        ConnectTimeoutError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    if isinstance(
        exc,
        EndpointConnectionError | ConnectionClosedError | ConnectTimeoutError | ReadTimeoutError,
    ):
        return True
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        return error.get("Code") in _TRANSIENT_CODES or int(status) >= 500
    return False


def call(action: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`, with transient AWS failures raised as `AwsUnavailableError`
    (which the state machine retries); anything else propagates unchanged."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        if is_transient(exc):
            raise AwsUnavailableError(f"AWS unavailable while trying to {action}: {exc}") from exc
        raise


def reset() -> None:
    """Forget cached clients (the local harness does this when it restarts moto)."""
    with _creating:
        _client.cache_clear()
        _resource.cache_clear()


def read_json_s3(uri: str) -> Any | None:
    """The JSON document at `s3://bucket/key`, or None when the object does not exist."""
    import json

    text = read_text_s3(uri)
    return None if text is None else json.loads(text)


def read_bytes_s3(uri: str, max_bytes: int | None = None) -> bytes | None:
    """The bytes at `s3://bucket/key` (with `max_bytes`, at most its first max_bytes + 1:
    enough to tell that it is longer), or None when the object does not exist."""
    from ingestion.naming import split_s3_uri

    bucket, key = split_s3_uri(uri)
    s3 = client("s3")
    extra = {"Range": f"bytes=0-{max_bytes}"} if max_bytes else {}
    try:
        return call(
            f"read {uri}", lambda: s3.get_object(Bucket=bucket, Key=key, **extra)["Body"].read()
        )
    except s3.exceptions.NoSuchKey:
        return None


def read_text_s3(uri: str, max_bytes: int | None = None) -> str | None:
    """The UTF-8 text at `s3://bucket/key`, or None when the object does not exist.

    ValueError when it is longer than `max_bytes` or not UTF-8.
    """
    body = read_bytes_s3(uri, max_bytes)
    if body is None:
        return None
    if max_bytes and len(body) > max_bytes:
        raise ValueError(f"{uri} is larger than {max_bytes} bytes")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{uri} is not UTF-8 text: {exc}") from exc
