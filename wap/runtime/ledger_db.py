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
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ingestion.ledger.records import plain_value, storable_item
from ingestion.ledger.schema import INDEXES, PARTITION_KEY

# Every attribute a ledger index keys on gets a column (and an SQLite index per GSI).
INDEXED = tuple(dict.fromkeys(name for pair in INDEXES.values() for name in pair))


def _column(name: str) -> str:
    """The column of an indexed attribute; names are the ledger's constants, checked here
    because they are put into SQL text (values always go in as parameters)."""
    if not re.fullmatch(r"[a-z_]{1,40}", name):
        raise ValueError(f"not an index attribute name: {name!r}")
    return f"a_{name}"


def _text(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return value.get("S") if isinstance(value, dict) else None


class LedgerDatabase:
    """Items as DynamoDB JSON (`{"pk": {"S": ...}, ...}`), keyed by their partition key."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # durable across a process kill
        columns = "".join(f", {_column(name)} TEXT" for name in INDEXED)
        self._db.execute(
            f"CREATE TABLE IF NOT EXISTS items (pk TEXT PRIMARY KEY, item TEXT NOT NULL{columns})"
        )
        for hash_key, range_key in INDEXES.values():
            self._db.execute(
                f"CREATE INDEX IF NOT EXISTS by_{hash_key} ON items "
                f"({_column(hash_key)}, {_column(range_key)}, pk)"
            )

    def write(self, upserts: dict[str, dict[str, Any]], deletes: Iterable[str] = ()) -> None:
        """Upsert and delete items by partition key, in one transaction."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                names = ", ".join(_column(name) for name in INDEXED)
                marks = ", ".join("?" for _ in INDEXED)
                self._db.executemany(
                    f"INSERT OR REPLACE INTO items (pk, item, {names}) "  # noqa: S608 (_column)
                    f"VALUES (?, ?, {marks})",
                    [
                        (pk, json.dumps(item), *(_text(item, name) for name in INDEXED))
                        for pk, item in upserts.items()
                    ],
                )
                self._db.executemany("DELETE FROM items WHERE pk = ?", [(pk,) for pk in deletes])
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

    def get(self, pk: str) -> dict[str, Any] | None:
        """One item by its partition key (as `write` keys it), or None."""
        with self._lock:
            row = self._db.execute("SELECT item FROM items WHERE pk = ?", (pk,)).fetchone()
        return json.loads(row[0]) if row else None

    def query(
        self,
        index: str,
        hash_value: str,
        *,
        condition: tuple[str, list[str]] | None,
        forward: bool,
        limit: int | None,
        after: tuple[str, str] | None,
    ) -> list[dict[str, Any]]:
        """Items of one index key, in the index's order, as a GSI query reads them:
        `condition` (op, values) on the range key, `after` = (range value, pk) of the page's
        start key, at most `limit`. Items without the range attribute are not in the index."""
        hash_key, range_key = INDEXES[index]
        h, r = _column(hash_key), _column(range_key)
        sql = f"SELECT item FROM items WHERE {h} = ? AND {r} IS NOT NULL"  # noqa: S608 (_column)
        params: list[Any] = [hash_value]
        if condition is not None:
            op, values = condition
            if op == "BETWEEN":
                sql += f" AND {r} BETWEEN ? AND ?"
            elif op == "BEGINS_WITH":
                sql += f" AND substr({r}, 1, length(?)) = ?"
                values = [values[0], values[0]]
            elif op in ("=", "<", "<=", ">", ">="):
                sql += f" AND {r} {op} ?"
            else:
                raise ValueError(f"unsupported key condition {op}")
            params += values
        if after is not None:
            sql += f" AND ({r}, pk) {'>' if forward else '<'} (?, ?)"
            params += list(after)
        order = "ASC" if forward else "DESC"
        sql += f" ORDER BY {r} {order}, pk {order}"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [json.loads(text) for (text,) in rows]

    def of_kinds(
        self, kinds: Iterable[str], *, except_statuses: Iterable[str] = ()
    ) -> list[dict[str, Any]]:
        """Items of these kinds, except those in `except_statuses` (a command's start asks
        for the few unfinished ones and the lock items, not the history)."""
        kinds, skipped = list(kinds), list(except_statuses)
        sql = (
            f"SELECT item FROM items WHERE {_column('kind')} IN "  # noqa: S608 (_column)
            f"({', '.join('?' for _ in kinds)})"
        )
        if skipped:
            sql += (
                f" AND ({_column('status')} IS NULL OR {_column('status')} NOT IN "
                f"({', '.join('?' for _ in skipped)}))"
            )
        with self._lock:
            rows = self._db.execute(sql, [*kinds, *skipped]).fetchall()
        return [json.loads(text) for (text,) in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def to_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """A plain item in DynamoDB JSON, stored as the ledger stores it (`storable_item`)."""
    from boto3.dynamodb.types import TypeSerializer

    serializer = TypeSerializer()
    return {key: serializer.serialize(value) for key, value in storable_item(item).items()}


def from_dynamo(item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB JSON item as the ledger reads it (`plain_value`: ints and floats)."""
    from boto3.dynamodb.types import TypeDeserializer

    deserializer = TypeDeserializer()
    return {key: plain_value(deserializer.deserialize(value)) for key, value in item.items()}


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
        from local.aws.moto_fidelity import WRITE_ACTIONS, request_action

        action = request_action(handler)
        if action not in WRITE_ACTIONS:
            return
        keys = [
            key
            for table, key in _named_keys(action, handler.body)
            if table == self.table_name and PARTITION_KEY in key
        ]
        if not keys:
            return
        backend = handler.dynamodb_backend
        if self.table_name not in backend.tables:
            return
        upserts: dict[str, dict[str, Any]] = {}
        deletes: list[str] = []
        for key in keys:
            pk = pk_key(key[PARTITION_KEY]["S"])
            current = backend.get_item(self.table_name, {PARTITION_KEY: key[PARTITION_KEY]})
            if current is None:
                deletes.append(pk)
            else:
                upserts[pk] = current.to_json()["Attributes"]
        self.database.write(upserts, deletes)

    def attach(self, backend: Any) -> None:
        """Back moto's ledger table with the database: items load when first asked for by
        key, index queries read the database. Nothing is read now."""
        from local.aws.moto_fidelity import make_transactions_item_scoped

        install_index_queries()
        make_transactions_item_scoped()  # moto's whole-table copy would copy the database
        table = backend.get_table(self.table_name)
        if table.items:
            raise RuntimeError(f"{self.table_name} already holds items: attach it empty")
        table.items = LazyItems(self.database)


def _named_keys(action: str, body: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    if action == "PutItem":
        yield body.get("TableName"), body.get("Item") or {}
    elif action in ("UpdateItem", "DeleteItem"):
        yield body.get("TableName"), body.get("Key") or {}
    elif action == "TransactWriteItems":
        for entry in body.get("TransactItems") or []:
            for op_type, op in entry.items():
                yield (
                    op.get("TableName"),
                    (op.get("Item") if op_type == "Put" else op.get("Key")) or {},
                )
    elif action == "BatchWriteItem":
        for table, requests in (body.get("RequestItems") or {}).items():
            for request in requests:
                if "PutRequest" in request:
                    yield table, request["PutRequest"].get("Item") or {}
                elif "DeleteRequest" in request:
                    yield table, request["DeleteRequest"].get("Key") or {}


def pk_key(value: str) -> str:
    """How the database keys an item: its partition key value, as DynamoDB JSON text."""
    return json.dumps({"S": value})


def _item(attrs: dict[str, Any]) -> Any:
    """A moto Item from stored DynamoDB JSON, without moto's per-attribute size re-check
    (quadratic in the attributes; the item was measured when it was written)."""
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

    item = Item.__new__(Item)
    item.hash_key, item.range_key = DynamoType(attrs[PARTITION_KEY]), None
    item.attrs = LimitedSizeDict()
    dict.update(item.attrs, {name: DynamoType(value) for name, value in attrs.items()})
    return item


class LazyItems(dict):
    """moto's `Table.items` for the ledger: an item comes from the database the first time
    something asks for it by key (GetItem, a write's current item, a condition, a delete),
    so a command's start does not read the history. Index queries read the database
    (`install_index_queries`); nothing scans the ledger."""

    def __init__(self, database: LedgerDatabase) -> None:
        super().__init__()
        self._database = database
        self._deleted: set[Any] = set()

    def _load(self, key: Any) -> bool:
        if dict.__contains__(self, key):
            return True
        if key in self._deleted or getattr(key, "type", None) != "S":
            return False
        attrs = self._database.get(pk_key(key.value))
        if attrs is None:
            return False
        dict.__setitem__(self, key, _item(attrs))
        return True

    def __contains__(self, key: object) -> bool:
        return self._load(key)

    def __getitem__(self, key: Any) -> Any:
        self._load(key)
        return dict.__getitem__(self, key)

    def get(self, key: Any, default: Any = None) -> Any:
        return dict.__getitem__(self, key) if self._load(key) else default

    def __setitem__(self, key: Any, value: Any) -> None:
        self._deleted.discard(key)
        dict.__setitem__(self, key, value)

    def pop(self, key: Any, *default: Any) -> Any:
        self._load(key)
        self._deleted.add(key)  # until the journal deletes its row, it must not come back
        return dict.pop(self, key, *default)

    def __delitem__(self, key: Any) -> None:
        self.pop(key)


_RESULT_SIZE_LIMIT = 1_000_000  # DynamoDB pages a query at 1 MB, as moto does
_queries_installed = False


def install_index_queries() -> None:
    """Queries of a ledger index (a table whose items are `LazyItems`) read the database,
    page by page, as DynamoDB reads a GSI: in the index's order, `Limit` before the filter,
    a LastEvaluatedKey when more remain. Other tables keep moto's query."""
    global _queries_installed
    if _queries_installed:
        return
    import inspect

    from moto.dynamodb.models.table import Table

    original = Table.query
    signature = inspect.signature(original)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        call = signature.bind(self, *args, **kwargs)
        call.apply_defaults()
        named = call.arguments
        if (
            not isinstance(self.items, LazyItems)
            or named["index_name"] not in INDEXES
            or (named["projection_expressions"] or named.get("filter_kwargs"))
        ):
            return original(self, *args, **kwargs)
        return _index_query(self, named)

    Table.query = query
    _queries_installed = True


def _index_query(table: Any, named: dict[str, Any]) -> Any:
    from moto.dynamodb.exceptions import MockValidationException

    index = named["index_name"]
    if named["consistent_read"]:
        raise MockValidationException(
            "Consistent reads are not supported on global secondary indexes"
        )
    hash_attr, range_attr = INDEXES[index]
    hash_key = named["hash_key"]
    if hash_key is None and named.get("hash_key_conditions"):
        hash_key = named["hash_key_conditions"][0][1]
    condition = None
    if named["range_comparison"]:
        condition = (
            str(named["range_comparison"]).upper(),
            [obj.value for obj in named["range_objs"]],
        )
    start = named["exclusive_start_key"]
    after = None
    if start:
        after = (start[range_attr]["S"], pk_key(start[PARTITION_KEY]["S"]))
    limit = named["limit"]
    forward = named["scan_index_forward"] is not False
    rows = table.items._database.query(
        index,
        hash_key.value,
        condition=condition,
        forward=forward,
        limit=None if limit is None else limit + 1,
        after=after,
    )
    results, size, last_key = [], 0, None
    for attrs in rows:
        item = _item(attrs)
        if (limit is not None and len(results) == limit) or (
            results and size + item.size() > _RESULT_SIZE_LIMIT
        ):
            last = results[-1]
            last_key = {
                PARTITION_KEY: last.hash_key,
                hash_attr: last.attrs[hash_attr],
                range_attr: last.attrs[range_attr],
            }
            break
        results.append(item)
        size += item.size()
    scanned = len(results)
    if named["filter_expression"] is not None:
        results = [item for item in results if named["filter_expression"].expr(item)]
    return results, scanned, last_key
