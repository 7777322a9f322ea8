"""Publish Lambda: merge the audited commit into main (or rebase and re-run)."""

from __future__ import annotations

from typing import Any

from lambdas.common.config import load_settings
from lambdas.common.ledger import Ledger
from lambdas.common.log import logger
from lambdas.common.nessie import NessieClient
from lambdas.publish.service import publish


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the execution state after a PASSED job. Output: see `publish`."""
    settings = load_settings()
    logger.append_keys(ingest_id=event.get("ingest_id"))
    result = publish(
        settings,
        Ledger(settings.ledger_table, lease=settings.lock_lease),
        NessieClient(settings.nessie_uri),
        event,
    )
    logger.info("publish done", extra={"status": result["status"]})
    return result
