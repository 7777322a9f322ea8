"""Ingest and batch records: create (once), read, update (conditionally), list, sweep index.

An ingest's item is created with a conditional put (exactly once per object version);
every update is conditional on the record existing, and on its status when the caller
says so (`only_if_status`), so a late or repeated writer cannot undo a later outcome.
An update that sets a status is also conditional on the lifecycle allowing the change
(`contracts.lifecycle.TRANSITIONS`), in the same write: one the table does not allow is
refused with a `TransitionError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from contracts.lifecycle import STATUSES, TransitionError, allowed, predecessors
from ingestion.constants import TERMINAL_STATUSES
from ingestion.ledger.changes import Changes
from ingestion.ledger.records import (
    BatchRecord,
    Record,
    plain_value,
    record_from_item,
    record_to_item,
    storable_item,
)
from ingestion.ledger.schema import (
    DEFAULT_RECORD_TTL,
    INDEX_BY_KIND,
    INDEX_BY_STATUS,
    INDEX_BY_TABLE,
    INDEX_SWEEP,
    KIND_BATCH,
    KIND_INGEST,
    SWEEP_PENDING,
    TTL_ATTRIBUTE,
    ingest_key,
)
from ingestion.ledger.store import (
    BATCH_GET_ITEMS,
    LOCK_ATTEMPTS,
    TRANSACTION_ITEMS,
    LedgerStore,
    is_conditional_failure,
)
from ingestion.naming import iso, utcnow


def _oldest_first(records: Iterable[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r.created_at or "", r.ingest_id))


def _allowed_sources(
    ingest_id: str, target: str | None, only_if_status: Iterable[str] | None
) -> frozenset[str] | None:
    """The statuses a record may have for the write: those the caller accepts, of the ones
    the lifecycle allows to change to `target` (when the write sets a status). Raises
    TransitionError when none is left: the change could never be made."""
    accepted = None if only_if_status is None else frozenset(only_if_status)
    if target is None:
        return accepted
    if target not in STATUSES:
        raise TransitionError(ingest_id, None, target)
    sources = frozenset(predecessors(target))
    if accepted is not None:
        sources &= accepted
    if not sources:
        raise TransitionError(ingest_id, "/".join(sorted(accepted or ())) or "any status", target)
    return sources


class IngestRecords:
    """The ingest and batch items of the ledger."""

    def __init__(self, store: LedgerStore, *, record_ttl: timedelta = DEFAULT_RECORD_TTL) -> None:
        self._store = store
        self._record_ttl = record_ttl

    def create_ingest(self, record: Record) -> bool:
        """Put a new ingest (or batch) `record` (its kind is its type's; `created_at` and
        `updated_at` are now); False (and no write) when its id is already recorded."""
        now = iso(utcnow())
        item = self._final_fields(record_to_item(record))
        record = record_from_item({**item, "created_at": now, "updated_at": now})
        try:
            self._store.table.put_item(
                Item=record_to_item(record), ConditionExpression="attribute_not_exists(pk)"
            )
        except Exception as exc:
            if is_conditional_failure(exc):
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

    def get_ingest(self, ingest_id: str) -> Record | None:
        item = self._store.table.get_item(Key=ingest_key(ingest_id), ConsistentRead=True).get(
            "Item"
        )
        return record_from_item(item) if item else None

    def update_ingest(
        self,
        ingest_id: str,
        fields: Changes,
        *,
        only_if_status: Iterable[str] | None = None,
        only_if: tuple[str, Any] | None = None,
    ) -> bool:
        """Set `fields` on an existing record; False when its status is not in `only_if_status`
        (or, with `only_if` = (field, value), that field has another value; (field, None):
        that field is set already).

        A final status also sets the record's expiry (TTL) and marks it for the sweeper
        (branch and staged copy clean-up), unless `fields` say otherwise. A status change
        the lifecycle does not allow raises TransitionError (and writes nothing).
        """
        write = self._update(ingest_id, fields, only_if_status, only_if)
        try:
            self._store.table.update_item(**write)
        except Exception as exc:
            if is_conditional_failure(exc):
                self._refuse_transition(ingest_id, fields, only_if_status)
                return False
            raise
        return True

    def update_ingests(
        self,
        updates: Mapping[str, Changes],
        *,
        only_if_status: Iterable[str],
        only_if: tuple[str, Any] | None = None,
    ) -> set[str]:
        """`update_ingest` of many records (`updates`: id -> fields), in transactions of up
        to 100 writes instead of one request each; `only_if` = (field, value) adds a condition
        per record. Returns the ids that were changed. A transaction some record's condition
        refuses is done record by record (the others still change)."""
        statuses = tuple(only_if_status)
        changed: set[str] = set()
        ids = list(updates)
        for start in range(0, len(ids), TRANSACTION_ITEMS):
            chunk = ids[start : start + TRANSACTION_ITEMS]
            writes = [self._update(i, updates[i], statuses, only_if) for i in chunk]
            try:
                self._store.client.transact_write_items(
                    TransactItems=[
                        {"Update": {"TableName": self._store.table_name, **write}}
                        for write in writes
                    ]
                )
                changed.update(chunk)
                continue
            except Exception as exc:
                if not (getattr(exc, "response", None) or {}).get(
                    "CancellationReasons"
                ) and not is_conditional_failure(exc):
                    raise
            for ingest_id, write in zip(chunk, writes, strict=True):
                try:
                    self._store.table.update_item(**write)
                    changed.add(ingest_id)
                except Exception as exc:
                    if not is_conditional_failure(exc):
                        raise
                    self._refuse_transition(ingest_id, updates[ingest_id], statuses)
        return changed

    def _refuse_transition(
        self, ingest_id: str, fields: Mapping[str, Any], only_if_status: Iterable[str] | None
    ) -> None:
        """After a refused write that set a status: raise TransitionError when the lifecycle
        refused it (the record's status is one the caller accepts, but the change from it
        is not allowed); a missing record, or one in a status the caller did not accept (a
        later writer settled it), is the caller's plain False."""
        target = fields.get("status")
        if target is None:
            return
        record = self.get_ingest(ingest_id)
        if record is None or allowed(record.status, target):
            return
        if only_if_status is None or record.status in set(only_if_status):
            raise TransitionError(ingest_id, record.status, target)

    def _update(
        self,
        ingest_id: str,
        fields: Mapping[str, Any],
        only_if_status: Iterable[str] | None,
        only_if: tuple[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The UpdateItem arguments that set `fields` (None removes) under the conditions."""
        fields = {**self._final_fields(Changes.of(fields)), "updated_at": iso(utcnow())}
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
        only_if_status = _allowed_sources(ingest_id, fields.get("status"), only_if_status)
        if only_if_status is not None:
            statuses = sorted(set(only_if_status))
            names["#status"] = "status"
            keys = [f":s{i}" for i in range(len(statuses))]
            values.update(dict(zip(keys, statuses, strict=True)))
            condition += f" AND #status IN ({', '.join(keys)})"
        if only_if is not None and only_if[1] is None:  # (field, None): only if not set yet
            names["#only"] = only_if[0]
            condition += " AND attribute_not_exists(#only)"
        elif only_if is not None:
            names["#only"], values[":only"] = only_if
            condition += " AND #only = :only"
        return {
            "Key": ingest_key(ingest_id),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": storable_item(values),
        }

    def get_ingests(self, ingest_ids: Iterable[str]) -> dict[str, Record]:
        """Many records by id (consistent reads, up to 100 per request); absent ids are
        missing from the answer."""
        ids = list(dict.fromkeys(ingest_ids))
        found: dict[str, Record] = {}
        for start in range(0, len(ids), BATCH_GET_ITEMS):
            keys = [ingest_key(i) for i in ids[start : start + BATCH_GET_ITEMS]]
            request = {self._store.table_name: {"Keys": keys, "ConsistentRead": True}}
            for attempt in range(LOCK_ATTEMPTS):
                page = self._store.table.meta.client.batch_get_item(RequestItems=request)
                for item in page.get("Responses", {}).get(self._store.table_name, []):
                    record = record_from_item(item)
                    found[record.ingest_id] = record
                request = page.get("UnprocessedKeys") or {}
                if not request:
                    break
                self._store.backoff(attempt)  # throttled: DynamoDB hands back what it did not read
        return found

    def set_once(self, ingest_id: str, name: str, value: Any) -> Any:
        """Set `name` unless already set; return the stored value (ours or the earlier one)."""
        response = self._store.table.update_item(
            Key=ingest_key(ingest_id),
            UpdateExpression="SET #n = if_not_exists(#n, :v)",
            ConditionExpression="attribute_exists(pk)",
            ExpressionAttributeNames={"#n": name},
            ExpressionAttributeValues={":v": value},
            ReturnValues="ALL_NEW",
        )
        return plain_value(response["Attributes"][name])

    def list_ingests(
        self, *, table: str | None = None, statuses: Iterable[str] | None = None
    ) -> list[Record]:
        """Ingest records (optionally of one table / statuses), oldest first.

        Read from an index (eventually consistent): re-read an item with `get_ingest`
        before acting on it.
        """
        query = self._store.query
        wanted = set(statuses) if statuses is not None else None
        if wanted is not None:
            items = [
                i for status in sorted(wanted) for i in query(INDEX_BY_STATUS, "status", status)
            ]
            if table is not None:
                items = [i for i in items if i.get("table") == table]
        elif table is not None:
            items = query(INDEX_BY_TABLE, "table", table)
        else:
            items = query(INDEX_BY_KIND, "kind", KIND_INGEST)
        return _oldest_first(record_from_item(i) for i in items if i.get("kind") == KIND_INGEST)

    def newest_ingests(self, limit: int, *, table: str | None = None) -> list[Record]:
        """The `limit` newest ingest records (of one table), newest first: one index page,
        whatever the history holds (`list_ingests` reads it all)."""
        if table is not None:
            items = self._store.query(
                INDEX_BY_TABLE, "table", table, newest_first=True, limit=limit, kind=KIND_INGEST
            )
        else:
            items = self._store.query(
                INDEX_BY_KIND, "kind", KIND_INGEST, newest_first=True, limit=limit
            )
        return [record_from_item(i) for i in items if i.get("kind") == KIND_INGEST][:limit]

    def list_batches(self, *, status: str | None = None) -> list[BatchRecord]:
        """Every batch record (of one status), oldest first (from an index: re-read before
        acting)."""
        if status is None:
            items = self._store.query(INDEX_BY_KIND, "kind", KIND_BATCH)
        else:
            items = [
                i
                for i in self._store.query(INDEX_BY_STATUS, "status", status)
                if i.get("kind") == KIND_BATCH
            ]
        return _oldest_first(record_from_item(i) for i in items)  # type: ignore[return-value]

    def with_status(self, status: str) -> list[Record]:
        """Every ingest and batch record of `status`, oldest first: one query of the status
        index (eventually consistent: re-read before acting)."""
        return _oldest_first(
            record_from_item(i)
            for i in self._store.query(INDEX_BY_STATUS, "status", status)
            if i.get("kind") in (KIND_INGEST, KIND_BATCH)
        )

    def due_for_sweep(self, now: datetime) -> list[Record]:
        """Final records with a branch or staged copy left to clean, due by `now`."""
        return [
            record_from_item(i)
            for i in self._store.query(INDEX_SWEEP, "sweep", SWEEP_PENDING, until=iso(now))
        ]

    def swept(self, ingest_id: str) -> None:
        """Nothing is left to clean for this record: drop it from the sweep index."""
        self.update_ingest(ingest_id, Changes(sweep=None, sweep_after=None))
