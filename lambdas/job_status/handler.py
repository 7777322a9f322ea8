"""Job status Lambda: one poll of the job run (the state machine loops poll + Wait)."""

from __future__ import annotations

from typing import Any

from ingestion.config import load_settings
from ingestion.log import logger
from ingestion.state import parse_state
from lambdas.job_status.service import check_job


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the execution state (`run`, `config.job_timeout_seconds`). Output: the
    `outcome` (`contracts.state.Outcome`), see check_job."""
    settings = load_settings()
    state = parse_state(event, "job_status")
    timeout = state.job_timeout_seconds or settings.job_timeout_minutes * 60
    logger.append_keys(ingest_id=state.ingest_id, job_run_id=state.run.job_run_id)
    result = check_job(settings, state.run, timeout_seconds=timeout)
    logger.info("job polled", extra={"status": result.status, "job_state": result.job_state})
    return result.to_dict()
