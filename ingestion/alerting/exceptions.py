"""Errors of the alert Lambda. Step Functions matches on these class names."""

from __future__ import annotations

# Defined with the event it checks; re-exported so the alert's errors stay in one place.
from contracts.alert import AlertEventError  # noqa: F401


class AlertError(Exception):
    """Base error of the alert package."""


class AlertConfigError(AlertError):
    """The Lambda's environment or the Slack secret is not usable as configured."""


class AlertDeliveryError(AlertError):
    """Slack stayed unavailable (429, 5xx, unreachable) after bounded retries: retry later."""

    def __init__(self, message: str, *, slack_error: str | None = None, status: int | None = None):
        super().__init__(message)
        self.slack_error = slack_error
        self.status = status


class AlertRejectedError(AlertError):
    """Slack refused the message for a reason a retry cannot fix (auth, channel, payload)."""

    def __init__(self, message: str, *, slack_error: str):
        super().__init__(message)
        self.slack_error = slack_error
