"""Publish Lambda: merge the audited commit into main (or rebase and re-run)."""

from __future__ import annotations

from typing import Any

from ingestion.config import load_settings
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.nessie import client_for
from ingestion.state import parse_state
from lambdas.publish.service import publish


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the execution state after a PASSED job. Output: the new `outcome`, see `publish`."""
    settings = load_settings()
    state = parse_state(event, "publish")
    logger.append_keys(ingest_id=state.ingest_id)
    result = publish(
        settings,
        Ledger(settings.ledger_table, lease=settings.lock_lease),
        client_for(settings),
        state,
    )
    logger.info("publish done", extra={"status": result.status})
    return result.to_dict()
