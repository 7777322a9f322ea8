"""Read the Slack bot token from Secrets Manager. The token value is never logged or raised."""

from __future__ import annotations

from ingestion.alerting.exceptions import AlertConfigError, AlertDeliveryError
from ingestion.secrets import SecretUnreadableError, read_secret_string, secret_field

# Codes that mean "Secrets Manager is having a moment": retry the whole task later.
_TRANSIENT_CODES = {"InternalServiceError", "ThrottlingException", "RequestTimeout"}


def load_slack_token(secret_arn: str, *, client=None) -> str | None:
    """The bot token in `secret_arn` (a raw token or JSON `{"token": ...}`).

    Returns None when the secret does not exist or is empty (no token configured).
    Raises AlertConfigError when the secret exists but cannot be used (access denied, JSON
    without a token), AlertDeliveryError when Secrets Manager failed transiently.
    """
    try:
        text = read_secret_string(secret_arn, client)
    except SecretUnreadableError as exc:
        if exc.code == "ResourceNotFoundException":
            return None
        transient = not exc.answered or exc.code in _TRANSIENT_CODES
        error = AlertDeliveryError if transient else AlertConfigError
        raise error(f"cannot read Slack secret {secret_arn}: {exc.code}") from exc
    unparseable = AlertConfigError(f"Slack secret {secret_arn} looks like JSON but does not parse")
    token = secret_field(text.strip(), "token", unparseable=unparseable)
    if token is None or (isinstance(token, str) and not token.strip()):
        return None
    if not isinstance(token, str):
        raise AlertConfigError(f"Slack secret {secret_arn}: 'token' must be a string")
    return token.strip()
