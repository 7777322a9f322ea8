"""Read the Slack bot token from Secrets Manager. The token value is never logged or raised."""

from __future__ import annotations

import json
import logging

from ingestion.alerting.exceptions import AlertConfigError, AlertDeliveryError

# botocore logs every response body at DEBUG, GetSecretValue's (the token) included; with the
# Lambda log level at DEBUG the token would land in CloudWatch. Keep that logger above DEBUG.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)

# Codes that mean "Secrets Manager is having a moment": retry the whole task later.
_TRANSIENT_CODES = {"InternalServiceError", "ThrottlingException", "RequestTimeout"}


def load_slack_token(secret_arn: str, *, client=None) -> str | None:
    """The bot token in `secret_arn` (a raw token or JSON `{"token": ...}`).

    Returns None when the secret does not exist or is empty (no token configured).
    Raises AlertConfigError when the secret exists but cannot be used (access denied, JSON
    without a token), AlertDeliveryError when Secrets Manager failed transiently.
    """
    if client is None:
        from ingestion import aws

        client = aws.client("secretsmanager")
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        response = client.get_secret_value(SecretId=secret_arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "unknown")
        if code == "ResourceNotFoundException":
            return None
        if code in _TRANSIENT_CODES:
            raise AlertDeliveryError(f"cannot read Slack secret {secret_arn}: {code}") from exc
        raise AlertConfigError(f"cannot read Slack secret {secret_arn}: {code}") from exc
    except BotoCoreError as exc:
        raise AlertDeliveryError(
            f"cannot read Slack secret {secret_arn}: {type(exc).__name__}"
        ) from exc
    return _token_from_secret_string(secret_arn, response.get("SecretString"))


def _token_from_secret_string(secret_arn: str, secret: str | None) -> str | None:
    value = (secret or "").strip()
    if not value.startswith("{"):
        return value or None
    document = _parse_json(value)
    if document is _UNPARSEABLE:
        # Raised here, not in the except block: JSONDecodeError holds the secret's text.
        raise AlertConfigError(f"Slack secret {secret_arn} looks like JSON but does not parse")
    token = document.get("token") if isinstance(document, dict) else None
    if token is None or (isinstance(token, str) and not token.strip()):
        return None
    if not isinstance(token, str):
        raise AlertConfigError(f"Slack secret {secret_arn}: 'token' must be a string")
    return token.strip()


_UNPARSEABLE = object()


def _parse_json(value: str) -> object:
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return _UNPARSEABLE
