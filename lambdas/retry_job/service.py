"""Start the next try of a job run that ended in an infrastructure error.

The job is idempotent on its branch (a snapshot stamped with the ingest id is
re-audited, not appended again), so the retry runs on the same branch with a
new clientToken and its own report URI.
"""

from __future__ import annotations

from typing import Any

from lambdas.common.config import Settings
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.ingest import launch_job_run, run_fields
from lambdas.common.ledger import Ledger


def retry_job(settings: Settings, ledger: Ledger, state: dict[str, Any]) -> dict[str, Any]:
    """Start try `run.job_try + 1` of the current attempt; return the new run descriptor."""
    try:
        ingest_id, run = state["ingest_id"], state["run"]
        attempt, branch = int(run["attempt"]), run["branch"]
        job_try = int(run.get("job_try") or 1) + 1
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"retry_job input: {exc!r}") from exc
    record = ledger.get_ingest(ingest_id)
    if record is None:
        raise InvalidEventError(f"no ledger record for ingest {ingest_id}")
    new_run = launch_job_run(settings, ledger, record, attempt=attempt, job_try=job_try,
                             branch=branch)
    ledger.update_ingest(ingest_id, {
        **run_fields(new_run),
        "last_job_error": (state.get("outcome") or {}).get("reason"),
    })
    return new_run
