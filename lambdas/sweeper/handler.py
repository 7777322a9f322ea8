"""Sweeper Lambda (scheduled): stuck locks and expired failed branches."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from lambdas.common.config import load_settings
from lambdas.common.ledger import Ledger
from lambdas.common.log import logger
from lambdas.common.nessie import NessieClient
from lambdas.sweeper.service import sweep


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the schedule's event (ignored). Output: what was recovered and discarded."""
    settings = load_settings()
    ledger = Ledger(settings.ledger_table, lease=settings.lock_lease)
    report = sweep(settings, ledger, NessieClient(settings.nessie_uri))
    logger.info("sweep done", extra=asdict(report))
    return asdict(report)
