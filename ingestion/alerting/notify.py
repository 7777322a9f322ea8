"""send_alert: read the report, render the message, post it to Slack (or log it when no token)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from slack_sdk import WebClient

from contracts.alert import AlertEvent
from contracts.report import AuditReport, CheckResult
from ingestion.alerting.config import ENV_SLACK_CHANNEL, AlertConfig
from ingestion.alerting.exceptions import AlertConfigError, AlertError, AlertEventError
from ingestion.alerting.log import logger
from ingestion.alerting.message import SlackMessage, build_message
from ingestion.alerting.report import (
    ReportUnavailableError,
    failed_checks,
    load_report,
)
from ingestion.alerting.secrets import load_slack_token
from ingestion.alerting.slack import RetryPolicy, build_client, post_message

NO_TOKEN_REASON = "no slack token configured"  # noqa: S105 (a message)
_LOGGED_CHECKS = 100


def send_alert(
    event: dict,
    *,
    slack: WebClient | None = None,
    s3=None,
    secretsmanager=None,
    config: AlertConfig | None = None,
    retry: RetryPolicy | None = None,
) -> dict:
    """Alert Slack about an ingest that did not publish; never changes the ingest's outcome.

    `slack` overrides the client built from the token in `WAP_SLACK_SECRET_ARN`; `s3` and
    `secretsmanager` are boto3 clients (created when None). Returns `{"delivered": bool, ...}`.
    Raises AlertEventError for a malformed event, AlertDeliveryError when Slack stayed down,
    AlertRejectedError when Slack refused the message, AlertConfigError for unusable settings;
    in each case the alert itself has been logged first.
    """
    try:
        alert = AlertEvent.from_dict(event)
    except AlertEventError as exc:
        logger.error("alert event rejected", extra={"error": str(exc), "event": _clip(event)})
        raise
    try:
        config = config or AlertConfig.from_env()
    except AlertConfigError as exc:
        bare = build_message(alert, None, [])
        _log_undelivered(alert, bare, [], str(exc), error_type=type(exc).__name__)
        raise
    report, checks, problem = _read_report(alert, s3)
    message = build_message(
        alert,
        report,
        checks,
        nessie_ui_url=config.nessie_ui_url,
        report_problem=problem,
        aws_console_links=config.aws_console_links,
    )
    result = {"ingest_id": alert.ingest_id, "table": alert.table, "outcome": alert.outcome}

    try:
        client = slack if slack is not None else _client_from_secret(config, secretsmanager, retry)
        if client is None or not client.token:
            _log_undelivered(alert, message, checks, NO_TOKEN_REASON)
            return {"delivered": False, "reason": NO_TOKEN_REASON, **result}
        if not config.slack_channel:
            raise AlertConfigError(f"{ENV_SLACK_CHANNEL} is not set")
        response = post_message(client, config.slack_channel, message)
    except AlertError as exc:
        _log_undelivered(alert, message, checks, str(exc), error_type=type(exc).__name__)
        raise
    logger.info(
        "slack alert delivered",
        extra={**result, "channel": response.get("channel"), "ts": response.get("ts")},
    )
    return {
        "delivered": True,
        "channel": response.get("channel"),
        "ts": response.get("ts"),
        **result,
    }


def _client_from_secret(
    config: AlertConfig, secretsmanager, retry: RetryPolicy | None
) -> WebClient | None:
    if not config.slack_secret_arn:
        return None
    token = load_slack_token(config.slack_secret_arn, client=secretsmanager)
    if token is None:
        return None
    return build_client(token, base_url=config.slack_api_url, retry=retry)


def _read_report(alert: AlertEvent, s3) -> tuple[AuditReport | None, list[CheckResult], str | None]:
    if not alert.report_uri:
        return None, [], None
    try:
        report = load_report(alert.report_uri, s3=s3)
    except ReportUnavailableError as exc:
        logger.warning(
            "audit report unavailable", extra={"report_uri": alert.report_uri, "error": str(exc)}
        )
        return None, [], str(exc)
    return report, failed_checks(report), None


def _log_undelivered(
    alert: AlertEvent,
    message: SlackMessage,
    checks: list[CheckResult],
    reason: str,
    *,
    error_type: str | None = None,
) -> None:
    """The alert as structured JSON, so nothing is lost when Slack cannot be reached."""
    record = {
        "event": asdict(alert),
        "text": message.text,
        "failed_checks_total": len(checks),
        "failed_checks": [
            {
                "name": c.name,
                "kind": c.kind,
                "columns": list(c.columns),
                "severity": c.severity,
                "status": c.status,
                "violations": c.violations,
            }
            for c in checks[:_LOGGED_CHECKS]
        ],
    }
    level = logger.warning if error_type is None else logger.error
    level(
        "slack alert not delivered",
        extra={"alert": record, "reason": reason, "error_type": error_type},
    )


def _clip(value: Any, limit: int = 4000) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
