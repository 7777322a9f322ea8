"""Table locks and queues: one active ingest per table, the others queued in arrival order.

A table's item (`table#<ns.table>`) holds the active ingest (a lease: holder + expiry)
and the queue, changed with optimistic concurrency on `version`. Taking the lock is
checked in one transaction with the ingest's status, so a finished ingest (a late
duplicate event) can never hold a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from contracts.naming import hex_id
from ingestion.constants import PENDING_STATUSES
from ingestion.exceptions import LedgerContentionError
from ingestion.ledger.ingests import IngestRecords
from ingestion.ledger.records import TableLock, lock_from_item, lock_to_item
from ingestion.ledger.schema import INDEX_BY_KIND, KIND_TABLE, ingest_key, lock_key
from ingestion.ledger.store import LOCK_ATTEMPTS, LedgerStore, is_conditional_failure
from ingestion.naming import iso, parse_iso, utcnow

LOCK_ACTIVE = "ACTIVE"
LOCK_QUEUED = "QUEUED"
# The ingest is no longer pending (a late duplicate event): it must not take the lock.
LOCK_NOT_PENDING = "NOT_PENDING"
# A lock holder that neither finished nor renewed its lease this long is presumed dead.
DEFAULT_LEASE = timedelta(hours=4)


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


class TableLocks:
    """The lock/queue items of the ledger (`ingests`: where the queued ingests are read)."""

    def __init__(
        self, store: LedgerStore, ingests: IngestRecords, *, lease: timedelta = DEFAULT_LEASE
    ) -> None:
        self._store = store
        self._ingests = ingests
        self._lease = lease

    def get_lock(self, table: str) -> TableLock:
        item = self._store.table.get_item(Key=lock_key(table), ConsistentRead=True).get("Item")
        return lock_from_item(table, item)

    def list_locks(self) -> list[TableLock]:
        """Every table's lock item (from an index: re-read with `get_lock` before acting)."""
        return [
            lock_from_item(i["table"], i)
            for i in self._store.query(INDEX_BY_KIND, "kind", KIND_TABLE)
        ]

    def queues(self, now: datetime) -> list[QueueStat]:
        """Every table with queued ingests, by table name (consistent reads of each lock)."""
        stats = []
        for listed in self.list_locks():
            lock = self.get_lock(listed.table)
            if not lock.queue:
                continue
            # The queue is in arrival order: its head has waited longest.
            head = self._ingests.get_ingest(lock.queue[0])
            since = head.created_at if head else None
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
        for attempt in range(LOCK_ATTEMPTS):
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
                    self._write_if_pending(
                        ingest_id,
                        {
                            "Put": {
                                "Item": lock_to_item(lock, iso(utcnow())),
                                "ConditionExpression": "attribute_not_exists(pk) OR version = :v",
                                "ExpressionAttributeValues": {":v": expected},
                            }
                        },
                    )
                    return LOCK_ACTIVE
                # Appending needs no version check: DynamoDB applies concurrent updates of
                # one item one after another, so a burst of enqueuers does not collide.
                self._write_if_pending(
                    ingest_id,
                    {
                        "Update": {
                            "Key": lock_key(table),
                            "UpdateExpression": "SET #q = "
                            "list_append(if_not_exists(#q, :empty), :ids), "
                            "version = version + :one, updated_at = :now, "
                            "created_at = if_not_exists(created_at, :now)",
                            "ConditionExpression": "attribute_exists(active) AND active <> :id "
                            "AND NOT contains(#q, :id) "
                            "AND NOT contains(#b, :id)",
                            "ExpressionAttributeNames": {"#q": "queue", "#b": "batch"},
                            "ExpressionAttributeValues": {
                                ":empty": [],
                                ":ids": [ingest_id],
                                ":one": 1,
                                ":id": ingest_id,
                                ":now": iso(utcnow()),
                            },
                        }
                    },
                )
                return LOCK_QUEUED
            except _IngestNotPending:
                return LOCK_NOT_PENDING
            except Exception as exc:
                if not is_conditional_failure(exc):
                    raise
            self._store.backoff(attempt)
        raise LedgerContentionError(f"lock item of {table} kept changing; retry later")

    def acquire_in_order(self, tables: Sequence[str], holder: str) -> str | None:
        """Take every table of a run that writes several (a multi-table dataset), one
        after another in canonical (sorted) order, holding those already taken.

        Returns None once `holder` holds them all (it may start), else the table it is
        queued at: when that table is handed to it (a `release` names it the successor),
        call again to go on. Every holder takes tables in the same order, so none holding
        a later table ever waits for an earlier one, and no cycle of waits (a deadlock)
        can form; a single-table ingest holds one table and waits for none.
        Raises LedgerContentionError as `acquire_or_enqueue` does; returns the first table
        unchanged when `holder` is no longer pending (`LOCK_NOT_PENDING`).
        """
        for table in sorted(dict.fromkeys(tables)):
            state = self.acquire_or_enqueue(table, holder)
            if state != LOCK_ACTIVE:
                return table
        return None

    def renew_lease(self, table: str, ingest_id: str) -> bool:
        """Extend the lease of the table's active ingest; False when it no longer holds it."""
        held = [False]

        def change(lock: TableLock) -> bool:
            held[0] = lock.active == ingest_id
            if held[0]:
                lock.lease_expires_at = iso(utcnow() + self._lease)
            return held[0]

        self.mutate_lock(table, change)
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
                nxt = (
                    batch_id(table, members, lock.version)
                    if len(members) > 1
                    else (members[0] if members else None)
                )
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

        self.mutate_lock(table, change)
        return successor[0]

    def mutate_lock(self, table: str, change: Callable[[TableLock], bool]) -> None:
        """Read-modify-write the lock item; retry with jittered backoff when another writer
        got there first."""
        for attempt in range(LOCK_ATTEMPTS):
            lock = self.get_lock(table)
            expected = lock.version
            if not change(lock):
                return
            lock.version = expected + 1
            try:
                self._store.table.put_item(
                    Item=lock_to_item(lock, iso(utcnow())),
                    ConditionExpression="attribute_not_exists(pk) OR version = :v",
                    ExpressionAttributeValues={":v": expected},
                )
                return
            except Exception as exc:
                if not is_conditional_failure(exc):
                    raise
            self._store.backoff(attempt)
        raise LedgerContentionError(f"lock item of {table} kept changing; retry later")

    def _write_if_pending(self, ingest_id: str, write: dict[str, Any]) -> None:
        """One transaction: `write` (a Put or Update of a lock item) happens only while the
        ingest is RECEIVED or QUEUED. Raises `_IngestNotPending`, or a conditional failure
        (the lock changed: retry)."""
        # The resource's client serialises Python values itself (boto3's transformation
        # injector), so items and values are given as plain Python here.
        statuses = sorted(PENDING_STATUSES)
        ((kind, spec),) = write.items()
        try:
            self._store.client.transact_write_items(
                TransactItems=[
                    {
                        "ConditionCheck": {
                            "TableName": self._store.table_name,
                            "Key": ingest_key(ingest_id),
                            "ConditionExpression": "#s IN ("
                            + ", ".join(f":s{i}" for i in range(len(statuses)))
                            + ")",
                            "ExpressionAttributeNames": {"#s": "status"},
                            "ExpressionAttributeValues": {
                                f":s{i}": s for i, s in enumerate(statuses)
                            },
                        }
                    },
                    {kind: {"TableName": self._store.table_name, **spec}},
                ]
            )
        except Exception as exc:
            reasons = (getattr(exc, "response", None) or {}).get("CancellationReasons") or []
            codes = [r.get("Code") for r in reasons]
            if codes and codes[0] == "ConditionalCheckFailed":
                raise _IngestNotPending() from exc
            if {"ConditionalCheckFailed", "TransactionConflict"} & set(codes):  # retry
                raise _LockMoved() from exc
            raise


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
