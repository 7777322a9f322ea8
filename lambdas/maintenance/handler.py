"""Maintenance Lambda (scheduled, daily): garbage collection across Nessie references."""

from __future__ import annotations

from typing import Any

from lambdas.common.config import load_settings
from lambdas.common.log import logger
from lambdas.common.nessie import NessieClient
from lambdas.maintenance.service import load_maintenance_settings, outcome, run_maintenance


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the schedule's event (ignored). Output: what was marked and is reclaimable
    (or, with `-c gcDelete=true`, was deleted)."""
    settings = load_settings()
    report = run_maintenance(settings, load_maintenance_settings(),
                             NessieClient(settings.nessie_uri))
    result = outcome(report)
    logger.info("garbage collection done", extra=result)
    return result
