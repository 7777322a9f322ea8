"""The trigger's work: validate, record, dedupe, then start or queue the ingest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lambdas.common import aws
from lambdas.common import constants as c
from lambdas.common.alerts import alert_event, send_alert_quietly
from lambdas.common.config import Settings
from lambdas.common.ingest import start_or_fail
from lambdas.common.ledger import LOCK_QUEUED, Ledger
from lambdas.common.naming import (
    Unroutable,
    ingest_id,
    is_marker,
    route_key,
    s3_uri,
    unsupported_extension,
)
from lambdas.common.nessie import NessieGateway
from lambdas.trigger.events import ObjectCreated

IGNORED = "IGNORED"
DUPLICATE = "DUPLICATE"
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class TriggerResult:
    """What the trigger did with one object."""

    key: str
    action: str  # IGNORED | DUPLICATE | REJECTED | QUEUED | RUNNING | <terminal status>
    ingest_id: str | None = None
    table: str | None = None
    reason: str | None = None


def rejection_reason(obj: ObjectCreated, s3: Any = None) -> str | None:
    """Why the object cannot be ingested, or None. Reads at most 8 bytes of the object."""
    try:
        route_key(obj.key)
    except Unroutable as exc:
        return str(exc)
    reason = unsupported_extension(obj.key)
    if reason:
        return reason
    if obj.size == 0:
        return f"empty file (0 bytes): {obj.key}"
    if s3 is not None:
        return _magic_bytes_problem(obj, s3)
    return None


def _magic_bytes_problem(obj: ObjectCreated, s3: Any) -> str | None:
    """A parquet file starts and ends with `PAR1`; catch renamed CSVs before starting Spark."""
    extra = {"VersionId": obj.version_id} if obj.version_id else {}
    try:
        head = s3.get_object(Bucket=obj.bucket, Key=obj.key, Range="bytes=0-3", **extra)
        tail = s3.get_object(Bucket=obj.bucket, Key=obj.key, Range="bytes=-4", **extra)
        head_bytes, tail_bytes = head["Body"].read(), tail["Body"].read()
    except s3.exceptions.NoSuchKey:
        return f"source object {s3_uri(obj.bucket, obj.key)} no longer exists"
    if len(head_bytes) < 4 or len(tail_bytes) < 4 or (obj.size is not None and obj.size < 12):
        return f"not a parquet file: {obj.key} is too short to hold a parquet footer"
    if head_bytes != PARQUET_MAGIC or tail_bytes != PARQUET_MAGIC:
        return (
            f"not a parquet file: {obj.key} does not start and end with the parquet "
            "magic bytes PAR1 (is it a CSV or another format renamed .parquet?)"
        )
    return None


def handle_object(
    obj: ObjectCreated, settings: Settings, ledger: Ledger, nessie: NessieGateway, s3: Any = None
) -> TriggerResult:
    """Ingest one created object exactly once; safe to call again with the same object."""
    if is_marker(obj.key):
        return TriggerResult(obj.key, IGNORED, reason="marker file")
    iid = ingest_id(obj.bucket, obj.key, obj.version)
    record = ledger.get_ingest(iid)
    if record is None:
        record = _record_new(iid, obj, ledger, s3 if s3 is not None else aws.client("s3"))
    status = record["status"]
    if status not in c.PENDING_STATUSES:  # rejected, or already started by an earlier event
        action = c.REJECTED if status == c.REJECTED else DUPLICATE
        return TriggerResult(obj.key, action, iid, record.get("table"), record.get("error"))
    table = record["table"]
    if ledger.acquire_or_enqueue(table, iid) == LOCK_QUEUED:
        ledger.update_ingest(iid, {"status": c.QUEUED}, only_if_status={c.RECEIVED})
        return TriggerResult(obj.key, c.QUEUED, iid, table)
    started = start_or_fail(settings, ledger, nessie, ledger.get_ingest(iid) or record)
    return TriggerResult(obj.key, started["status"], iid, table)


def _record_new(iid: str, obj: ObjectCreated, ledger: Ledger, s3: Any) -> dict[str, Any]:
    """Record the ingest (conditional put: the first invocation wins); reject bad input."""
    reason = rejection_reason(obj, s3)
    try:
        table = route_key(obj.key).qualified
    except Unroutable:
        table = None
    fields = {
        "table": table,
        "bucket": obj.bucket,
        "key": obj.key,
        "source_uri": s3_uri(obj.bucket, obj.key),
        "object_version": obj.version,
        "size": obj.size,
        "attempts": 0,
        "status": c.REJECTED if reason else c.RECEIVED,
        "error": reason,
    }
    created = ledger.create_ingest(iid, fields)
    record = ledger.get_ingest(iid)
    assert record is not None
    if created and reason:
        send_alert_quietly(alert_event(record, outcome=c.REJECTED, reason=reason))
    return record
