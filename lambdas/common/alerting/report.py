"""Read the audit report (docs/contracts.md) and pick out the checks worth alerting on."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from lambdas.common.alerting.exceptions import AlertError

# A report with a few thousand checks and 5 samples each stays well below this.
MAX_REPORT_BYTES = 20 * 1024 * 1024
MAX_SAMPLES = 5


class ReportUnavailableError(AlertError):
    """The report could not be read or parsed; the alert goes out without check details."""


@dataclass(frozen=True)
class CheckFailure:
    """One check that did not pass, as the report states it."""

    name: str
    kind: str
    columns: tuple[str, ...]
    severity: str
    status: str  # "failed" or "error" (the check itself could not be evaluated)
    violations: int | None
    threshold: Any
    samples: tuple[Any, ...]


def load_report(uri: str, *, s3=None) -> dict[str, Any]:
    """Load the report JSON from an s3:// or file:// URI; raise ReportUnavailableError."""
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
    if not isinstance(report, dict):
        raise ReportUnavailableError(f"report at {uri} is not a JSON object")
    return report


def _read_s3(bucket: str, key: str, s3) -> bytes:
    if not bucket or not key:
        raise ReportUnavailableError(f"incomplete S3 URI: s3://{bucket}/{key}")
    if s3 is None:
        from lambdas.common import aws

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


def failed_checks(report: dict[str, Any]) -> list[CheckFailure]:
    """Checks whose status is not `passed`, error severity first, then by violations."""
    checks = report.get("checks")
    if not isinstance(checks, list):
        return []
    failures = []
    for index, check in enumerate(checks):
        if not isinstance(check, dict) or check.get("status") == "passed":
            continue
        columns = check.get("columns")
        samples = check.get("samples")
        violations = check.get("violations")
        failures.append(
            CheckFailure(
                name=str(check.get("name") or f"check #{index + 1}"),
                kind=str(check.get("kind") or "unknown"),
                columns=tuple(str(c) for c in columns) if isinstance(columns, list) else (),
                severity=str(check.get("severity") or "error"),
                status=str(check.get("status") or "unknown"),
                violations=violations if isinstance(violations, int) else None,
                threshold=check.get("threshold"),
                samples=tuple(samples[:MAX_SAMPLES]) if isinstance(samples, list) else (),
            )
        )
    # Stable sort: report order within each group.
    failures.sort(key=lambda f: (f.severity != "error", -(f.violations or 0)))
    return failures
