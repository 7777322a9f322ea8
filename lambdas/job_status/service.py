"""Poll the EMR Serverless job run of an ingest; when it is done, read its audit report."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from lambdas.common import aws
from lambdas.common import constants as c
from lambdas.common.config import Settings
from lambdas.common.exceptions import InvalidEventError
from lambdas.common.naming import parse_iso, utcnow

_OUTCOME_STATUS = {
    c.REPORT_PASSED: c.JOB_PASSED,
    c.REPORT_FAILED: c.AUDIT_FAILED,
    c.REPORT_REJECTED: c.REJECTED,
}


def check_job(
    settings: Settings, run: dict[str, Any], *, timeout_seconds: int, now: datetime | None = None
) -> dict[str, Any]:
    """The state of `run` as the state machine needs it.

    Returns `{"status": "RUNNING"}` while the job runs; otherwise `status` is
    PASSED, AUDIT_FAILED, REJECTED or JOB_FAILED with `reason`, `report_uri`,
    `log_uri`, and for a written report `branch_hash` and `rows_written`.
    A job running longer than `timeout_seconds` is cancelled and reported JOB_FAILED.
    """
    try:
        job_run_id, report_uri = run["job_run_id"], run["report_uri"]
        started_at = parse_iso(run["started_at"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidEventError(f"job_status input lacks a valid run: {exc!r}") from exc
    emr = aws.client("emr-serverless")
    job = emr.get_job_run(applicationId=settings.emr_application_id, jobRunId=job_run_id)["jobRun"]
    state = job["state"]
    base = {
        "job_run_id": job_run_id,
        "job_state": state,
        "report_uri": report_uri,
        "log_uri": run.get("log_uri"),
    }
    if state in c.EMR_ACTIVE_STATES:
        elapsed = ((now or utcnow()) - started_at).total_seconds()
        if elapsed <= timeout_seconds:
            return {**base, "status": c.JOB_RUNNING}
        emr.cancel_job_run(applicationId=settings.emr_application_id, jobRunId=job_run_id)
        return {
            **base,
            "status": c.JOB_FAILED,
            "reason": f"job run {job_run_id} timed out after {int(elapsed)} s "
            f"(limit {timeout_seconds} s) and was cancelled",
        }
    if state == c.EMR_SUCCESS:
        return {**base, **outcome_from_report(report_uri, run.get("branch"))}
    details = job.get("stateDetails") or "no details given"
    if state == c.EMR_CANCELLED:
        return {
            **base,
            "status": c.JOB_FAILED,
            "reason": f"job run {job_run_id} was cancelled: {details}",
        }
    return {
        **base,
        "status": c.JOB_FAILED,
        "reason": f"job run {job_run_id} ended {state}: {details}",
    }


def outcome_from_report(report_uri: str, branch: str | None) -> dict[str, Any]:
    """Status and the fields the next states need, from the report at `report_uri`."""
    report = aws.read_json_s3(report_uri)
    if report is None:
        return {
            "status": c.JOB_FAILED,
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
        "rows_written": report.get("rows_written"),
    }
    if status == c.JOB_PASSED and not result["branch_hash"]:
        return {
            "status": c.JOB_FAILED,
            "reason": f"audit report {report_uri} passed but names no branch hash to publish",
        }
    if status == c.AUDIT_FAILED and not result["reason"]:
        failed = [
            ch.get("name") or ch.get("kind")
            for ch in report.get("checks", [])
            if ch.get("status") == "failed" and ch.get("severity") == "error"
        ]
        result["reason"] = f"failed checks: {', '.join(map(str, failed))}"
    return result
