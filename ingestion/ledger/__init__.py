"""The ingest ledger in DynamoDB: one item per ingest (or batch), one lock/queue item per table.

Every conditional write of the service lives in this package; it is where its invariants
are kept (one active ingest per table, exactly once per object version):
- `schema`: the table's keys, indexes and TTL (what CDK and the local stack create);
- `records`: the typed records (`IngestRecord`, `BatchRecord`, `TableLock`) and the one
  mapping between them and DynamoDB items;
- `changes`: a typed update (`Changes`): the fields it sets, checked when it is made;
- `ingests`: ingest and batch records: create once, read, update conditionally, list, sweep;
- `locks`: table locks and queues: acquire or enqueue, lease, release and hand over;
- `arrivals`: each table's expected-arrival state (late or not) and its newest publish;
- `run_locks`: locks of whole runs that must not overlap (the daily maintenance run);
- `Ledger` (here): all of them, over one table, as every caller uses them.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any, Concatenate, ParamSpec, TypeVar

from ingestion.ledger.arrivals import ArrivalState, ArrivalStates, dataset_subject
from ingestion.ledger.changes import Changes
from ingestion.ledger.ingests import IngestRecords
from ingestion.ledger.locks import (
    DEFAULT_LEASE,
    LOCK_ACTIVE,
    LOCK_NOT_PENDING,
    LOCK_QUEUED,
    QueueStat,
    Successor,
    TableLocks,
    batch_id,
)
from ingestion.ledger.records import (
    STATUSES,
    BatchRecord,
    IngestRecord,
    LedgerRecord,
    Record,
    Status,
    TableLock,
    is_multi_table,
    lock_from_item,
    lock_to_item,
    plain_value,
    record_from_item,
    record_to_item,
    started_at_field,
    storable_item,
    tables_of,
)
from ingestion.ledger.run_locks import RunLocks
from ingestion.ledger.schema import (
    _INDEXES,
    DEFAULT_RECORD_TTL,
    INDEX_BY_KIND,
    INDEX_BY_STATUS,
    INDEX_BY_TABLE,
    INDEX_SWEEP,
    INDEXES,
    KIND_ARRIVAL,
    KIND_BATCH,
    KIND_INGEST,
    KIND_TABLE,
    PARTITION_KEY,
    SWEEP_PENDING,
    TTL_ATTRIBUTE,
    table_schema,
)
from ingestion.ledger.store import LedgerStore
from ingestion.naming import object_version_uri

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_RECORD_TTL",
    "INDEXES",
    "INDEX_BY_KIND",
    "INDEX_BY_STATUS",
    "INDEX_BY_TABLE",
    "INDEX_SWEEP",
    "KIND_ARRIVAL",
    "KIND_BATCH",
    "KIND_INGEST",
    "KIND_TABLE",
    "LOCK_ACTIVE",
    "LOCK_NOT_PENDING",
    "LOCK_QUEUED",
    "PARTITION_KEY",
    "STATUSES",
    "SWEEP_PENDING",
    "TTL_ATTRIBUTE",
    "_INDEXES",
    "ArrivalState",
    "ArrivalStates",
    "BatchRecord",
    "Changes",
    "IngestRecord",
    "Ledger",
    "LedgerRecord",
    "QueueStat",
    "Record",
    "Status",
    "Successor",
    "TableLock",
    "batch_id",
    "dataset_subject",
    "is_multi_table",
    "lock_from_item",
    "lock_to_item",
    "plain_value",
    "record_from_item",
    "record_to_item",
    "started_at_field",
    "storable_item",
    "table_schema",
    "tables_of",
]


P = ParamSpec("P")
R = TypeVar("R")


def _forward(
    part: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Ledger, P], R]:
    """A `Ledger` method that is its part's `method` (`part`: the attribute holding it),
    looked up when called; signature and docstring are the part's."""

    @functools.wraps(method)
    def forward(ledger: Ledger, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(getattr(ledger, part), method.__name__)(*args, **kwargs)

    return forward


class Ledger:
    """Ingest records and table locks, with the conditional writes that keep them consistent.

    A facade: `ingests` (IngestRecords) and `locks` (TableLocks) over one table. A method
    that is a part's own, unchanged, is forwarded to it (`_forward`).
    """

    def __init__(
        self,
        table_name: str,
        dynamodb_resource: Any = None,
        *,
        record_ttl: timedelta = DEFAULT_RECORD_TTL,
        lease: timedelta = DEFAULT_LEASE,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.store = LedgerStore(table_name, dynamodb_resource, sleep=sleep)
        self.ingests = IngestRecords(self.store, record_ttl=record_ttl)
        self.locks = TableLocks(self.store, self.ingests, lease=lease)
        self.arrivals = ArrivalStates(self.store)
        self.run_locks = RunLocks(self.store)

    @property
    def _table(self) -> Any:  # the boto3 Table (tests write items behind the ledger's back)
        return self.store.table

    def origin_uris(self, record: LedgerRecord) -> list[str] | None:
        """The uploaded object version each file the ingest reads is a copy of, in the order
        of its members (`s3://bucket/key?versionId=V`); None when a file's upload is not on
        record."""
        if isinstance(record, IngestRecord):
            files: list[Record | None] = [record]
        elif isinstance(record, BatchRecord):
            found = self.get_ingests(record.members)
            files = [found.get(member) for member in record.members]
        else:
            return None
        origins = []
        for file in files:
            if not isinstance(file, IngestRecord) or not file.bucket or not file.key:
                return None
            origins.append(object_version_uri(file.bucket, file.key, file.object_version))
        return origins

    @property
    def _client(self) -> Any:
        return self.store.client

    # ---- ingest and batch records (ingests.py) --------------------------------------------

    def create_ingest(
        self,
        record: Record | str,
        fields: Mapping[str, Any] | None = None,
        *,
        kind: str = KIND_INGEST,
    ) -> bool:
        """Record a new ingest or batch, typed (`IngestRecord`, `BatchRecord`); False when
        its id is already recorded. `create_ingest(ingest_id, fields, kind=...)` builds the
        record from stored attributes first (how tests seed a ledger)."""
        if isinstance(record, str):
            record = record_from_item({**(fields or {}), "kind": kind, "ingest_id": record})
        elif fields is not None:
            raise TypeError("create_ingest takes a record, or an ingest id and its fields")
        return self.ingests.create_ingest(record)

    get_ingest = _forward("ingests", IngestRecords.get_ingest)
    get_ingests = _forward("ingests", IngestRecords.get_ingests)

    def update_ingest(
        self,
        ingest_id: str,
        changes: Changes | None = None,
        *,
        only_if_status: Iterable[str] | None = None,
        only_if: tuple[str, Any] | None = None,
        **fields: Any,
    ) -> bool:
        """Set the record's fields, named as keywords (checked: `Changes`) or given as one
        `Changes`; False when its status is not in `only_if_status`, or the field `only_if`
        names has another value (see IngestRecords)."""
        if changes is None:
            changes = Changes(**fields)
        elif fields:
            raise TypeError("update_ingest takes one Changes or keyword fields, not both")
        return self.ingests.update_ingest(
            ingest_id, changes, only_if_status=only_if_status, only_if=only_if
        )

    update_ingests = _forward("ingests", IngestRecords.update_ingests)
    set_once = _forward("ingests", IngestRecords.set_once)
    list_ingests = _forward("ingests", IngestRecords.list_ingests)
    newest_ingests = _forward("ingests", IngestRecords.newest_ingests)
    list_batches = _forward("ingests", IngestRecords.list_batches)
    with_status = _forward("ingests", IngestRecords.with_status)
    due_for_sweep = _forward("ingests", IngestRecords.due_for_sweep)
    swept = _forward("ingests", IngestRecords.swept)

    # ---- table locks and queues (locks.py) ------------------------------------------------

    get_lock = _forward("locks", TableLocks.get_lock)
    list_locks = _forward("locks", TableLocks.list_locks)
    queues = _forward("locks", TableLocks.queues)
    acquire_or_enqueue = _forward("locks", TableLocks.acquire_or_enqueue)
    acquire_in_order = _forward("locks", TableLocks.acquire_in_order)
    renew_lease = _forward("locks", TableLocks.renew_lease)
    release = _forward("locks", TableLocks.release)

    # ---- expected arrivals (arrivals.py) ---------------------------------------------------

    get_arrival = _forward("arrivals", ArrivalStates.get_arrival)
    list_arrivals = _forward("arrivals", ArrivalStates.list_arrivals)
    mark_late = _forward("arrivals", ArrivalStates.mark_late)
    mark_recovered = _forward("arrivals", ArrivalStates.mark_recovered)
    last_published = _forward("arrivals", ArrivalStates.last_published)
    last_dataset_published = _forward("arrivals", ArrivalStates.last_dataset_published)

    # ---- locks of whole runs (run_locks.py) -----------------------------------------------

    acquire_run_lock = _forward("run_locks", RunLocks.acquire)
    release_run_lock = _forward("run_locks", RunLocks.release)

    def _mutate_lock(self, table: str, change: Callable[[TableLock], bool]) -> None:
        self.locks.mutate_lock(table, change)
