"""Start the next try of a job run that ended in an infrastructure error.

The job is idempotent on its branch (a snapshot stamped with the ingest id is
re-audited, not appended again), so the retry runs on the same branch with a
new clientToken and its own report URI.
"""

from __future__ import annotations

from contracts.state import ExecutionState, Run
from ingestion.config import Settings
from ingestion.exceptions import InvalidEventError
from ingestion.ingest import launch_job_run, run_fields
from ingestion.ledger import Ledger


def retry_job(settings: Settings, ledger: Ledger, state: ExecutionState) -> Run:
    """Start try `run.job_try + 1` of the current attempt; return the new run descriptor."""
    ingest_id, run = state.ingest_id, state.run
    record = ledger.get_ingest(ingest_id)
    if record is None:
        raise InvalidEventError(f"no ledger record for ingest {ingest_id}")
    new_run = launch_job_run(
        settings, ledger, record, attempt=run.attempt, job_try=run.job_try + 1, branch=run.branch
    )
    ledger.update_ingest(
        ingest_id,
        **run_fields(new_run),
        last_job_error=state.outcome.reason if state.outcome else None,
    )
    return new_run
