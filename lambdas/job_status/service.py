"""Poll the EMR Serverless job run of an ingest; when it is done, read its audit report."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from contracts.report import FAILED, SEVERITY_ERROR, AuditReport, ReportError
from contracts.state import JobUsage, Outcome, Run
from ingestion import aws
from ingestion import constants as c
from ingestion.config import Settings, job_retry_delay
from ingestion.exceptions import InvalidEventError
from ingestion.ingest import cancel_job_run
from ingestion.naming import iso, parse_iso, utcnow

_OUTCOME_STATUS = {
    c.REPORT_PASSED: c.JOB_PASSED,
    c.REPORT_FAILED: c.AUDIT_FAILED,
    c.REPORT_REJECTED: c.REJECTED,
    c.REPORT_ERROR: c.JOB_ERROR,
}


def check_job(
    settings: Settings, run: Run, *, timeout_seconds: int, now: datetime | None = None
) -> Outcome:
    """The state of `run` as the state machine needs it.

    Returns `{"status": "RUNNING"}` while the job runs; otherwise `status` is
    PASSED, AUDIT_FAILED, REJECTED, JOB_ERROR (an infrastructure failure to retry
    after `retry_in_seconds`) or JOB_FAILED, with `reason`, `report_uri`, `log_uri`,
    and for a written report `branch_hash`, `snapshot_id` and `rows_written`.
    The timeout counts from EMR's `startedAt` (time spent queued for capacity does
    not count), with an overall cap from submission of timeout + queue timeout; a run
    past either is cancelled and reported JOB_FAILED. Transient AWS errors raise
    `AwsUnavailableError` (polling is idempotent: the state machine retries it).
    """
    job_run_id, report_uri = run.job_run_id, run.report_uri
    try:
        submitted_at = parse_iso(run.started_at)
    except ValueError as exc:
        raise InvalidEventError(f"job_status input: run.started_at: {exc}") from exc
    job = _poll(settings, job_run_id)
    state = job["state"]
    if state in c.EMR_ACTIVE_STATES:
        overdue = _overdue(settings, job, submitted_at, timeout_seconds, now or utcnow())
        if overdue is None:
            return _about(run, state, Outcome(status=c.JOB_RUNNING))
        if cancel_job_run(settings, job_run_id):
            return _about(
                run,
                state,
                Outcome(
                    status=c.JOB_FAILED, reason=f"job run {job_run_id} {overdue} and was cancelled"
                ),
            )
        # It ended between the poll and the cancel: read its outcome instead.
        job = _poll(settings, job_run_id)
        state = job["state"]
    if state == c.EMR_SUCCESS:
        outcome = outcome_from_report(report_uri, run.branch)
    elif state == c.EMR_CANCELLED:
        details = job.get("stateDetails") or "no details given"
        return _about(
            run,
            state,
            Outcome(
                status=c.JOB_FAILED,
                reason=f"job run {job_run_id} was cancelled: {details}",
                job_usage=job_usage(job),
            ),
        )
    else:  # FAILED without a report: the job writes one for everything the input decides
        details = job.get("stateDetails") or "no details given"
        outcome = Outcome(
            status=c.JOB_ERROR, reason=f"job run {job_run_id} ended {state}: {details}"
        )
    if outcome.status == c.JOB_ERROR:
        outcome = _retry_or_fail(settings, outcome, run.job_try)
    return _about(run, state, replace(outcome, job_usage=job_usage(job)))


def _poll(settings: Settings, job_run_id: str) -> dict[str, Any]:
    """The EMR Serverless job run, as GetJobRun describes it now."""
    emr = aws.client("emr-serverless")
    return aws.call(
        f"poll job run {job_run_id}",
        emr.get_job_run,
        applicationId=settings.emr_application_id,
        jobRunId=job_run_id,
    )["jobRun"]


def job_usage(job: dict[str, Any]) -> JobUsage | None:
    """The billed resources and state times of an ended run, as GetJobRun gives them
    (`billedResourceUtilization` comes only once the run has ended); None while it runs."""
    if job.get("state") in c.EMR_ACTIVE_STATES:
        return None
    billed = job.get("billedResourceUtilization") or {}

    def hours(name: str) -> float | None:
        value = billed.get(name)
        return None if value is None else float(value)

    def at(name: str) -> str | None:
        value = job.get(name)
        return iso(value) if isinstance(value, datetime) else None

    return JobUsage(
        vcpu_hours=hours("vCPUHour"),
        memory_gb_hours=hours("memoryGBHour"),
        storage_gb_hours=hours("storageGBHour"),
        created_at=at("createdAt"),
        started_at=at("startedAt"),
        ended_at=at("endedAt"),
    )


def _about(run: Run, job_state: str, outcome: Outcome) -> Outcome:
    """`outcome` naming the run it is about (its id, EMR state, report and logs)."""
    return replace(
        outcome,
        job_run_id=run.job_run_id,
        job_state=job_state,
        report_uri=run.report_uri,
        log_uri=run.log_uri,
    )


def _overdue(
    settings: Settings,
    job: dict[str, Any],
    submitted_at: datetime,
    timeout_seconds: int,
    now: datetime,
) -> str | None:
    """Why an active run must be given up, or None while it may go on."""
    started = job.get("startedAt")
    if isinstance(started, datetime):
        running = (now - started).total_seconds()
        if running > timeout_seconds:
            return f"timed out after running {int(running)} s (limit {timeout_seconds} s)"
    waited = (now - submitted_at).total_seconds()
    cap = timeout_seconds + settings.job_queue_timeout_minutes * 60
    if waited > cap:
        return (
            f"had not finished {int(waited)} s after it was submitted (limit {cap} s: "
            f"{timeout_seconds} s running + {settings.job_queue_timeout_minutes} min queued)"
        )
    return None


def _retry_or_fail(settings: Settings, outcome: Outcome, job_try: int) -> Outcome:
    """An infrastructure error is retried on the same branch, a bounded number of times."""
    if job_try < settings.max_job_tries:
        return replace(outcome, retry_in_seconds=job_retry_delay(settings, job_try))
    return replace(
        outcome, status=c.JOB_FAILED, reason=f"{outcome.reason} (gave up after {job_try} tries)"
    )


def outcome_from_report(report_uri: str, branch: str | None) -> Outcome:
    """Status and the fields the next states need, from the report at `report_uri`.

    A report that does not match the contract (`contracts.report.AuditReport`, an
    unknown `report_version` included) ends the ingest JOB_FAILED, naming the field.
    """
    data = aws.read_json_s3(report_uri)
    if data is None:
        return Outcome(
            status=c.JOB_ERROR,
            reason=f"the job succeeded but wrote no audit report at {report_uri}",
        )
    try:
        report = AuditReport.from_dict(data, f"audit report {report_uri}")
    except ReportError as exc:
        return Outcome(status=c.JOB_FAILED, reason=str(exc))
    status = _OUTCOME_STATUS[report.outcome]
    if branch and report.branch != branch:
        return Outcome(
            status=c.JOB_FAILED,
            reason=f"audit report {report_uri} is for branch {report.branch!r}, not {branch!r}",
        )
    reason = report.reason
    if status == c.JOB_PASSED and not (report.branch_hash and report.snapshot_id is not None):
        return Outcome(
            status=c.JOB_FAILED,
            reason=f"audit report {report_uri} passed but does not name the branch "
            "hash and snapshot to publish",
        )
    if status == c.JOB_ERROR and not reason:
        reason = f"the job reported an infrastructure error ({report_uri})"
    if status == c.AUDIT_FAILED and not reason:
        failed = [
            check.name
            for check in report.checks
            if check.status == FAILED and check.severity == SEVERITY_ERROR
        ]
        reason = f"failed checks: {', '.join(failed)}"
    return Outcome(
        status=status,
        reason=reason,
        branch_hash=report.branch_hash,
        # A string: Iceberg snapshot ids are 64-bit, beyond a JSON double's exact range.
        snapshot_id=None if report.snapshot_id is None else str(report.snapshot_id),
        rows_written=report.rows_written,
        quarantined_rows=report.quarantined_rows or None,
        snapshots={table: str(snapshot) for table, snapshot in report.snapshots.items()}
        if report.tables
        else None,
    )
