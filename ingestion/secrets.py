"""Read a secret kept in Secrets Manager: its string, or one field of it when it is a JSON
object (the catalog's client secret, the lineage API key, the Slack token). What a secret
holds is never logged or raised: failures name the secret and the error, never its text;
each caller maps them to its own exceptions."""

from __future__ import annotations

import json
import logging
from typing import Any

# botocore logs every response body at DEBUG, GetSecretValue's (the secret) included; with a
# Lambda's log level at DEBUG the secret would land in CloudWatch. Keep that logger above DEBUG.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)


class SecretUnreadableError(Exception):
    """GetSecretValue failed. `code` is Secrets Manager's error code when it answered
    (`answered`), else the name of botocore's exception (no answer: network, credentials)."""

    def __init__(self, secret_arn: str, code: str, *, answered: bool) -> None:
        super().__init__(f"cannot read secret {secret_arn}: {code}")
        self.code, self.answered = code, answered


def read_secret_string(secret_arn: str, client: Any = None) -> str:
    """The secret's string ("" for a binary secret), read with `client` (a Secrets Manager
    client) or the process's own; `SecretUnreadableError` when it cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if client is None:
            from ingestion import aws

            client = aws.client("secretsmanager")
        response = client.get_secret_value(SecretId=secret_arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "unknown")
        raise SecretUnreadableError(secret_arn, code, answered=True) from exc
    except BotoCoreError as exc:
        raise SecretUnreadableError(secret_arn, type(exc).__name__, answered=False) from exc
    return response.get("SecretString") or ""


def secret_field(text: str, field: str, *, unparseable: Exception) -> object:
    """What a secret's `text` holds: the text itself, or, when it is a JSON object (starts
    with "{"), its `field` (None when absent or the JSON is not an object). `unparseable`
    is raised when the text starts with "{" but does not parse."""
    if not text.lstrip().startswith("{"):
        return text
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        document = _UNPARSEABLE
    if document is _UNPARSEABLE:
        # Raised here, not in the except block: JSONDecodeError holds the secret's text.
        raise unparseable
    return document.get(field) if isinstance(document, dict) else None


_UNPARSEABLE = object()
