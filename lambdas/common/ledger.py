"""The ingest ledger in DynamoDB: one item per ingest, one lock/queue item per table.

Every conditional write lives in this module. Ingest items are keyed
`ingest#<id>`; table items `table#<ns.table>` hold the active ingest and the
queue in arrival order, changed with optimistic concurrency on `version`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from lambdas.common.exceptions import LedgerContentionError
from lambdas.common.naming import iso, utcnow

KIND_INGEST = "ingest"
KIND_TABLE = "table"
LOCK_ACTIVE = "ACTIVE"
LOCK_QUEUED = "QUEUED"
_LOCK_RETRIES = 25


@dataclass
class TableLock:
    """The lock/queue item of one table."""

    table: str
    active: str | None = None
    active_since: str | None = None
    queue: list[str] = field(default_factory=list)
    handed_over_from: str | None = None
    version: int = 0


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; give callers ints/floats."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _is_conditional_failure(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}
    return response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


class Ledger:
    """Ingest records and table locks, with the conditional writes that keep them consistent."""

    def __init__(self, table_name: str, dynamodb_resource: Any = None) -> None:
        if dynamodb_resource is None:
            import boto3

            dynamodb_resource = boto3.resource("dynamodb")
        self._table = dynamodb_resource.Table(table_name)

    # ---- ingest records -------------------------------------------------------------------

    def create_ingest(self, ingest_id: str, fields: Mapping[str, Any]) -> bool:
        """Put a new ingest record; False (and no write) when the id is already recorded."""
        now = iso(utcnow())
        item = {
            **fields,
            "pk": f"ingest#{ingest_id}",
            "kind": KIND_INGEST,
            "ingest_id": ingest_id,
            "created_at": now,
            "updated_at": now,
        }
        try:
            self._table.put_item(Item=_clean(item), ConditionExpression="attribute_not_exists(pk)")
        except Exception as exc:
            if _is_conditional_failure(exc):
                return False
            raise
        return True

    def get_ingest(self, ingest_id: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key={"pk": f"ingest#{ingest_id}"}, ConsistentRead=True).get(
            "Item"
        )
        return _plain(item) if item else None

    def update_ingest(
        self,
        ingest_id: str,
        fields: Mapping[str, Any],
        *,
        only_if_status: Iterable[str] | None = None,
    ) -> bool:
        """Set `fields` on an existing record; False when its status is not in `only_if_status`."""
        fields = {**fields, "updated_at": iso(utcnow())}
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
        try:
            self._table.update_item(
                Key={"pk": f"ingest#{ingest_id}"},
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=_clean(values),
            )
        except Exception as exc:
            if _is_conditional_failure(exc):
                return False
            raise
        return True

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
        return _plain(response["Attributes"][name])

    def list_ingests(
        self, *, table: str | None = None, statuses: Iterable[str] | None = None
    ) -> list[dict[str, Any]]:
        """All ingest records (optionally of one table / statuses), oldest first."""
        wanted = set(statuses) if statuses is not None else None
        items = [
            i
            for i in self._scan(KIND_INGEST)
            if (table is None or i.get("table") == table)
            and (wanted is None or i.get("status") in wanted)
        ]
        return sorted(items, key=lambda i: (i.get("created_at", ""), i["ingest_id"]))

    # ---- table locks ----------------------------------------------------------------------

    def get_lock(self, table: str) -> TableLock:
        item = self._table.get_item(Key={"pk": f"table#{table}"}, ConsistentRead=True).get("Item")
        return _lock_from_item(table, item)

    def list_locks(self) -> list[TableLock]:
        return [_lock_from_item(i["table"], i) for i in self._scan(KIND_TABLE)]

    def acquire_or_enqueue(self, table: str, ingest_id: str) -> str:
        """Make `ingest_id` the table's active ingest, or queue it behind the active one.

        Returns `LOCK_ACTIVE` or `LOCK_QUEUED`; calling it again for the same id
        returns the same answer without changing anything.
        """
        outcome: list[str] = []

        def change(lock: TableLock) -> bool:
            outcome.clear()
            if lock.active == ingest_id:
                outcome.append(LOCK_ACTIVE)
                return False
            if ingest_id in lock.queue:
                outcome.append(LOCK_QUEUED)
                return False
            if lock.active is None and not lock.queue:
                lock.active, lock.active_since = ingest_id, iso(utcnow())
                outcome.append(LOCK_ACTIVE)
            else:
                lock.queue.append(ingest_id)
                outcome.append(LOCK_QUEUED)
            return True

        self._mutate_lock(table, change)
        return outcome[0]

    def release(self, table: str, ingest_id: str) -> str | None:
        """Free the table held by `ingest_id` and hand it to the first queued ingest.

        Returns the ingest that now holds the table (to be started by the
        caller), or None. A repeated release by the same ingest returns the same
        successor again, so a retried caller can finish starting it.
        """
        successor: list[str | None] = [None]

        def change(lock: TableLock) -> bool:
            successor[0] = None
            if lock.active == ingest_id:
                nxt = lock.queue.pop(0) if lock.queue else None
                lock.active = nxt
                lock.active_since = iso(utcnow()) if nxt else None
                lock.handed_over_from = ingest_id
                successor[0] = nxt
                return True
            if lock.handed_over_from == ingest_id:
                successor[0] = lock.active
            elif ingest_id in lock.queue:  # dropped while waiting (e.g. sweeper)
                lock.queue.remove(ingest_id)
                return True
            return False

        self._mutate_lock(table, change)
        return successor[0]

    def _mutate_lock(self, table: str, change: Callable[[TableLock], bool]) -> TableLock:
        """Read-modify-write the lock item; retry when another writer got there first."""
        for _ in range(_LOCK_RETRIES):
            lock = self.get_lock(table)
            expected = lock.version
            if not change(lock):
                return lock
            lock.version = expected + 1
            item = {
                "pk": f"table#{table}",
                "kind": KIND_TABLE,
                "table": table,
                "active": lock.active,
                "active_since": lock.active_since,
                "queue": lock.queue,
                "handed_over_from": lock.handed_over_from,
                "version": lock.version,
                "updated_at": iso(utcnow()),
            }
            try:
                self._table.put_item(
                    Item=_clean(item),
                    ConditionExpression="attribute_not_exists(pk) OR version = :v",
                    ExpressionAttributeValues={":v": expected},
                )
            except Exception as exc:
                if _is_conditional_failure(exc):
                    continue
                raise
            return lock
        raise LedgerContentionError(f"lock item of {table} kept changing; retry later")

    def _scan(self, kind: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        kwargs: dict[str, Any] = {
            "FilterExpression": "kind = :k",
            "ExpressionAttributeValues": {":k": kind},
            "ConsistentRead": True,
        }
        while True:
            page = self._table.scan(**kwargs)
            items.extend(_plain(i) for i in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return items
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _lock_from_item(table: str, item: Mapping[str, Any] | None) -> TableLock:
    if not item:
        return TableLock(table=table)
    item = _plain(dict(item))
    return TableLock(
        table=table,
        active=item.get("active"),
        active_since=item.get("active_since"),
        queue=list(item.get("queue") or []),
        handed_over_from=item.get("handed_over_from"),
        version=int(item.get("version", 0)),
    )


def _clean(item: Mapping[str, Any]) -> dict[str, Any]:
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
