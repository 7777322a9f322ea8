"""boto3 clients, created lazily so a handler only pays for the ones it uses."""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def client(service: str) -> Any:
    """A process-wide boto3 client (reused across warm invocations)."""
    import boto3

    return boto3.client(service)


def reset() -> None:
    """Forget cached clients (the local harness does this when it restarts moto)."""
    client.cache_clear()


def read_json_s3(uri: str) -> Any | None:
    """The JSON document at `s3://bucket/key`, or None when the object does not exist."""
    import json

    from lambdas.common.naming import split_s3_uri

    bucket, key = split_s3_uri(uri)
    s3 = client("s3")
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    return json.loads(body)
