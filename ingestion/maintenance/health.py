"""Each table's health as a garbage collection measured it: CloudWatch embedded metrics (one
document per table) and the summary the dashboard's table page reads (the latest run's).

The summary lives beside the audit reports (`<reports prefix>maintenance/gc-latest.json`):
no table is named `maintenance` there, tables are `ns.table`.
"""

from __future__ import annotations

import json
from typing import IO, Any

from ingestion import metrics
from ingestion.maintenance.gc import GcReport
from ingestion.naming import split_s3_uri

SUMMARY_NAME = "maintenance/gc-latest.json"  # under the reports prefix
SUMMARY_VERSION = 1


def summary_uri(reports_prefix: str) -> str:
    """Where the latest collection's summary is kept (`s3://<artifacts>/reports/...`)."""
    return f"{reports_prefix.rstrip('/')}/{SUMMARY_NAME}"


def summary(report: GcReport) -> dict[str, Any]:
    """The run and, per table (or unattributed warehouse directory), data files on main,
    their bytes and average size, and what is reclaimable (or, when deleting, was deleted).
    A run its time budget cut short (`complete` false) swept nothing: what is reclaimable
    is not known then (None), the next run continues its mark."""
    measured = report.complete
    tables = {}
    for row in sorted(report.tables.values(), key=lambda t: t.table):
        tables[row.table] = {
            "data_files": row.data_files,
            "data_bytes": row.data_bytes,
            "average_file_bytes": row.data_bytes // row.data_files if row.data_files else None,
            "reclaimable_files": row.garbage_files if measured else None,
            "reclaimable_bytes": row.garbage_bytes if measured else None,
            "deleted_bytes": row.deleted_bytes,
        }
    return {
        "summary_version": SUMMARY_VERSION,
        "collected_at": report.started.isoformat(),
        "deleted": report.deleted,
        "complete": report.complete,
        "reclaimable_bytes": report.garbage_bytes if measured else None,
        "tables": tables,
    }


def keep_summary(report: GcReport, s3: Any, reports_prefix: str) -> None:
    """Put the run's `summary` where the dashboard reads it (`summary_uri`); raises the S3
    client's error when it cannot be put."""
    bucket, key = split_s3_uri(summary_uri(reports_prefix))
    s3.put_object(
        Bucket=bucket,
        Key=key,
        ContentType="application/json",
        Body=json.dumps(summary(report)).encode(),
    )


def emit_metrics(report: GcReport, *, stream: IO[str] | None = None) -> list[dict]:
    """One EMF document per table (by `Table` only: sizes and counts of different tables do
    not add up to a meaningful total), then the warehouse's reclaimable bytes over all. A
    run cut short (`report.complete` false) measured no reclaimable bytes: none are written
    (a zero would read as a clean lake)."""
    documents = []
    for row in sorted(report.tables.values(), key=lambda t: t.table):
        values = metrics.table_health_values(
            data_files=row.data_files,
            data_bytes=row.data_bytes,
            reclaimable_bytes=row.garbage_bytes,
        )
        if not report.complete:
            values.pop(metrics.RECLAIMABLE_BYTES)
        documents.append(metrics.emit(values, table=row.table, total=False, stream=stream))
    if report.complete:
        documents.append(
            metrics.emit({metrics.RECLAIMABLE_BYTES: report.garbage_bytes}, stream=stream)
        )
    return documents
