"""The ingest ledger in DynamoDB: one item per ingest, one lock/queue item per table.

Every conditional write lives in this module. Ingest items are keyed
`ingest#<id>`; table items `table#<ns.table>` hold the active ingest (a lease:
holder + expiry) and the queue in arrival order, changed with optimistic
concurrency on `version`. Listings read global secondary indexes, never a scan;
finished records expire through DynamoDB's TTL.

The table's shape (`TABLE_SCHEMA`) is defined here once, for CDK and the local stack.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from contracts.naming import hex_id
from lambdas.common.constants import PENDING_STATUSES, TERMINAL_STATUSES
from lambdas.common.exceptions import LedgerContentionError
from lambdas.common.naming import iso, parse_iso, utcnow

KIND_INGEST = "ingest"
KIND_TABLE = "table"
# A run over several queued ingests: a record like an ingest's (its own status, branch and
# job run), keyed `ingest#<batch id>` so the run machinery treats it as one ingest.
KIND_BATCH = "batch"
LOCK_ACTIVE = "ACTIVE"
LOCK_QUEUED = "QUEUED"
# The ingest is no longer pending (a late duplicate event): it must not take the lock.
LOCK_NOT_PENDING = "NOT_PENDING"

PARTITION_KEY = "pk"
TTL_ATTRIBUTE = "expires_at"
INDEX_BY_KIND = "by_kind"  # kind, created_at: every ingest (or lock), newest first
INDEX_BY_TABLE = "by_table"  # table, created_at: one table's ingests
INDEX_BY_STATUS = "by_status"  # status, created_at: e.g. the open failed branches
# Sparse: only final records with something left to clean (a branch, a staged copy).
INDEX_SWEEP = "by_sweep"  # sweep ("pending"), sweep_after
SWEEP_PENDING = "pending"
_INDEXES = {
    INDEX_BY_KIND: ("kind", "created_at"),
    INDEX_BY_TABLE: ("table", "created_at"),
    INDEX_BY_STATUS: ("status", "created_at"),
    INDEX_SWEEP: ("sweep", "sweep_after"),
}
# Finished records outlive S3's event retries (hours), the branch retention (14 days)
# and the sweeps after it, so a late duplicate event still finds its record.
DEFAULT_RECORD_TTL = timedelta(days=90)
# A lock holder that neither finished nor renewed its lease this long is presumed dead.
DEFAULT_LEASE = timedelta(hours=4)
_LOCK_ATTEMPTS = 12
_TRANSACTION_ITEMS = 100  # DynamoDB's limit of writes in one TransactWriteItems
_BATCH_GET_ITEMS = 100  # and of keys in one BatchGetItem
_BACKOFF_BASE_S = 0.02
_BACKOFF_CAP_S = 1.0


def table_schema() -> dict[str, Any]:
    """`create_table` arguments of the ledger (keys and indexes), shared by CDK and local."""
    attributes = sorted({PARTITION_KEY, *(name for pair in _INDEXES.values() for name in pair)})
    return {
        "KeySchema": [{"AttributeName": PARTITION_KEY, "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"} for a in attributes],
        "GlobalSecondaryIndexes": [
            {
                "IndexName": name,
                "KeySchema": [
                    {"AttributeName": hash_key, "KeyType": "HASH"},
                    {"AttributeName": range_key, "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
            for name, (hash_key, range_key) in _INDEXES.items()
        ],
    }


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

    def lease_expired(self, now: datetime) -> bool:
        """True when an active holder's lease ran out (it neither finished nor renewed)."""
        return bool(self.active and self.lease_expires_at
                    and parse_iso(self.lease_expires_at) <= now)

    def waiting(self, ingest_id: str) -> bool:
        """Whether `ingest_id` waits here: queued, or a member of the batch holding it."""
        return ingest_id in self.queue or ingest_id in self.batch


@dataclass(frozen=True)
class Successor:
    """Who holds a table after a release: an ingest, or a batch (`id`) of `members`."""

    id: str
    members: tuple[str, ...]

    @property
    def is_batch(self) -> bool:
        return len(self.members) > 1


@dataclass(frozen=True)
class QueueStat:
    """A table's waiting ingests: how many, and how long the oldest has waited."""

    table: str
    depth: int
    oldest_age_seconds: float


def plain_value(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; give callers ints/floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in value.items()}
    return value


# Another writer got there first: read again and retry. DynamoDB cancels a transaction
# that meets another one on the same item (TransactionConflict), and refuses a plain
# write to an item a transaction is changing (TransactionConflictException).
_CONTENTION_CODES = frozenset({"ConditionalCheckFailedException", "TransactionConflictException"})


def _is_conditional_failure(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    return response.get("Error", {}).get("Code") in _CONTENTION_CODES


class Ledger:
    """Ingest records and table locks, with the conditional writes that keep them consistent."""

    def __init__(
        self,
        table_name: str,
        dynamodb_resource: Any = None,
        *,
        record_ttl: timedelta = DEFAULT_RECORD_TTL,
        lease: timedelta = DEFAULT_LEASE,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if dynamodb_resource is None:
            from lambdas.common import aws

            dynamodb_resource = aws.resource("dynamodb")
        self._table = dynamodb_resource.Table(table_name)
        self._client = dynamodb_resource.meta.client
        self._table_name = table_name
        self._record_ttl = record_ttl
        self._lease = lease
        self._sleep = sleep

    # ---- ingest records -------------------------------------------------------------------

    def create_ingest(
        self, ingest_id: str, fields: Mapping[str, Any], *, kind: str = KIND_INGEST
    ) -> bool:
        """Put a new ingest (or batch) record; False (and no write) when the id is already
        recorded."""
        now = iso(utcnow())
        item = {
            **self._final_fields(fields),
            "pk": f"ingest#{ingest_id}",
            "kind": kind,
            "ingest_id": ingest_id,
            "created_at": now,
            "updated_at": now,
        }
        try:
            self._table.put_item(Item=storable_item(item),
                                 ConditionExpression="attribute_not_exists(pk)")
        except Exception as exc:
            if _is_conditional_failure(exc):
                return False
            raise
        return True

    def _final_fields(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """`fields`, plus the expiry (TTL) and the sweep mark when they set a final status."""
        fields = dict(fields)
        if fields.get("status") in TERMINAL_STATUSES:
            now = utcnow()
            fields.setdefault(TTL_ATTRIBUTE, int((now + self._record_ttl).timestamp()))
            fields.setdefault("sweep", SWEEP_PENDING)
            fields.setdefault("sweep_after", iso(now))
        return fields

    def get_ingest(self, ingest_id: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key={"pk": f"ingest#{ingest_id}"}, ConsistentRead=True).get(
            "Item"
        )
        return plain_value(item) if item else None

    def update_ingest(
        self,
        ingest_id: str,
        fields: Mapping[str, Any],
        *,
        only_if_status: Iterable[str] | None = None,
    ) -> bool:
        """Set `fields` on an existing record; False when its status is not in `only_if_status`.

        A final status also sets the record's expiry (TTL) and marks it for the sweeper
        (branch and staged copy clean-up), unless `fields` say otherwise.
        """
        try:
            self._table.update_item(**self._update(ingest_id, fields, only_if_status))
        except Exception as exc:
            if _is_conditional_failure(exc):
                return False
            raise
        return True

    def update_ingests(
        self, updates: Mapping[str, Mapping[str, Any]], *, only_if_status: Iterable[str],
        only_if: tuple[str, Any] | None = None,
    ) -> set[str]:
        """`update_ingest` of many records (`updates`: id -> fields), in transactions of up
        to 100 writes instead of one request each; `only_if` = (field, value) adds a condition
        per record. Returns the ids that were changed. A transaction some record's condition
        refuses is done record by record (the others still change)."""
        statuses = tuple(only_if_status)
        changed: set[str] = set()
        ids = list(updates)
        for start in range(0, len(ids), _TRANSACTION_ITEMS):
            chunk = ids[start:start + _TRANSACTION_ITEMS]
            writes = [self._update(i, updates[i], statuses, only_if) for i in chunk]
            try:
                self._client.transact_write_items(TransactItems=[
                    {"Update": {"TableName": self._table_name, **write}} for write in writes])
                changed.update(chunk)
                continue
            except Exception as exc:
                if not (getattr(exc, "response", None) or {}).get("CancellationReasons") and \
                        not _is_conditional_failure(exc):
                    raise
            for ingest_id, write in zip(chunk, writes, strict=True):
                try:
                    self._table.update_item(**write)
                    changed.add(ingest_id)
                except Exception as exc:
                    if not _is_conditional_failure(exc):
                        raise
        return changed

    def _update(self, ingest_id: str, fields: Mapping[str, Any],
                only_if_status: Iterable[str] | None,
                only_if: tuple[str, Any] | None = None) -> dict[str, Any]:
        """The UpdateItem arguments that set `fields` (None removes) under the conditions."""
        fields = {**self._final_fields(fields), "updated_at": iso(utcnow())}
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        sets: list[str] = []
        removes: list[str] = []
        for i, (name, value) in enumerate(fields.items()):
            names[f"#f{i}"] = name
            if value is None:  # DynamoDB has no null attributes worth keeping: remove
                removes.append(f"#f{i}")
            else:
                values[f":v{i}"] = value
                sets.append(f"#f{i} = :v{i}")
        expression = "SET " + ", ".join(sets)
        if removes:
            expression += " REMOVE " + ", ".join(removes)
        condition = "attribute_exists(pk)"
        if only_if_status is not None:
            statuses = sorted(set(only_if_status))
            names["#status"] = "status"
            keys = [f":s{i}" for i in range(len(statuses))]
            values.update(dict(zip(keys, statuses, strict=True)))
            condition += f" AND #status IN ({', '.join(keys)})"
        if only_if is not None:
            names["#only"], values[":only"] = only_if
            condition += " AND #only = :only"
        return {"Key": {"pk": f"ingest#{ingest_id}"}, "UpdateExpression": expression,
                "ConditionExpression": condition, "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": storable_item(values)}

    def get_ingests(self, ingest_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Many records by id (consistent reads, up to 100 per request); absent ids are
        missing from the answer."""
        ids = list(dict.fromkeys(ingest_ids))
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), _BATCH_GET_ITEMS):
            keys = [{"pk": f"ingest#{i}"} for i in ids[start:start + _BATCH_GET_ITEMS]]
            request = {self._table_name: {"Keys": keys, "ConsistentRead": True}}
            for attempt in range(_LOCK_ATTEMPTS):
                page = self._table.meta.client.batch_get_item(RequestItems=request)
                for item in page.get("Responses", {}).get(self._table_name, []):
                    found[item["ingest_id"]] = plain_value(item)
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
                self._backoff(attempt)  # throttled: DynamoDB hands back what it did not read
        return found

    def set_once(self, ingest_id: str, name: str, value: Any) -> Any:
        """Set `name` unless already set; return the stored value (ours or the earlier one)."""
        response = self._table.update_item(
            Key={"pk": f"ingest#{ingest_id}"},
            UpdateExpression="SET #n = if_not_exists(#n, :v)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#n": name},
            ExpressionAttributeValues={":v": value},
            ReturnValues="ALL_NEW",
        )
        return plain_value(response["Attributes"][name])

    def list_ingests(
        self, *, table: str | None = None, statuses: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """Ingest records (optionally of one table / statuses), oldest first.

        Read from an index (eventually consistent): re-read an item with `get_ingest`
        before acting on it.
        """
        wanted = set(statuses) if statuses is not None else None
        if wanted is not None:
            items = [i for status in sorted(wanted)
                     for i in self._query(INDEX_BY_STATUS, "status", status)]
            if table is not None:
                items = [i for i in items if i.get("table") == table]
        elif table is not None:
            items = self._query(INDEX_BY_TABLE, "table", table)
        else:
            items = self._query(INDEX_BY_KIND, "kind", KIND_INGEST)
        items = [i for i in items if i.get("kind") == KIND_INGEST]
        return sorted(items, key=lambda i: (i.get("created_at", ""), i["ingest_id"]))

    def newest_ingests(self, limit: int, *, table: str | None = None) -> list[dict[str, Any]]:
        """The `limit` newest ingest records (of one table), newest first: one index page,
        whatever the history holds (`list_ingests` reads it all)."""
        if table is not None:
            items = self._query(INDEX_BY_TABLE, "table", table, newest_first=True,
                                limit=limit, kind=KIND_INGEST)
        else:
            items = self._query(INDEX_BY_KIND, "kind", KIND_INGEST, newest_first=True,
                                limit=limit)
        return [i for i in items if i.get("kind") == KIND_INGEST][:limit]

    def list_batches(self) -> list[dict[str, Any]]:
        """Every batch record, oldest first (from an index: re-read before acting)."""
        items = self._query(INDEX_BY_KIND, "kind", KIND_BATCH)
        return sorted(items, key=lambda i: (i.get("created_at", ""), i["ingest_id"]))

    def due_for_sweep(self, now: datetime) -> list[dict[str, Any]]:
        """Final records with a branch or staged copy left to clean, due by `now`."""
        return self._query(INDEX_SWEEP, "sweep", SWEEP_PENDING, until=iso(now))

    def swept(self, ingest_id: str) -> None:
        """Nothing is left to clean for this record: drop it from the sweep index."""
        self.update_ingest(ingest_id, {"sweep": None, "sweep_after": None})

    # ---- table locks ----------------------------------------------------------------------

    def get_lock(self, table: str) -> TableLock:
        item = self._table.get_item(Key={"pk": f"table#{table}"}, ConsistentRead=True).get("Item")
        return _lock_from_item(table, item)

    def list_locks(self) -> list[TableLock]:
        """Every table's lock item (from an index: re-read with `get_lock` before acting)."""
        return [_lock_from_item(i["table"], i) for i in self._query(INDEX_BY_KIND, "kind",
                                                                    KIND_TABLE)]

    def queues(self, now: datetime) -> list[QueueStat]:
        """Every table with queued ingests, by table name (consistent reads of each lock)."""
        stats = []
        for listed in self.list_locks():
            lock = self.get_lock(listed.table)
            if not lock.queue:
                continue
            # The queue is in arrival order: its head has waited longest.
            since = (self.get_ingest(lock.queue[0]) or {}).get("created_at")
            age = max(0.0, (now - parse_iso(since)).total_seconds()) if since else 0.0
            stats.append(QueueStat(lock.table, len(lock.queue), age))
        return sorted(stats, key=lambda s: s.table)

    def acquire_or_enqueue(self, table: str, ingest_id: str) -> str:
        """Make `ingest_id` the table's active ingest, or queue it behind the active one.

        Returns `LOCK_ACTIVE` or `LOCK_QUEUED`; calling it again for the same id
        returns the same answer without changing anything. Returns `LOCK_NOT_PENDING`
        (and changes nothing) when the ingest is no longer RECEIVED/QUEUED: the
        ingest's status is checked in the same transaction as the lock write, so a
        late duplicate event cannot hand the table to a finished ingest.
        """
        for attempt in range(_LOCK_ATTEMPTS):
            lock = self.get_lock(table)
            if lock.active == ingest_id:
                return LOCK_ACTIVE
            if lock.waiting(ingest_id):
                return LOCK_QUEUED
            try:
                if lock.active is None and not lock.queue:
                    expected, now = lock.version, utcnow()
                    lock.active, lock.active_since = ingest_id, iso(now)
                    lock.lease_expires_at = iso(now + self._lease)
                    lock.version = expected + 1
                    self._write_if_pending(ingest_id, {"Put": {
                        "Item": self._lock_item(lock),
                        "ConditionExpression": "attribute_not_exists(pk) OR version = :v",
                        "ExpressionAttributeValues": {":v": expected},
                    }})
                    return LOCK_ACTIVE
                # Appending needs no version check: DynamoDB applies concurrent updates of
                # one item one after another, so a burst of enqueuers does not collide.
                self._write_if_pending(ingest_id, {"Update": {
                    "Key": {"pk": f"table#{table}"},
                    "UpdateExpression": "SET #q = list_append(if_not_exists(#q, :empty), :ids), "
                                        "version = version + :one, updated_at = :now, "
                                        "created_at = if_not_exists(created_at, :now)",
                    "ConditionExpression": "attribute_exists(active) AND active <> :id "
                                           "AND NOT contains(#q, :id) "
                                           "AND NOT contains(#b, :id)",
                    "ExpressionAttributeNames": {"#q": "queue", "#b": "batch"},
                    "ExpressionAttributeValues": {":empty": [], ":ids": [ingest_id],
                                                  ":one": 1, ":id": ingest_id,
                                                  ":now": iso(utcnow())},
                }})
                return LOCK_QUEUED
            except _IngestNotPending:
                return LOCK_NOT_PENDING
            except Exception as exc:
                if not _is_conditional_failure(exc):
                    raise
            self._backoff(attempt)
        raise LedgerContentionError(f"lock item of {table} kept changing; retry later")

    def renew_lease(self, table: str, ingest_id: str) -> bool:
        """Extend the lease of the table's active ingest; False when it no longer holds it."""
        held = [False]

        def change(lock: TableLock) -> bool:
            held[0] = lock.active == ingest_id
            if held[0]:
                lock.lease_expires_at = iso(utcnow() + self._lease)
            return held[0]

        self._mutate_lock(table, change)
        return held[0]

    def release(
        self,
        table: str,
        ingest_id: str,
        take: Callable[[list[str]], int] | None = None,
        requeue: Sequence[str] = (),
    ) -> Successor | None:
        """Free the table held by `ingest_id` and hand it to the head of its queue.

        `take(queue)` says how many queued ingests, from the head, the next run takes
        (default 1); more than one become a batch with an id of its own. `requeue` puts
        ingests back at the head first (a batch split after its run). Returns who now
        holds the table (to be started by the caller), or None. A repeated release by the
        same holder returns the same successor again, so a retried caller can finish
        starting it.
        """
        successor: list[Successor | None] = [None]

        def change(lock: TableLock) -> bool:
            successor[0] = None
            if lock.active == ingest_id:
                queue = [*dict.fromkeys(requeue)]
                queue += [queued for queued in lock.queue if queued not in queue]
                count = min(max(1, take(queue) if take else 1), len(queue))
                members, lock.queue = queue[:count], queue[count:]
                now = utcnow()
                nxt = batch_id(table, members, lock.version) if len(members) > 1 else (
                    members[0] if members else None)
                lock.active, lock.batch = nxt, members if len(members) > 1 else []
                lock.active_since = iso(now) if nxt else None
                lock.lease_expires_at = iso(now + self._lease) if nxt else None
                lock.handed_over_from = ingest_id
                successor[0] = _successor(lock)
                return True
            if lock.handed_over_from == ingest_id:
                successor[0] = _successor(lock)
            elif ingest_id in lock.queue:  # dropped while waiting (e.g. sweeper)
                lock.queue.remove(ingest_id)
                return True
            return False

        self._mutate_lock(table, change)
        return successor[0]

    def _mutate_lock(self, table: str, change: Callable[[TableLock], bool]) -> None:
        """Read-modify-write the lock item; retry with jittered backoff when another writer
        got there first."""
        for attempt in range(_LOCK_ATTEMPTS):
            lock = self.get_lock(table)
            expected = lock.version
            if not change(lock):
                return
            lock.version = expected + 1
            try:
                self._table.put_item(
                    Item=self._lock_item(lock),
                    ConditionExpression="attribute_not_exists(pk) OR version = :v",
                    ExpressionAttributeValues={":v": expected},
                )
                return
            except Exception as exc:
                if not _is_conditional_failure(exc):
                    raise
            self._backoff(attempt)
        raise LedgerContentionError(f"lock item of {table} kept changing; retry later")

    def _backoff(self, attempt: int) -> None:
        # Full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"): writers
        # that collided spread out instead of colliding again in lockstep.
        self._sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)))

    @staticmethod
    def _lock_item(lock: TableLock) -> dict[str, Any]:
        return storable_item({
            "pk": f"table#{lock.table}",
            "kind": KIND_TABLE,
            "table": lock.table,
            "active": lock.active,
            "active_since": lock.active_since,
            "lease_expires_at": lock.lease_expires_at,
            "queue": lock.queue,
            "batch": lock.batch or None,
            "handed_over_from": lock.handed_over_from,
            "version": lock.version,
            "created_at": lock.created_at or iso(utcnow()),
            "updated_at": iso(utcnow()),
        })

    def _write_if_pending(self, ingest_id: str, write: dict[str, Any]) -> None:
        """One transaction: `write` (a Put or Update of a lock item) happens only while the
        ingest is RECEIVED or QUEUED. Raises `_IngestNotPending`, or a conditional failure
        (the lock changed: retry)."""
        # The resource's client serialises Python values itself (boto3's transformation
        # injector), so items and values are given as plain Python here.
        statuses = sorted(PENDING_STATUSES)
        (kind, spec), = write.items()
        try:
            self._client.transact_write_items(TransactItems=[
                {"ConditionCheck": {
                    "TableName": self._table_name,
                    "Key": {"pk": f"ingest#{ingest_id}"},
                    "ConditionExpression": "#s IN (" + ", ".join(
                        f":s{i}" for i in range(len(statuses))) + ")",
                    "ExpressionAttributeNames": {"#s": "status"},
                    "ExpressionAttributeValues": {f":s{i}": s for i, s in enumerate(statuses)},
                }},
                {kind: {"TableName": self._table_name, **spec}},
            ])
        except Exception as exc:
            reasons = (getattr(exc, "response", None) or {}).get("CancellationReasons") or []
            codes = [r.get("Code") for r in reasons]
            if codes and codes[0] == "ConditionalCheckFailed":
                raise _IngestNotPending() from exc
            if {"ConditionalCheckFailed", "TransactionConflict"} & set(codes):  # retry
                raise _LockMoved() from exc
            raise

    def _query(
        self, index: str, key: str, value: str, *, until: str | None = None,
        newest_first: bool = False, limit: int | None = None, kind: str | None = None,
    ) -> list[dict[str, Any]]:
        """Items of one index key; with `limit`, stop once that many (of `kind`) are read."""
        from boto3.dynamodb.conditions import Attr, Key

        range_key = _INDEXES[index][1]
        condition = Key(key).eq(value)
        if until is not None:
            condition = condition & Key(range_key).lte(until)
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {"IndexName": index, "KeyConditionExpression": condition,
                                  "ScanIndexForward": not newest_first}
        if kind is not None:
            kwargs["FilterExpression"] = Attr("kind").eq(kind)
        if limit is not None:
            kwargs["Limit"] = limit
        while True:
            page = self._table.query(**kwargs)
            items.extend(plain_value(i) for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page or (limit is not None and len(items) >= limit):
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class _IngestNotPending(Exception):
    """The transaction's ingest status check failed."""


class _LockMoved(Exception):
    """The transaction's lock version check failed (another writer came first)."""

    response = {"Error": {"Code": "ConditionalCheckFailedException"}}


def batch_id(table: str, members: Sequence[str], version: int) -> str:
    """The id of a batch, shaped like an ingest id, from its table, members and the lock
    version that formed it (the same members in a later run are a new batch)."""
    return hex_id(f"batch:{table}:{version}:{','.join(members)}")


def _successor(lock: TableLock) -> Successor | None:
    if lock.active is None:
        return None
    return Successor(lock.active, tuple(lock.batch) if lock.batch else (lock.active,))


def _lock_from_item(table: str, item: Mapping[str, Any] | None) -> TableLock:
    if not item:
        return TableLock(table=table)
    item = plain_value(dict(item))
    return TableLock(
        table=table,
        active=item.get("active"),
        active_since=item.get("active_since"),
        queue=list(item.get("queue") or []),
        batch=list(item.get("batch") or []),
        handed_over_from=item.get("handed_over_from"),
        lease_expires_at=item.get("lease_expires_at"),
        created_at=item.get("created_at"),
        version=int(item.get("version", 0)),
    )


def storable_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """Drop None values (DynamoDB stores absent rather than null) and floats -> Decimal."""

    def convert(value: Any) -> Any:
        if isinstance(value, float):
            return Decimal(str(value))
        if isinstance(value, dict):
            return {k: convert(v) for k, v in value.items() if v is not None}
        if isinstance(value, list):
            return [convert(v) for v in value]
        return value

    return {k: convert(v) for k, v in item.items() if v is not None}
