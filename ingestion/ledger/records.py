"""The ledger's records, typed, and the one place they are mapped to and from DynamoDB items.

- `IngestRecord`: one uploaded file (kind `ingest`), keyed `ingest#<ingest id>`;
- `BatchRecord`: a run over several files (kind `batch`), keyed like an ingest so the run
  machinery (branch, job run, execution, publish, finish) treats it as one ingest;
- `TableLock`: a table's lock/queue item (kind `table`), keyed `table#<ns.table>`.

Records are read from items with `record_from_item` / `lock_from_item` and written with
`record_to_item` / `lock_to_item`; nothing else turns an item into a record or back.
DynamoDB numbers come back as `Decimal` and are given to callers as int/float
(`plain_value`); floats go back as `Decimal` and None is not stored (`storable_item`).

Attributes a record does not declare (written by an older or newer version, or named
per attempt: `branch_attempt_<n>`, `job_started_at_a<n>_t<m>`) are kept in `extra` and
written back unchanged, so a read-modify-write never drops them. An empty list is not
stored (it reads back as absent, like None): no writer stores one.

Writers name the fields they set (`Ledger.update_ingest(id, status=...)`, checked by
`changes.Changes`): an update changes only those attributes, conditionally, never the
whole item.

Records are read by attribute (`record.status`, `record.field_value(name)` for one not
declared); they are not mappings: `dataclasses.replace` makes a changed copy and
`record_to_item` the stored item.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from decimal import Decimal
from typing import Any, ClassVar, TypeGuard

from contracts.lifecycle import STATUSES, Status
from ingestion import constants as c
from ingestion.ledger.schema import (
    KIND_BATCH,
    KIND_INGEST,
    KIND_TABLE,
    PARTITION_KEY,
    ingest_key,
    lock_key,
)
from ingestion.naming import parse_iso

# A record's status is one of the lifecycle's (contracts/lifecycle.py).
_STATUS_FIELDS = frozenset({"status", "previous_status"})


def plain_value(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; give callers ints/floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    return value


def storable_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """Drop None values (DynamoDB stores absent rather than null) and floats -> Decimal."""

    def convert(value: Any) -> Any:
        if isinstance(value, float):
            return Decimal(str(value))
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items() if v is not None}
        if isinstance(value, list | tuple):
            return [convert(v) for v in value]
        return value

    return {k: convert(v) for k, v in item.items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class LedgerRecord:
    """What an ingest's and a batch's records share: status, run, outcome, clean-up."""

    kind: ClassVar[str]
    ingest_id: str
    table: str | None = None
    status: Status | None = None
    created_at: str | None = None
    updated_at: str | None = None
    # What the user dropped, for display (a batch: its first file and how many more).
    source_uri: str | None = None
    size: int | None = None
    staged_at: str | None = None  # when the source (each member's) was staged
    dataset: str | None = None  # the folder of an `arrival: marker` dataset
    # The current run (`ingestion.ingest.run_fields`) and the execution driving it.
    branch: str | None = None
    attempts: int | None = None  # publish attempts: each rebase is one more (a new branch)
    job_tries: int | None = None  # tries of the job on the attempt's branch
    job_run_id: str | None = None
    report_uri: str | None = None
    log_uri: str | None = None
    job_started_at: str | None = None  # of attempt 1, try 1; later ones: `started_at()`
    execution_arn: str | None = None
    last_job_error: str | None = None
    rebase_reason: str | None = None
    blocked_alerted_at: str | None = None
    # The outcome.
    error: str | None = None
    reason_code: str | None = None
    finished_at: str | None = None
    branch_hash: str | None = None
    snapshot_id: str | None = None
    rows_written: int | None = None
    quarantined_rows: int | None = None  # set aside in the table's quarantine table
    # Where the time went (ingestion/time_split.py): the upload's S3 event time, and the
    # ended job run's EMR state times (submitted, RUNNING, ended).
    uploaded_at: str | None = None
    job_submitted_at: str | None = None
    job_running_at: str | None = None
    job_ended_at: str | None = None
    # What the run cost (ingestion/job_cost.py): EMR's billed resources and their price in
    # USD at `price_region`'s rates; a batch's file: its share, by bytes.
    vcpu_hours: float | None = None
    memory_gb_hours: float | None = None
    storage_gb_hours: float | None = None
    cost_usd: float | None = None
    price_region: str | None = None
    audited_hash: str | None = None
    audited_snapshot_id: str | None = None
    # A multi-table dataset: the audited snapshot of each table (publish checks them all).
    audited_snapshots: Mapping[str, str] | None = None
    published_branch: str | None = None
    published_hash: str | None = None
    # A person's decision (`wap publish`, `wap discard`) or the sweeper's.
    previous_status: Status | None = None
    audit_error: str | None = None
    published_by: str | None = None
    publish_reason: str | None = None
    published_at: str | None = None
    discarded_by: str | None = None
    discard_reason: str | None = None
    # Clean-up: the sweep index (sparse), and the TTL.
    branch_deleted_at: str | None = None
    staged_deleted_at: str | None = None
    sweep: str | None = None
    sweep_after: str | None = None
    expires_at: int | None = None
    # Attributes this version does not declare, kept as they were stored.
    extra: Mapping[str, Any] = field(default_factory=dict)

    # ---- reading -------------------------------------------------------------------------

    @property
    def is_batch(self) -> bool:
        return self.kind == KIND_BATCH

    @property
    def is_pending(self) -> bool:
        """RECEIVED or QUEUED: it may still take its table's lock and start."""
        return self.status in c.PENDING_STATUSES

    @property
    def is_terminal(self) -> bool:
        return self.status in c.TERMINAL_STATUSES

    @property
    def last_change(self) -> str | None:
        """When it finished, else when it last changed, else when it was recorded."""
        return self.finished_at or self.updated_at or self.created_at

    @property
    def reader_uris(self) -> tuple[str | None, ...]:
        """What its job reads (each staged source); a None is a source never staged."""
        raise NotImplementedError

    def started_at(self, attempt: int, job_try: int) -> str | None:
        """When the run of (`attempt`, `job_try`) was started (`started_at_field`)."""
        value = self.field_value(started_at_field(attempt, job_try))
        return None if value is None else str(value)

    def branch_attempt(self, attempt: int) -> str | None:
        """The branch set once for publish attempt `attempt` (> 1: after a rebase)."""
        value = self.extra.get(f"branch_attempt_{attempt}")
        return None if value is None else str(value)

    def field_value(self, name: str) -> Any:
        """The stored attribute `name` (declared or in `extra`), None when absent."""
        if name == "kind":
            return self.kind
        if name in _declared(type(self)):
            return getattr(self, name)
        return self.extra.get(name)

    def created(self) -> datetime | None:
        return parse_iso(self.created_at) if self.created_at else None


@dataclass(frozen=True, kw_only=True)
class IngestRecord(LedgerRecord):
    """One uploaded object version: recorded once, staged, run alone or in a batch."""

    kind: ClassVar[str] = KIND_INGEST
    bucket: str | None = None
    key: str | None = None
    object_version: str | None = None
    staged_uri: str | None = None  # the copy of that exact version every reader reads
    # While (or after) it ran in a batch: the batch's id; a split batch names itself in
    # `split_from` and says how its files run again (`solo`: alone; `rerun_group`: a half).
    batch_id: str | None = None
    split_from: str | None = None
    solo: bool | None = None
    rerun_group: str | None = None

    @property
    def reader_uris(self) -> tuple[str | None, ...]:
        return (self.staged_uri,)


@dataclass(frozen=True, kw_only=True)
class BatchRecord(LedgerRecord):
    """A run over several files of one table (queued files, or a dataset)."""

    kind: ClassVar[str] = KIND_BATCH
    members: tuple[str, ...] = ()  # the files' ingest ids, in arrival order
    sources: tuple[str | None, ...] = ()  # each member's staged copy, in the same order
    sizes: tuple[int, ...] = ()  # each member's bytes, in the same order (its cost share)
    files: int | None = None
    all_or_nothing: bool | None = None  # a dataset: published all together or not at all
    marker_uri: str | None = None  # the dataset's `_SUCCESS` / `_manifest.json`
    # A multi-table dataset (docs/datasets.md): its name, every table it writes in lock
    # order (`table` is the first), and each member's table in `members` order; the copy
    # of its config the trigger parsed (every job run reads it), and the table it is
    # queued at while it takes its locks.
    dataset_name: str | None = None
    tables: tuple[str, ...] = ()
    source_tables: tuple[str, ...] = ()
    dataset_config_uri: str | None = None
    waiting_for: str | None = None

    @property
    def reader_uris(self) -> tuple[str | None, ...]:
        return self.sources

    @property
    def member_sources(self) -> dict[str, str | None]:
        """Each member's staged source."""
        return dict(zip(self.members, self.sources, strict=False))

    @property
    def member_tables(self) -> dict[str, str]:
        """Each member's table: a multi-table dataset's files (empty for any other batch,
        which records no `source_tables`)."""
        return dict(zip(self.members, self.source_tables, strict=False))


Record = IngestRecord | BatchRecord
_RECORD_TYPES: dict[str, type[LedgerRecord]] = {KIND_INGEST: IngestRecord, KIND_BATCH: BatchRecord}
_TUPLES = frozenset({"members", "sources", "sizes", "tables", "source_tables"})


def tables_of(record: LedgerRecord) -> tuple[str, ...]:
    """Every table a run writes and holds the lock of: a multi-table dataset's tables (in
    lock order), else its one table (none for a record without one)."""
    tables = getattr(record, "tables", ())
    return tuple(tables) if tables else ((record.table,) if record.table else ())


def is_multi_table(record: LedgerRecord) -> TypeGuard[BatchRecord]:
    """Whether the record is a multi-table dataset's batch: it writes more than one table."""
    return len(tables_of(record)) > 1


def started_at_field(attempt: int, job_try: int) -> str:
    """The attribute holding when the run of (`attempt`, `job_try`) was started."""
    return "job_started_at" + ("" if (attempt, job_try) == (1, 1) else f"_a{attempt}_t{job_try}")


def _declared(cls: type) -> dict[str, None]:
    """The attributes a record type declares, in their order (a dict: ordered, hashed)."""
    cached = _DECLARED.get(cls)
    if cached is None:
        cached = _DECLARED[cls] = {f.name: None for f in fields(cls) if f.name != "extra"}
    return cached


_DECLARED: dict[type, dict[str, None]] = {}


def record_attributes(record: LedgerRecord) -> dict[str, Any]:
    """The record's stored attributes (as a plain item, without its key): what `wap show
    --json` prints."""
    item: dict[str, Any] = {"kind": record.kind}
    for name in _declared(type(record)):
        value = getattr(record, name)
        if value is not None and value != ():
            item[name] = list(value) if name in _TUPLES else value
    return {**item, **{k: v for k, v in record.extra.items() if v is not None}}


def record_from_item(item: Mapping[str, Any]) -> Record:
    """The record of an ingest item (a batch's when its kind says so); numbers as int/float,
    undeclared attributes in `extra`."""
    plain = plain_value(dict(item))
    cls = _RECORD_TYPES.get(plain.get("kind") or KIND_INGEST)
    if cls is None:
        raise ValueError(f"not an ingest or batch item: kind {plain.get('kind')!r}")
    declared = _declared(cls)
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for name, value in plain.items():
        if name in (PARTITION_KEY, "kind") or value is None:
            continue
        if name in declared:
            if name in _STATUS_FIELDS and value in STATUSES:
                value = Status(value)
            known[name] = tuple(value) if name in _TUPLES else value
        else:
            extra[name] = value
    return cls(**known, extra=extra)  # type: ignore[return-value]


def record_to_item(record: LedgerRecord) -> dict[str, Any]:
    """The DynamoDB item of a record (key, kind, every attribute set, `extra` included)."""
    return storable_item({**ingest_key(record.ingest_id), **record_attributes(record)})


@dataclass
class TableLock:
    """The lock/queue item of one table."""

    table: str
    active: str | None = None
    active_since: str | None = None
    queue: list[str] = field(default_factory=list)
    # When `active` is a batch: its member ingests, in arrival order.
    batch: list[str] = field(default_factory=list)
    handed_over_from: str | None = None
    lease_expires_at: str | None = None
    created_at: str | None = None
    version: int = 0
    # Attributes this version does not declare, written back as they were read.
    extra: dict[str, Any] = field(default_factory=dict)

    def lease_expired(self, now: datetime) -> bool:
        """True when an active holder's lease ran out (it neither finished nor renewed)."""
        return bool(
            self.active and self.lease_expires_at and parse_iso(self.lease_expires_at) <= now
        )

    def waiting(self, ingest_id: str) -> bool:
        """Whether `ingest_id` waits here: queued, or a member of the batch holding it."""
        return ingest_id in self.queue or ingest_id in self.batch


_LOCK_ATTRIBUTES = frozenset(
    {
        "active",
        "active_since",
        "queue",
        "batch",
        "handed_over_from",
        "lease_expires_at",
        "created_at",
        "version",
    }
)
# Written on every put from the lock itself, never kept in `extra`.
_LOCK_DERIVED = frozenset({PARTITION_KEY, "kind", "table", "updated_at"})


def lock_from_item(table: str, item: Mapping[str, Any] | None) -> TableLock:
    """The lock of `table` from its item (an absent item: a free table, version 0)."""
    if not item:
        return TableLock(table=table)
    plain = plain_value(dict(item))
    return TableLock(
        table=table,
        active=plain.get("active"),
        active_since=plain.get("active_since"),
        queue=list(plain.get("queue") or []),
        batch=list(plain.get("batch") or []),
        handed_over_from=plain.get("handed_over_from"),
        lease_expires_at=plain.get("lease_expires_at"),
        created_at=plain.get("created_at"),
        version=int(plain.get("version", 0)),
        extra={
            k: v for k, v in plain.items() if k not in _LOCK_ATTRIBUTES and k not in _LOCK_DERIVED
        },
    )


def lock_to_item(lock: TableLock, now: str) -> dict[str, Any]:
    """The lock's item as written at `now` (its `updated_at`; `created_at` when new)."""
    return storable_item(
        {
            **lock.extra,
            **lock_key(lock.table),
            "kind": KIND_TABLE,
            "table": lock.table,
            "active": lock.active,
            "active_since": lock.active_since,
            "lease_expires_at": lock.lease_expires_at,
            "queue": lock.queue,
            "batch": lock.batch or None,
            "handed_over_from": lock.handed_over_from,
            "version": lock.version,
            "created_at": lock.created_at or now,
            "updated_at": now,
        }
    )
