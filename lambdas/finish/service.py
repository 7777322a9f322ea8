"""Finish an ingest: record its outcome, free the table, start the next queued ingest."""

from __future__ import annotations

import json
from typing import Any

from lambdas.common import constants as c
from lambdas.common.alerts import alert_event
from lambdas.common.config import Settings
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.ingest import release_and_start_next
from lambdas.common.ledger import Ledger
from lambdas.common.naming import iso, utcnow
from lambdas.common.nessie import NessieGateway

_FINAL = frozenset({c.PUBLISHED, c.AUDIT_FAILED, c.REJECTED, c.JOB_FAILED, c.PUBLISH_FAILED})


def reason_from_error(error: Any) -> str | None:
    """A readable reason from a Step Functions Catch `{"Error", "Cause"}` object."""
    if not isinstance(error, dict):
        return None
    name, cause = error.get("Error") or "Error", error.get("Cause") or ""
    try:  # Lambda errors carry the Python exception as JSON
        parsed = json.loads(cause)
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            cause = parsed["errorMessage"]
    except (TypeError, ValueError):
        pass
    return f"{name}: {cause}" if cause else name


def final_status(state: dict[str, Any]) -> tuple[str, str | None]:
    """(status, reason) of an execution state arriving at Finish."""
    outcome = state.get("outcome") or {}
    status = outcome.get("status")
    reason = outcome.get("reason") or reason_from_error(state.get("error"))
    if status not in _FINAL:
        reason = reason or f"the state machine ended the ingest in state {status!r}"
        status = c.JOB_FAILED
    return status, None if status == c.PUBLISHED else reason


def finish(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieGateway,
    state: dict[str, Any],
    execution_arn: str | None,
) -> dict[str, Any]:
    """Record the outcome, hand the table to the next queued ingest; return the alert to send."""
    try:
        ingest_id, table = state["ingest_id"], state["table"]
    except (KeyError, TypeError) as exc:
        raise InvalidEventError(f"finish input: {exc!r}") from exc
    run = state.get("run") or {}
    outcome = state.get("outcome") or {}
    status, reason = final_status(state)
    fields = {
        "status": status,
        "error": reason,
        "finished_at": iso(utcnow()),
        "execution_arn": execution_arn,
        "report_uri": outcome.get("report_uri") or run.get("report_uri"),
        "log_uri": outcome.get("log_uri") or run.get("log_uri"),
        "branch": run.get("branch"),
        "branch_hash": outcome.get("branch_hash"),
        "rows_written": outcome.get("rows_written"),
    }
    if status == c.PUBLISHED:
        fields["branch_deleted_at"] = fields["finished_at"]
    ledger.update_ingest(
        ingest_id,
        {k: v for k, v in fields.items() if v is not None},
        only_if_status={c.RUNNING, c.RECEIVED, c.QUEUED},
    )
    record = ledger.get_ingest(ingest_id) or {"ingest_id": ingest_id, "table": table}
    next_id = release_and_start_next(settings, ledger, nessie, table, ingest_id)
    alert = None
    if record.get("status") != c.PUBLISHED:
        alert = alert_event(
            record,
            outcome=record.get("status", status),
            reason=record.get("error") or reason,
            execution_arn=execution_arn,
        )
    return {
        "status": record.get("status", status),
        "alert_needed": alert is not None,
        "alert": alert,
        "next_ingest_id": next_id,
    }
