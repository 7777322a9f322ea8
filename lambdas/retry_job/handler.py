"""Retry-job Lambda: the next try of a job run after an infrastructure error."""

from __future__ import annotations

from typing import Any

from ingestion.config import load_settings
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.state import parse_state
from lambdas.retry_job.service import retry_job


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the execution state after JOB_ERROR. Output: the new `run` descriptor."""
    settings = load_settings()
    state = parse_state(event, "retry_job")
    logger.append_keys(ingest_id=state.ingest_id)
    run = retry_job(settings, Ledger(settings.ledger_table, lease=settings.lock_lease), state)
    logger.info("job retried", extra={"job_try": run.job_try, "job_run_id": run.job_run_id})
    return run.to_dict()
