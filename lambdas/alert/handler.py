"""Lambda entry point of the alert task: parse the event, call send_alert, return its result."""

from __future__ import annotations

from aws_lambda_powertools.utilities.typing import LambdaContext

from ingestion.alerting.log import logger
from ingestion.alerting.notify import send_alert


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict, context: LambdaContext) -> dict:
    """Step Functions task: `{"ingest_id", "table", "outcome", ...}` -> `{"delivered", ...}`."""
    if isinstance(event, dict) and isinstance(event.get("ingest_id"), str):
        logger.append_keys(ingest_id=event["ingest_id"])
    return send_alert(event)
