"""Read the audit report (`contracts.report.AuditReport`) and pick out the checks worth
alerting on."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import unquote, urlsplit

from contracts.report import PASSED, SEVERITY_ERROR, AuditReport, CheckResult, ReportError
from ingestion.alerting.exceptions import AlertError

# A report with a few thousand checks and 5 samples each stays well below this.
MAX_REPORT_BYTES = 20 * 1024 * 1024
MAX_SAMPLES = 5


class ReportUnavailableError(AlertError):
    """The report could not be read or parsed; the alert goes out without check details."""


def load_report(uri: str, *, s3=None) -> AuditReport:
    """Load and check the report at an s3:// or file:// URI; raise ReportUnavailableError
    (also for a report that does not match the contract, naming the field)."""
    parts = urlsplit(uri)
    if parts.scheme == "s3":
        raw = _read_s3(parts.netloc, parts.path.lstrip("/"), s3)
    elif parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ReportUnavailableError(f"file URI with a host is not supported: {uri}")
        raw = _read_file(Path(unquote(parts.path)))
    else:
        raise ReportUnavailableError(f"report URI must be s3:// or file://, got {uri!r}")
    try:
        report = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ReportUnavailableError(f"report at {uri} is not valid JSON: {exc}") from exc
    try:
        return AuditReport.from_dict(report, f"audit report {uri}")
    except ReportError as exc:
        raise ReportUnavailableError(str(exc)) from exc


def _read_s3(bucket: str, key: str, s3) -> bytes:
    if not bucket or not key:
        raise ReportUnavailableError(f"incomplete S3 URI: s3://{bucket}/{key}")
    if s3 is None:
        from ingestion import aws

        s3 = aws.client("s3")
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        raw = body.read(MAX_REPORT_BYTES + 1)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "unknown")
        raise ReportUnavailableError(f"cannot read s3://{bucket}/{key}: {code}") from exc
    except BotoCoreError as exc:
        raise ReportUnavailableError(f"cannot read s3://{bucket}/{key}: {exc}") from exc
    if len(raw) > MAX_REPORT_BYTES:
        raise ReportUnavailableError(f"report s3://{bucket}/{key} exceeds {MAX_REPORT_BYTES} bytes")
    return raw


def _read_file(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise ReportUnavailableError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if len(raw) > MAX_REPORT_BYTES:
        raise ReportUnavailableError(f"report {path} exceeds {MAX_REPORT_BYTES} bytes")
    return raw


def failed_checks(report: AuditReport) -> list[CheckResult]:
    """Checks whose status is not `passed` (at most MAX_SAMPLES samples each), error
    severity first, then by violations."""
    failures = [
        replace(check, samples=check.samples[:MAX_SAMPLES])
        for check in report.checks
        if check.status != PASSED
    ]
    # Stable sort: report order within each group.
    failures.sort(key=lambda f: (f.severity != SEVERITY_ERROR, -(f.violations or 0)))
    return failures
