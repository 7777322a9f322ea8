"""Start the next try of a job run that ended in an infrastructure error.

The job is idempotent on its branch (a snapshot stamped with the ingest id is
re-audited, not appended again), so the retry runs on the same branch with a
new clientToken and its own report URI.
"""

from __future__ import annotations

from typing import Any

from lambdas.common.config import Settings
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.ingest import job_log_uri, reader_uri, run_descriptor, start_job_run
from lambdas.common.ledger import Ledger
from lambdas.common.naming import iso, utcnow


def retry_job(settings: Settings, ledger: Ledger, state: dict[str, Any]) -> dict[str, Any]:
    """Start try `run.job_try + 1` of the current attempt; return the new run descriptor."""
    try:
        ingest_id, table, run = state["ingest_id"], state["table"], state["run"]
        attempt, branch = int(run["attempt"]), run["branch"]
        job_try = int(run.get("job_try") or 1) + 1
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"retry_job input: {exc!r}") from exc
    record = ledger.get_ingest(ingest_id)
    if record is None:
        raise InvalidEventError(f"no ledger record for ingest {ingest_id}")
    report_uri = settings.report_uri(table, ingest_id, attempt, job_try)
    ledger.renew_lease(table, ingest_id)
    job_run_id = start_job_run(
        settings,
        ingest_id=ingest_id,
        attempt=attempt,
        job_try=job_try,
        source_uri=reader_uri(record),
        table=table,
        branch=branch,
        report_uri=report_uri,
    )
    started_at = ledger.set_once(ingest_id, f"job_started_at_{attempt}_{job_try}", iso(utcnow()))
    log_uri = job_log_uri(settings, ingest_id, job_run_id)
    ledger.update_ingest(ingest_id, {
        "job_run_id": job_run_id,
        "job_tries": job_try,
        "report_uri": report_uri,
        "log_uri": log_uri,
        "last_job_error": (state.get("outcome") or {}).get("reason"),
    })
    return run_descriptor(attempt=attempt, job_try=job_try, branch=branch,
                          job_run_id=job_run_id, report_uri=report_uri, log_uri=log_uri,
                          started_at=started_at)
