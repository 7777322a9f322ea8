"""Trigger Lambda: S3 / EventBridge "Object Created" -> ingest started or queued."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ingestion.config import load_settings
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.nessie import client_for
from lambdas.trigger.doctor import is_doctor_event, run_check
from lambdas.trigger.events import parse_event
from lambdas.trigger.service import handle_object


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Handle every object of the event; a retryable failure fails the whole invocation so
    Lambda retries it (already-finished objects are no-ops the second time)."""
    settings = load_settings()
    if is_doctor_event(event):
        return run_check(event, settings)
    ledger = Ledger(settings.ledger_table, lease=settings.lock_lease)
    nessie = client_for(settings)
    results = []
    for obj in parse_event(event):
        result = handle_object(obj, settings, ledger, nessie)
        logger.info("object handled", extra=asdict(result))
        results.append(asdict(result))
    return {"results": results}
