"""Per-table outcome metrics in CloudWatch's embedded metric format (EMF).

One JSON line in the function's log per recorded outcome: CloudWatch extracts the metrics
from the log (no PutMetricData call, so no IAM grant). Each value is recorded twice, by
table and over all tables, which the stack's alarms and dashboard read (infra/alerts.py).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable, Mapping
from typing import IO, Any

from contracts.state import AUDIT_FAILED, JOB_FAILED, PUBLISH_FAILED, PUBLISHED, REJECTED

NAMESPACE = "WAP/Ingest"  # infra.constants.METRICS_NAMESPACE, set as POWERTOOLS_METRICS_NAMESPACE
TABLE_DIMENSION = "Table"
# Outcome counts, by the ledger status they count.
OUTCOME_METRICS = {
    PUBLISHED: "Published",
    AUDIT_FAILED: "AuditFailed",
    REJECTED: "Rejected",
    JOB_FAILED: "JobFailed",
    PUBLISH_FAILED: "PublishFailed",
}
UPLOAD_TO_PUBLISH = "UploadToPublishSeconds"  # from the (first) upload to main holding it
JOB_DURATION = "JobDurationSeconds"  # from the job run's start to the recorded outcome
FILES_PER_RUN = "FilesPerRun"
LOAD_COST = "LoadCostUSD"  # what the run's EMR Serverless job cost (ingestion/job_cost.py)
LINEAGE_NOT_SENT = "LineageEventsNotSent"  # OpenLineage events given up after retries
# A table's health, measured by each garbage collection (lambdas/maintenance/): the data
# files a reader of main opens, their average size (compaction's target), and the bytes of
# unreferenced files old enough to delete.
DATA_FILES = "DataFilesOnMain"
AVERAGE_FILE_BYTES = "AverageDataFileBytes"
RECLAIMABLE_BYTES = "ReclaimableBytes"
TABLE_HEALTH_METRICS = (DATA_FILES, AVERAGE_FILE_BYTES, RECLAIMABLE_BYTES)
# Expected arrivals (issue 42), written by each sweep: how many tables (and datasets) with
# an `expect:` section are late, and per table the time since its last published drop.
LATE_TABLES = "LateTables"
SINCE_LAST_PUBLISH = "SecondsSinceLastPublish"

_UNITS = {
    UPLOAD_TO_PUBLISH: "Seconds",
    JOB_DURATION: "Seconds",
    LOAD_COST: "None",  # US dollars: CloudWatch has no currency unit
    AVERAGE_FILE_BYTES: "Bytes",
    RECLAIMABLE_BYTES: "Bytes",
    SINCE_LAST_PUBLISH: "Seconds",
}


def emit(
    values: Mapping[str, float],
    *,
    table: str | None = None,
    stream: IO[str] | None = None,
    total: bool = True,
) -> dict:
    """Write one EMF document with `values` (metric name -> value) and return it; with a
    table, each value counts for that table and (unless `total` is False: a gauge such as
    a file size does not add up over tables) for all tables together."""
    dimensions: list[list[str]] = (
        ([[TABLE_DIMENSION], []] if total else [[TABLE_DIMENSION]]) if table else [[]]
    )
    document: dict = {
        "_aws": {
            "Timestamp": int(time.time() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or NAMESPACE,
                    "Dimensions": dimensions,
                    "Metrics": [
                        {"Name": name, "Unit": _UNITS.get(name, "Count")} for name in values
                    ],
                }
            ],
        },
        **{name: value for name, value in values.items()},
    }
    if table:
        document[TABLE_DIMENSION] = table
    print(json.dumps(document), file=stream or _log_stream(), flush=True)
    return document


def _log_stream() -> IO[str]:
    """The function's log: the stream Powertools' logger writes to (its stdout on Lambda;
    the local stack points it at the command's log)."""
    from ingestion.log import logger

    handler = getattr(logger, "registered_handler", None)
    return getattr(handler, "stream", None) or sys.stdout


def outcome_values(
    status: str,
    *,
    files: int,
    created_at: str | None,
    job_started_at: str | None,
    finished_at: str | None,
    cost_usd: float | None = None,
) -> dict[str, float]:
    """The metrics of one recorded outcome: its count, the files of the run, the job's
    duration, its cost when EMR billed it and, when published, the time from upload to
    main."""
    from ingestion.naming import parse_iso

    values: dict[str, float] = {}
    if status in OUTCOME_METRICS:
        values[OUTCOME_METRICS[status]] = 1
    values[FILES_PER_RUN] = files
    if cost_usd is not None:
        values[LOAD_COST] = cost_usd

    def seconds(start: str | None) -> float | None:
        if not start or not finished_at:
            return None
        try:
            return max(0.0, (parse_iso(finished_at) - parse_iso(start)).total_seconds())
        except ValueError:
            return None

    if (duration := seconds(job_started_at)) is not None:
        values[JOB_DURATION] = duration
    if status == PUBLISHED and (latency := seconds(created_at)) is not None:
        values[UPLOAD_TO_PUBLISH] = latency
    return values


def table_health_values(
    *, data_files: int, data_bytes: int, reclaimable_bytes: int
) -> dict[str, float]:
    """One table's health metrics from a garbage collection's row (no average without data
    files: zero would read as a tiny file)."""
    values: dict[str, float] = {DATA_FILES: data_files, RECLAIMABLE_BYTES: reclaimable_bytes}
    if data_files:
        values[AVERAGE_FILE_BYTES] = data_bytes / data_files
    return values


def late_tables_values(arrivals: Iterable[Any]) -> dict[str, float]:
    """`LateTables` of one sweep: the subjects (`ingestion.arrivals.SubjectFreshness`)
    that are late."""
    return {LATE_TABLES: sum(1 for row in arrivals if row.late)}
