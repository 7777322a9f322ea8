"""The local ledger on disk: one SQLite row per DynamoDB item, written through at every
change, as DynamoDB's writes are durable when the call returns.

moto keeps its tables in memory. `LedgerJournal` watches the DynamoDB requests made
against the ledger table and, inside the request's lock, writes the items they named to
`<home>/state/ledger.sqlite` (WAL: a killed process loses nothing it was told was
written). A command's start loads the rows straight into moto's table, without a request
per item.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

from lambdas.common.ledger import PARTITION_KEY

_WRITE_ACTIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems",
                            "BatchWriteItem"})


class LedgerDatabase:
    """Items as DynamoDB JSON (`{"pk": {"S": ...}, ...}`), keyed by their partition key."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across a process kill
        self._db.execute("CREATE TABLE IF NOT EXISTS items "
                         "(pk TEXT PRIMARY KEY, item TEXT NOT NULL)")

    def write(self, upserts: dict[str, dict[str, Any]], deletes: Iterable[str] = ()) -> None:
        """Upsert and delete items by partition key, in one transaction."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany("INSERT OR REPLACE INTO items (pk, item) VALUES (?, ?)",
                                     [(pk, json.dumps(item)) for pk, item in upserts.items()])
                self._db.executemany("DELETE FROM items WHERE pk = ?",
                                     [(pk,) for pk in deletes])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def items(self) -> Iterator[dict[str, Any]]:
        """Every stored item (DynamoDB JSON), in key order."""
        with self._lock:
            rows = self._db.execute("SELECT item FROM items ORDER BY pk").fetchall()
        for (text,) in rows:
            yield json.loads(text)

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM items").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def to_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """A plain item (as the ledger writes it) in DynamoDB JSON."""
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()
    return {key: serializer.serialize(_decimals(value)) for key, value in item.items()}


def from_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB JSON item as plain Python (numbers as int or float)."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: _plain(deserializer.deserialize(value)) for key, value in item.items()}


def _decimals(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _decimals(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decimals(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, set)):
        return [_plain(v) for v in (sorted(value) if isinstance(value, set) else value)]
    return value


class LedgerJournal:
    """Writes the ledger table's changed items to a `LedgerDatabase` as requests land."""

    def __init__(self, database: LedgerDatabase, table_name: str) -> None:
        self.database = database
        self.table_name = table_name

    def install(self) -> None:
        from local.aws.moto_fidelity import observe_dynamodb_writes

        observe_dynamodb_writes(self.observe)

    def uninstall(self) -> None:
        from local.aws.moto_fidelity import forget_dynamodb_writes

        forget_dynamodb_writes(self.observe)

    def observe(self, handler: Any) -> None:
        """After one DynamoDB request: store the current state of every item it named."""
        action = handler.get_endpoint_name(handler.headers)
        if action not in _WRITE_ACTIONS:
            return
        keys = [key for table, key in _named_keys(action, handler.body)
                if table == self.table_name and PARTITION_KEY in key]
        if not keys:
            return
        backend = handler.dynamodb_backend
        if self.table_name not in backend.tables:
            return
        upserts: dict[str, dict[str, Any]] = {}
        deletes: list[str] = []
        for key in keys:
            pk = json.dumps(key[PARTITION_KEY], sort_keys=True)
            current = backend.get_item(self.table_name, {PARTITION_KEY: key[PARTITION_KEY]})
            if current is None:
                deletes.append(pk)
            else:
                upserts[pk] = current.to_json()["Attributes"]
        self.database.write(upserts, deletes)

    def load_into(self, backend: Any) -> list[dict[str, Any]]:
        """Put every stored item into moto's table directly (no request, no validation per
        item: they were valid when written); returns them (DynamoDB JSON)."""
        from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

        table = backend.get_table(self.table_name)
        items = list(self.database.items())
        for attrs in items:
            # Item() re-measures the whole item at each attribute (quadratic): these were
            # measured when written, so the attributes go in at once.
            item = Item.__new__(Item)
            item.hash_key, item.range_key = DynamoType(attrs[PARTITION_KEY]), None
            item.attrs = LimitedSizeDict()
            dict.update(item.attrs, {name: DynamoType(value) for name, value in attrs.items()})
            table.items[item.hash_key] = item
        return items


def _named_keys(action: str, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if action == "PutItem":
        yield body.get("TableName"), body.get("Item") or {}
    elif action in ("UpdateItem", "DeleteItem"):
        yield body.get("TableName"), body.get("Key") or {}
    elif action == "TransactWriteItems":
        for entry in body.get("TransactItems") or []:
            for op_type, op in entry.items():
                yield op.get("TableName"), (op.get("Item") if op_type == "Put"
                                            else op.get("Key")) or {}
    elif action == "BatchWriteItem":
        for table, requests in (body.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    yield table, request["PutRequest"].get("Item") or {}
                elif "DeleteRequest" in request:
                    yield table, request["DeleteRequest"].get("Key") or {}
