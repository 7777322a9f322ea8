"""The trigger's work: validate, record, dedupe, then start or queue the ingest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from contracts.config_text import CONFIG_ERROR
from contracts.dataset_config import DATASETS_PREFIX, dataset_drop
from contracts.formats import (
    PARQUET,
    SNIFF_BYTES,
    SourceFormat,
    content_problem,
    format_of,
    unsupported_format_text,
)
from contracts.layout import MANIFEST_MARKER, file_name, is_dataset_marker, is_marker
from ingestion import aws
from ingestion import constants as c
from ingestion.batching import (
    Intake,
    reject_for_config,
    table_intake,
    unknown_table_reason,
)
from ingestion.config import Settings
from ingestion.exceptions import SourceVersionGoneError, UnroutableKeyError
from ingestion.ingest import start_or_fail
from ingestion.ledger import LOCK_NOT_PENDING, LOCK_QUEUED, Changes, IngestRecord, Ledger, Record
from ingestion.lifecycle import settle, settle_new, share
from ingestion.naming import ingest_id, iso, route_key, s3_uri, utcnow
from ingestion.nessie import NessieClient
from ingestion.staging import stage_version, staged_uri
from lambdas.trigger.datasets import complete_dataset, dataset_prefix
from lambdas.trigger.events import ObjectCreated
from lambdas.trigger.multi_table import complete_multi_table_dataset

IGNORED = "IGNORED"
DUPLICATE = "DUPLICATE"


@dataclass(frozen=True)
class TriggerResult:
    """What the trigger did with one object."""

    key: str
    action: str  # IGNORED | DUPLICATE | REJECTED | QUEUED | RUNNING | <terminal status>
    ingest_id: str | None = None
    table: str | None = None
    reason: str | None = None


def rejection_reason(
    obj: ObjectCreated, s3: Any = None, intake: Intake | None = None, table: str | None = None
) -> str | None:
    """Why the object cannot be ingested, or None.

    Its format is the table config's `format:` (from `intake`), else its extension
    (`contracts.formats`); with `s3`, its first bytes (and a parquet file's last 4) must
    agree. A table whose config is refused reads no bytes: the file is then refused for
    the config (`reject_for_config`), not for a format guessed without it. `table`: the
    file's table when its key does not say (a multi-table dataset's manifest does).
    """
    try:
        if table is None:
            route_key(obj.key)
    except UnroutableKeyError as exc:
        return str(exc)
    intake = intake or Intake()
    fmt = None
    if not intake.config_error:
        fmt = format_of(file_name(obj.key), intake.format)
        if fmt is None:
            return unsupported_format_text(file_name(obj.key))
    if obj.size == 0:
        return f"empty file (0 bytes): {obj.key}"
    if s3 is not None and fmt is not None:
        return _content_problem(obj, fmt, s3)
    return None


def _content_problem(obj: ObjectCreated, fmt: SourceFormat, s3: Any) -> str | None:
    """Catch a renamed or corrupt file before any branch or Spark run: its first
    SNIFF_BYTES (a parquet file: and its last 4) must be of its format."""
    extra = {"VersionId": obj.version_id} if obj.version_id else {}
    try:
        head = s3.get_object(
            Bucket=obj.bucket, Key=obj.key, Range=f"bytes=0-{SNIFF_BYTES - 1}", **extra
        )["Body"].read()
        tail = b""
        if fmt.kind == PARQUET:
            # A file the head holds whole has its footer in it: no second request.
            whole = obj.size is not None and len(head) >= obj.size
            tail = (
                head[-4:]
                if whole
                else s3.get_object(Bucket=obj.bucket, Key=obj.key, Range="bytes=-4", **extra)[
                    "Body"
                ].read()
            )
    except ClientError as exc:
        # On a versioned bucket a deleted version answers NoSuchVersion, not NoSuchKey.
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "NoSuchVersion", "404"):
            return (
                f"source object {s3_uri(obj.bucket, obj.key)} (version {obj.version}) "
                "no longer exists"
            )
        raise
    return content_problem(obj.key, fmt, head, tail, obj.size)


def handle_object(
    obj: ObjectCreated, settings: Settings, ledger: Ledger, nessie: NessieClient, s3: Any = None
) -> TriggerResult:
    """Ingest one created object exactly once; safe to call again with the same object."""
    s3 = s3 if s3 is not None else aws.client("s3")
    if dataset_drop(obj.key) is not None:
        return _multi_table_drop(obj, settings, ledger, nessie, s3)
    if is_marker(obj.key):
        return _marker(obj, settings, ledger, nessie, s3)
    try:
        # Read once per event: the rejection check needs its `format:`, the steps below
        # its config error, arrival and limits.
        intake = table_intake(settings, route_key(obj.key).qualified)
    except UnroutableKeyError:
        intake = Intake()  # the record is rejected for its key before the intake matters
    record = _recorded_and_staged(obj, settings, ledger, s3, intake)
    iid = record.ingest_id
    if not record.is_pending:  # rejected, or already started by an earlier event
        return _not_pending(obj, record)
    table = record.table
    assert table is not None  # a record without a table was rejected when recorded
    if intake.config_error:  # before the lock: the table stays free for a fixed config
        if reject_for_config(ledger, record, intake.config_error, settings=settings):
            return TriggerResult(obj.key, c.REJECTED, iid, table, intake.config_error)
        return _not_pending(obj, ledger.get_ingest(iid) or record)
    # Before any branch or job: an upload must not create a table nobody asked for.
    unknown = unknown_table_reason(settings, nessie, table, intake)
    if unknown:
        if reject_for_config(
            ledger, record, unknown, reason_code=c.UNKNOWN_TABLE, settings=settings
        ):
            return TriggerResult(obj.key, c.REJECTED, iid, table, unknown)
        return _not_pending(obj, ledger.get_ingest(iid) or record)
    if intake.by_marker:  # waits for its dataset's marker
        ledger.update_ingest(
            iid, status=c.HELD, dataset=dataset_prefix(obj.key), only_if_status={c.RECEIVED}
        )
        held = ledger.get_ingest(iid) or record
        if held.status != c.HELD:
            return _not_pending(obj, held)
        return TriggerResult(obj.key, c.HELD, iid, table)
    lock = ledger.acquire_or_enqueue(table, iid)
    if lock == LOCK_NOT_PENDING:  # finished while this duplicate was on its way
        return _not_pending(obj, ledger.get_ingest(iid) or record)
    if lock == LOCK_QUEUED:
        ledger.update_ingest(iid, status=c.QUEUED, only_if_status={c.RECEIVED})
        return TriggerResult(obj.key, c.QUEUED, iid, table)
    started = start_or_fail(settings, ledger, nessie, ledger.get_ingest(iid) or record)
    return TriggerResult(obj.key, started.status or "?", iid, table)


def _recorded_and_staged(
    obj: ObjectCreated,
    settings: Settings,
    ledger: Ledger,
    s3: Any,
    intake: Intake,
    table: str | None = None,
    member_of: dict[str, Any] | None = None,
) -> IngestRecord:
    """The object's ingest record, created (or a bad object rejected) and its version
    staged, once. `intake`: its table's (the format it is read as); `table`: the table
    when its key does not name it; `member_of`: the fields that make it a multi-table
    dataset's file from the start (`batch_id`, `dataset`): only its dataset runs it, and
    only its dataset alerts about it (a rejection included)."""
    iid = ingest_id(obj.bucket, obj.key, obj.version)
    record = _ingest(ledger.get_ingest(iid))
    if record is None:  # recorded with a conditional put: the first invocation wins
        reason = rejection_reason(obj, s3, intake, table)
        try:
            table = table or route_key(obj.key).qualified
        except UnroutableKeyError:
            table = None
        recorded = IngestRecord(
            ingest_id=iid,
            table=table,
            bucket=obj.bucket,
            key=obj.key,
            source_uri=s3_uri(obj.bucket, obj.key),  # what the user dropped (for display)
            object_version=obj.version,
            # What every reader reads: that exact version, copied before the ingest can run.
            staged_uri=None if reason else staged_uri(settings.artifacts_bucket, iid, obj.key),
            size=obj.size,
            uploaded_at=obj.uploaded_at,
            attempts=0,
            status=c.RECEIVED,
            **(member_of or {}),
        )
        if reason:
            settle_new(settings, ledger, recorded, c.REJECTED, reason, announced=member_of is None)
        else:
            ledger.create_ingest(recorded)
        record = _ingest(ledger.get_ingest(iid))
        assert record is not None
    if record.status == c.RECEIVED and not record.staged_at:
        record = _stage(record, obj, settings, ledger, s3, quiet=member_of is not None)
    return record


def _ingest(record: Record | None) -> IngestRecord | None:
    """An object's record (kind `ingest`: its id is made from the object version)."""
    if record is not None and not isinstance(record, IngestRecord):
        raise TypeError(f"ledger record {record.ingest_id} is a {record.kind}, not an ingest")
    return record


def _marker(
    obj: ObjectCreated, settings: Settings, ledger: Ledger, nessie: NessieClient, s3: Any
) -> TriggerResult:
    """A marker completes its dataset on an `arrival: marker` table; elsewhere it is no data."""
    if obj.key.startswith(DATASETS_PREFIX):  # not where a drop's manifest belongs
        return TriggerResult(
            obj.key,
            IGNORED,
            reason=(
                f"a marker under {DATASETS_PREFIX} belongs at {DATASETS_PREFIX}<dataset>/<drop>/"
                f"{MANIFEST_MARKER}"
            ),
        )
    try:
        table = route_key(obj.key).qualified
    except UnroutableKeyError:
        return TriggerResult(obj.key, IGNORED, reason="marker file")
    if not is_dataset_marker(obj.key):
        return TriggerResult(obj.key, IGNORED, reason="marker file")
    intake = table_intake(settings, table)
    if not intake.by_marker:
        return TriggerResult(obj.key, IGNORED, reason="marker file")
    action, batch_id, reason = complete_dataset(
        obj,
        settings,
        ledger,
        nessie,
        s3,
        lambda part: _recorded_and_staged(part, settings, ledger, s3, intake),
    )
    return TriggerResult(obj.key, action, batch_id, table, reason)


def _multi_table_drop(
    obj: ObjectCreated, settings: Settings, ledger: Ledger, nessie: NessieClient, s3: Any
) -> TriggerResult:
    """A file under `_datasets/<name>/<drop>/`: the drop's `_manifest.json` makes it one
    run over every table; any other file waits for it (the manifest names it)."""
    if file_name(obj.key) != MANIFEST_MARKER:
        return TriggerResult(
            obj.key,
            IGNORED,
            reason="a file of a multi-table dataset: its drop's _manifest.json ingests it",
        )

    intakes: dict[str, Intake] = {}  # each table's config read once per drop, not per file

    def ingest_file(part: ObjectCreated, table: str, member_of: dict[str, Any]) -> IngestRecord:
        if table not in intakes:
            intakes[table] = table_intake(settings, table)
        intake = intakes[table]
        record = _recorded_and_staged(part, settings, ledger, s3, intake, table, member_of)
        if intake.config_error and record.is_pending:  # the dataset announces it
            rejected = Changes(
                status=c.REJECTED,
                error=intake.config_error,
                reason_code=CONFIG_ERROR,
                finished_at=iso(utcnow()),
            )
            share(ledger, {record.ingest_id: rejected}, only_if_status=c.PENDING_STATUSES)
            record = _ingest(ledger.get_ingest(record.ingest_id)) or record
        return record

    action, batch_id, table, reason = complete_multi_table_dataset(
        obj, settings, ledger, nessie, s3, ingest_file
    )
    return TriggerResult(obj.key, action, batch_id, table, reason)


def _not_pending(obj: ObjectCreated, record: Record) -> TriggerResult:
    action = c.REJECTED if record.status == c.REJECTED else DUPLICATE
    return TriggerResult(obj.key, action, record.ingest_id, record.table, record.error)


def _stage(
    record: IngestRecord,
    obj: ObjectCreated,
    settings: Settings,
    ledger: Ledger,
    s3: Any,
    *,
    quiet: bool = False,
) -> IngestRecord:
    """Copy the event's object version to the ingest's staging key (once; retries rewrite
    the same bytes). A version that is gone is a recorded rejection, never a silent drop
    (alerted unless `quiet`: a dataset's file, which its dataset's alert names)."""
    iid = record.ingest_id
    assert record.staged_uri is not None  # recorded with it when RECEIVED
    try:
        stage_version(
            s3,
            bucket=obj.bucket,
            key=obj.key,
            version_id=obj.version_id,
            etag=obj.etag,
            target=record.staged_uri,
        )
    except SourceVersionGoneError as exc:
        settle(
            settings,
            ledger,
            record,
            c.REJECTED,
            str(exc),
            only_if_status={c.RECEIVED},
            alert=not quiet,
        )
        return _ingest(ledger.get_ingest(iid)) or record
    ledger.update_ingest(iid, staged_at=iso(utcnow()))
    return _ingest(ledger.get_ingest(iid)) or record
