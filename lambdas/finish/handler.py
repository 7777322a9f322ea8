"""Finish Lambda: every execution path ends here."""

from __future__ import annotations

from typing import Any

from ingestion.config import load_settings
from ingestion.exceptions import InvalidEventError
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.nessie import client_for
from ingestion.state import parse_state
from lambdas.finish.service import finish, state_from_ledger


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: `{"state": <execution state>, "execution_arn"}`. Output: `FinishResult`."""
    if not isinstance(event, dict) or not isinstance(event.get("state"), dict):
        raise InvalidEventError("finish input must be {'state': {...}, 'execution_arn': ...}")
    settings = load_settings()
    ledger = Ledger(settings.ledger_table, lease=settings.lock_lease)
    try:
        state = parse_state(event["state"], "finish")
    except InvalidEventError as exc:
        # Finish is where every execution ends: it must record an outcome even then.
        logger.error(
            "the state breaks its contract; rebuilt from the ledger", extra={"problem": str(exc)}
        )
        state = state_from_ledger(event["state"], ledger, exc)
    logger.append_keys(ingest_id=state.ingest_id)
    result = finish(
        settings,
        ledger,
        client_for(settings),
        state,
        event.get("execution_arn"),
    )
    logger.info(
        "ingest finished",
        extra={"status": result.status, "next_ingest_id": result.next_ingest_id},
    )
    return result.to_dict()
