"""Job status Lambda: one poll of the job run (the state machine loops poll + Wait)."""

from __future__ import annotations

from typing import Any

from lambdas.common.config import load_settings
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.log import logger
from lambdas.job_status.service import check_job


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the execution state (`run`, `config.job_timeout_seconds`). Output: see check_job."""
    settings = load_settings()
    try:
        run = event["run"]
        timeout = int(
            event.get("config", {}).get("job_timeout_seconds") or settings.job_timeout_minutes * 60
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"job_status input: {exc!r}") from exc
    logger.append_keys(ingest_id=event.get("ingest_id"), job_run_id=run.get("job_run_id"))
    result = check_job(settings, run, timeout_seconds=timeout)
    logger.info("job polled", extra={"status": result["status"], "job_state": result["job_state"]})
    return result
