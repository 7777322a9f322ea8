"""Poll the EMR Serverless job run of an ingest; when it is done, read its audit report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lambdas.common import aws
from lambdas.common import constants as c
from lambdas.common.config import Settings, job_retry_delay
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.ingest import cancel_job_run
from lambdas.common.naming import parse_iso, utcnow

_OUTCOME_STATUS = {
    c.REPORT_PASSED: c.JOB_PASSED,
    c.REPORT_FAILED: c.AUDIT_FAILED,
    c.REPORT_REJECTED: c.REJECTED,
    c.REPORT_ERROR: c.JOB_ERROR,
}


def check_job(
    settings: Settings, run: dict[str, Any], *, timeout_seconds: int, now: datetime | None = None
) -> dict[str, Any]:
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
    try:
        job_run_id, report_uri = run["job_run_id"], run["report_uri"]
        submitted_at = parse_iso(run["started_at"])
        job_try = int(run.get("job_try") or 1)
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"job_status input lacks a valid run: {exc!r}") from exc
    emr = aws.client("emr-serverless")
    job = aws.call(f"poll job run {job_run_id}", emr.get_job_run,
                   applicationId=settings.emr_application_id, jobRunId=job_run_id)["jobRun"]
    state = job["state"]
    base = {
        "job_run_id": job_run_id,
        "job_state": state,
        "report_uri": report_uri,
        "log_uri": run.get("log_uri"),
    }
    if state in c.EMR_ACTIVE_STATES:
        overdue = _overdue(settings, job, submitted_at, timeout_seconds, now or utcnow())
        if overdue is None:
            return {**base, "status": c.JOB_RUNNING}
        if cancel_job_run(settings, job_run_id):
            return {**base, "status": c.JOB_FAILED,
                    "reason": f"job run {job_run_id} {overdue} and was cancelled"}
        # It ended between the poll and the cancel: read its outcome instead.
        job = aws.call(f"poll job run {job_run_id}", emr.get_job_run,
                       applicationId=settings.emr_application_id, jobRunId=job_run_id)["jobRun"]
        state = job["state"]
        base["job_state"] = state
    if state == c.EMR_SUCCESS:
        outcome = outcome_from_report(report_uri, run.get("branch"))
    elif state == c.EMR_CANCELLED:
        details = job.get("stateDetails") or "no details given"
        return {**base, "status": c.JOB_FAILED,
                "reason": f"job run {job_run_id} was cancelled: {details}"}
    else:  # FAILED without a report: the job writes one for everything the input decides
        details = job.get("stateDetails") or "no details given"
        outcome = {"status": c.JOB_ERROR,
                   "reason": f"job run {job_run_id} ended {state}: {details}"}
    if outcome["status"] == c.JOB_ERROR:
        outcome = _retry_or_fail(settings, outcome, job_try)
    return {**base, **outcome}


def _overdue(
    settings: Settings, job: dict[str, Any], submitted_at: datetime, timeout_seconds: int,
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
        return (f"had not finished {int(waited)} s after it was submitted (limit {cap} s: "
                f"{timeout_seconds} s running + {settings.job_queue_timeout_minutes} min queued)")
    return None


def _retry_or_fail(settings: Settings, outcome: dict[str, Any], job_try: int) -> dict[str, Any]:
    """An infrastructure error is retried on the same branch, a bounded number of times."""
    if job_try < settings.max_job_tries:
        return {**outcome, "retry_in_seconds": job_retry_delay(settings, job_try)}
    return {**outcome, "status": c.JOB_FAILED,
            "reason": f"{outcome['reason']} (gave up after {job_try} tries)"}


def outcome_from_report(report_uri: str, branch: str | None) -> dict[str, Any]:
    """Status and the fields the next states need, from the report at `report_uri`."""
    report = aws.read_json_s3(report_uri)
    if report is None:
        return {
            "status": c.JOB_ERROR,
            "reason": f"the job succeeded but wrote no audit report at {report_uri}",
        }
    outcome = report.get("outcome") if isinstance(report, dict) else None
    status = _OUTCOME_STATUS.get(outcome)
    if status is None:
        return {
            "status": c.JOB_FAILED,
            "reason": f"audit report {report_uri} has no valid outcome ({outcome!r})",
        }
    if branch and report.get("branch") not in (None, branch):
        return {
            "status": c.JOB_FAILED,
            "reason": f"audit report {report_uri} is for branch {report.get('branch')!r}, "
            f"not {branch!r}",
        }
    result = {
        "status": status,
        "reason": report.get("reason"),
        "branch_hash": report.get("branch_hash"),
        # A string: Iceberg snapshot ids are 64-bit, beyond a JSON double's exact range.
        "snapshot_id": None if report.get("snapshot_id") is None else str(report["snapshot_id"]),
        "rows_written": report.get("rows_written"),
    }
    if status == c.JOB_PASSED and not (result["branch_hash"] and result["snapshot_id"]):
        return {
            "status": c.JOB_FAILED,
            "reason": f"audit report {report_uri} passed but does not name the branch hash "
            "and snapshot to publish",
        }
    if status == c.JOB_ERROR and not result["reason"]:
        result["reason"] = f"the job reported an infrastructure error ({report_uri})"
    if status == c.AUDIT_FAILED and not result["reason"]:
        failed = [
            ch.get("name") or ch.get("kind")
            for ch in report.get("checks", [])
            if ch.get("status") == "failed" and ch.get("severity") == "error"
        ]
        result["reason"] = f"failed checks: {', '.join(map(str, failed))}"
    return result
