"""Finish an ingest: record its outcome, free the table, start the next queued ingest."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from contracts.alert import AlertEvent
from contracts.state import ExecutionState, FinishResult
from ingestion import constants as c
from ingestion.alerts import alerts_on
from ingestion.batching import failing_files, is_batch, split_reason
from ingestion.config import Settings
from ingestion.exceptions import InvalidEventError
from ingestion.ingest import (
    cancel_job_run,
    release_all_and_start_next,
    run_from_fields,
)
from ingestion.job_cost import usage_fields
from ingestion.ledger import IngestRecord, Ledger
from ingestion.lifecycle import alert_of, settle
from ingestion.log import logger
from ingestion.naming import iso, utcnow
from ingestion.nessie import NessieClient
from ingestion.published import delete_branch_quietly, main_holds_ingest

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


def final_status(state: ExecutionState) -> tuple[str, str | None]:
    """(status, reason) of an execution state arriving at Finish."""
    status = state.outcome.status if state.outcome else None
    reason = (state.outcome.reason if state.outcome else None) or reason_from_error(state.error)
    if status not in _FINAL:
        reason = reason or f"the state machine ended the ingest in state {status!r}"
        status = c.JOB_FAILED
    return status, None if status == c.PUBLISHED else reason


def state_from_ledger(raw: Any, ledger: Ledger, problem: Exception) -> ExecutionState:
    """The state of an execution whose own state breaks the contract, rebuilt from its ledger
    record, ending in the contract error: Finish must still record an outcome and free the
    table. Raises InvalidEventError when the raw state does not even name a known ingest."""
    ingest_id = raw.get("ingest_id") if isinstance(raw, dict) else None
    record = ledger.get_ingest(ingest_id) if isinstance(ingest_id, str) else None
    run = run_from_fields(record) if record is not None else None
    if record is None or run is None or not record.table:
        raise InvalidEventError(f"finish input names no started ingest: {problem}") from problem
    return ExecutionState(
        ingest_id=record.ingest_id,
        table=record.table,
        run=run,
        error={"Error": "InvalidEventError", "Cause": str(problem)},
    )


def finish(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    state: ExecutionState,
    execution_arn: str | None,
) -> FinishResult:
    """Record the outcome, hand the table to the next queued ingest; return the alert to send.

    A failure is checked before it is recorded: when main already holds the ingest's
    audited snapshot, the ingest is PUBLISHED (and its branch deleted, best effort).
    """
    ingest_id, table, run, outcome = state.ingest_id, state.table, state.run, state.outcome
    status, reason = final_status(state)
    record = ledger.get_ingest(ingest_id)
    branch_deleted = bool(outcome and outcome.branch_deleted)
    if status in (c.JOB_FAILED, c.PUBLISH_FAILED) and main_holds_ingest(
        nessie,
        table,
        record,
        outcome.snapshot_id if outcome else None,
        outcome.snapshots if outcome else None,
    ):
        logger.warning(
            "recorded as published: main holds the audited snapshot",
            extra={"ingest_id": ingest_id, "would_have_been": status},
        )
        status, reason = c.PUBLISHED, None
        branch_deleted = delete_branch_quietly(nessie, run.branch)
    if is_batch(record) and record.all_or_nothing and status != c.PUBLISHED:
        named = failing_files(
            replace(record, report_uri=(outcome and outcome.report_uri) or run.report_uri)
        )
        reason = f"{reason}; {named}" if reason and named else reason or named
    elif is_batch(record) and status in (c.AUDIT_FAILED, c.REJECTED):
        # Its files are judged one by one when the table is handed on (settle_members).
        status, reason = c.SPLIT, split_reason(status, reason)
        # Its branch holds the failing files' rows; each file that failed runs again alone.
        branch_deleted = delete_branch_quietly(nessie, run.branch)
    elif status == c.REJECTED and wrote_nothing(outcome):
        # Nothing to inspect, nothing that could be published: no branch left behind (the
        # ledger keeps the record, branch name included). One the job wrote to stays open.
        branch_deleted = delete_branch_quietly(nessie, run.branch)
    if status == c.JOB_FAILED:
        # The ledger names the newest run (a retry or rebase may have started one that the
        # state never saw, if the step that started it then failed).
        for job_run_id in {run.job_run_id, record.job_run_id if record else None} - {None}:
            cancel_job_run_quietly(settings, job_run_id)
    fields = {
        "execution_arn": execution_arn,
        "report_uri": (outcome and outcome.report_uri) or run.report_uri,
        "log_uri": (outcome and outcome.log_uri) or run.log_uri,
        "branch": run.branch,
        "branch_hash": outcome.branch_hash if outcome else None,
        "snapshot_id": outcome.snapshot_id if outcome else None,
        "rows_written": outcome.rows_written if outcome else None,
        "quarantined_rows": outcome.quarantined_rows if outcome else None,
        # What the ended job run cost and when EMR submitted, ran and ended it.
        **usage_fields(settings, outcome.job_usage if outcome else None),
    }
    now = utcnow()
    # Else the sweeper retries the delete (a failed one's when its retention ends).
    if status in (c.PUBLISHED, c.SPLIT, c.REJECTED) and branch_deleted:
        fields["branch_deleted_at"] = iso(now)
    # Settled once (a retried invocation finds it recorded: counted once); the alert is
    # the state machine's to send (its Alert task retries the delivery).
    alerts: list[AlertEvent] = []
    settled = settle(
        settings,
        ledger,
        record or IngestRecord(ingest_id=ingest_id, table=table),
        status,
        reason,
        only_if_status={c.RUNNING, c.RECEIVED, c.QUEUED},
        # A publish is alerted only with rows quarantined (a warning), a split run by its files.
        alert=status != c.SPLIT and alerts_on(status, fields["quarantined_rows"]),
        deliver=alerts.append,
        fields={k: v for k, v in fields.items() if v is not None},
        at=now,
        job_started_at=run.started_at,
    )
    record = (
        settled or ledger.get_ingest(ingest_id) or IngestRecord(ingest_id=ingest_id, table=table)
    )
    next_id = release_all_and_start_next(settings, ledger, nessie, record)
    alert = alerts[0] if alerts else None
    if (
        settled is None
        and record.status != c.SPLIT
        and alerts_on(record.status or status, record.quarantined_rows)
    ):
        # Recorded by an earlier invocation that failed before returning: its alert was
        # never sent.
        alert = alert_of(record, record.status or status, record.error or reason, execution_arn)
    return FinishResult(status=record.status or status, alert=alert, next_ingest_id=next_id)


def wrote_nothing(outcome: Any) -> bool:
    """Whether the job committed nothing to its branch (no snapshot, no rows)."""
    return outcome is None or (outcome.snapshot_id is None and not outcome.rows_written)


def cancel_job_run_quietly(settings: Settings, job_run_id: str | None) -> None:
    """An ingest given up must not leave its job writing to the branch (best effort: a
    run that already ended is refused by EMR, which is fine)."""
    if not job_run_id:
        return
    try:
        cancel_job_run(settings, job_run_id)
    except Exception:
        logger.exception("could not cancel the job run", extra={"job_run_id": job_run_id})
