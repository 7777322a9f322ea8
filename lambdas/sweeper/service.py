"""Scheduled housekeeping: recover stuck table locks, delete old failed branches."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from lambdas.common import aws
from lambdas.common import constants as c
from lambdas.common.alerts import alert_event, send_alert_quietly
from lambdas.common.config import Settings
from lambdas.common.exceptions import WapError
from lambdas.common.ingest import release_and_start_next, start_or_fail
from lambdas.common.ledger import Ledger
from lambdas.common.log import logger
from lambdas.common.naming import iso, parse_iso, utcnow
from lambdas.common.nessie import NessieGateway

# A pending ingest holding a lock this long had its start interrupted.
STALE_START = timedelta(minutes=15)


@dataclass
class SweepReport:
    """What one sweep changed."""

    recovered_locks: list[str] = field(default_factory=list)
    restarted: list[str] = field(default_factory=list)
    discarded_branches: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def sweep(
    settings: Settings, ledger: Ledger, nessie: NessieGateway, now: datetime | None = None
) -> SweepReport:
    """Recover every stuck lock, then discard failed branches past the retention period."""
    now = now or utcnow()
    report = SweepReport()
    for lock in ledger.list_locks():
        if lock.active:
            try:
                _recover_lock(
                    settings,
                    ledger,
                    nessie,
                    lock.table,
                    lock.active,
                    lock.active_since,
                    now,
                    report,
                )
            except WapError as exc:
                report.errors.append(f"{lock.table}: {exc}")
    cutoff = now - timedelta(days=settings.branch_retention_days)
    for record in ledger.list_ingests(statuses=c.FAILED_STATUSES):
        finished = record.get("finished_at") or record.get("updated_at")
        if not record.get("branch") or record.get("branch_deleted_at") or not finished:
            continue
        if parse_iso(finished) > cutoff:
            continue
        try:
            nessie.delete_branch(record["branch"])
        except WapError as exc:
            report.errors.append(f"{record['branch']}: {exc}")
            continue
        ledger.update_ingest(
            record["ingest_id"],
            {
                "status": c.DISCARDED,
                "previous_status": record["status"],
                "branch_deleted_at": iso(now),
                "discard_reason": f"branch older than {settings.branch_retention_days} days",
            },
            only_if_status={record["status"]},
        )
        report.discarded_branches.append(record["branch"])
    return report


def _recover_lock(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieGateway,
    table: str,
    active: str,
    active_since: str | None,
    now: datetime,
    report: SweepReport,
) -> None:
    record = ledger.get_ingest(active)
    status = record.get("status") if record else None
    if record is None or status in c.TERMINAL_STATUSES:
        # Finish recorded the outcome but died before freeing the table.
        release_and_start_next(settings, ledger, nessie, table, active)
        report.recovered_locks.append(table)
        return
    if status in c.PENDING_STATUSES:
        if active_since and now - parse_iso(active_since) < STALE_START:
            return
        start_or_fail(settings, ledger, nessie, record)
        report.restarted.append(active)
        return
    execution_state = _execution_status(record.get("execution_arn"))
    if execution_state == "RUNNING":
        return
    reason = (
        f"execution {record.get('execution_arn')} ended {execution_state} without "
        "recording an outcome; the sweeper freed the table"
    )
    _cancel_job_run(settings, record.get("job_run_id"))
    if ledger.update_ingest(
        active,
        {"status": c.JOB_FAILED, "error": reason, "finished_at": iso(now)},
        only_if_status={c.RUNNING},
    ):
        fresh: dict[str, Any] = ledger.get_ingest(active) or record
        send_alert_quietly(alert_event(fresh, outcome=c.JOB_FAILED, reason=reason))
    release_and_start_next(settings, ledger, nessie, table, active)
    report.recovered_locks.append(table)
    logger.warning(
        "stuck table lock recovered",
        extra={"table": table, "ingest_id": active, "execution_state": execution_state},
    )


def _execution_status(execution_arn: str | None) -> str:
    if not execution_arn:
        return "MISSING"
    sfn = aws.client("stepfunctions")
    try:
        return sfn.describe_execution(executionArn=execution_arn)["status"]
    except sfn.exceptions.ExecutionDoesNotExist:
        return "MISSING"


def _cancel_job_run(settings: Settings, job_run_id: str | None) -> None:
    """Stop an orphaned job run (nobody will read its report); best effort."""
    if not job_run_id:
        return
    emr = aws.client("emr-serverless")
    try:
        state = emr.get_job_run(applicationId=settings.emr_application_id, jobRunId=job_run_id)[
            "jobRun"
        ]["state"]
        if state in c.EMR_ACTIVE_STATES:
            emr.cancel_job_run(applicationId=settings.emr_application_id, jobRunId=job_run_id)
    except Exception:
        logger.exception("could not cancel orphaned job run", extra={"job_run_id": job_run_id})
