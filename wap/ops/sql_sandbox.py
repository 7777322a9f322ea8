"""A DuckDB connection that can read the Arrow tables it was given and nothing else.

`wap query` runs SQL a person typed against a table of the lake. DuckDB is in-process
and by default reads and writes local files, attaches databases and loads extensions.
The sandbox closes each of those doors before the statement is parsed:

- an in-memory database holding only views over the registered Arrow tables (`ns.table`
  in a schema per namespace, and short names in `main`);
- `enable_external_access=false` (no file, network or extension access: `read_csv`,
  `COPY`, `ATTACH`, `INSTALL`, `LOAD` all fail), extension autoloading off, and the
  configuration locked so the statement cannot switch any of it back on;
- exactly one statement, and it must be a query (`SELECT`, `WITH`, `FROM`, `VALUES`,
  `DESCRIBE`, `SUMMARIZE`); `CREATE`, `INSERT`, `SET`, `CALL`, `PRAGMA`, `INSTALL`... are
  refused before they run, by the keyword they start with.

Which tables a statement reads comes from DuckDB's own parser (`json_serialize_sql`, in a
connection locked the same way), so the caller reads and registers only those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wap.exceptions import OpsError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

_SOURCE = "_wap_source"
_QUERIES = "SELECT, WITH, FROM, VALUES, DESCRIBE, SUMMARIZE"
# Statements whose first keyword does not say what they do.
_PREFIXES = {"WITH"}
_WORD = re.compile(r"[A-Za-z_]+")
_LOCKED_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
    "allow_community_extensions": False,
    "threads": 2,
    "memory_limit": "2GB",
}


class QueryError(OpsError):
    """The SQL was refused or failed; the message is DuckDB's first line."""


@dataclass(frozen=True)
class QueryResult:
    """Rows of a query, at most `limit` of them; `truncated` when more exist."""

    rows: pa.Table
    truncated: bool


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return " ".join(text[0].split()) if text else type(exc).__name__


@dataclass(frozen=True)
class TableName:
    """A table a statement names, as DuckDB parsed it (lower-case: names are not
    case-sensitive); `schema` is "" for a bare name."""

    catalog: str
    schema: str
    name: str

    def __str__(self) -> str:
        return ".".join(part for part in (self.catalog, self.schema, self.name) if part)


def _locked() -> duckdb.DuckDBPyConnection:
    import duckdb

    return duckdb.connect(":memory:", config=dict(_LOCKED_CONFIG))


def connect(data: pa.Table, namespace: str, name: str) -> duckdb.DuckDBPyConnection:
    """A locked-down connection where `name` and `namespace.name` are views over `data`."""
    return connect_tables({(namespace, name): data}, short={name: (namespace, name)})


def connect_tables(
    tables: Mapping[tuple[str, str], pa.Table],
    *,
    short: Mapping[str, tuple[str, str]] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A locked-down connection where each `namespace.name` of `tables` is a view over its
    rows, and each name of `short` a view in `main` over the table it maps to."""
    con = _locked()
    try:
        sources: dict[tuple[str, str], str] = {}
        for index, (key, data) in enumerate(tables.items()):
            sources[key] = f"{_SOURCE}_{index}"
            con.register(sources[key], data)
        views = {key: key for key in tables}
        views.update({("main", name): key for name, key in (short or {}).items()})
        schemas = sorted({namespace for namespace, _ in views} - {"main"})
        for namespace in schemas:
            con.execute(f"CREATE SCHEMA {_quote(namespace)}")
        for (namespace, name), key in views.items():
            con.execute(
                f"CREATE VIEW {_quote(namespace)}.{_quote(name)} AS FROM {_quote(sources[key])}"
            )
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def check_read_only(sql: str) -> str:
    """`sql` if it is one query statement; raise QueryError otherwise (nothing runs)."""
    _statement(sql)
    return sql


def _statement(sql: str) -> Any:
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    statement = statements[0]
    try:
        kind = statement.type
    except ValueError:  # a type the Python enum does not know (`UPDATE EXTENSIONS`)
        kind = None
    if kind != duckdb.StatementType.SELECT:
        keyword = _keyword(statement.query, kind)
        raise QueryError(f"{keyword} is not allowed: only queries run ({_QUERIES})")
    return statement


def _keyword(text: str, kind: Any) -> str:
    """The keyword a refused statement starts with (`INSTALL`, `FORCE INSTALL`, `CREATE`)."""
    import duckdb

    words = []
    for offset, token in duckdb.tokenize(text):
        if token == duckdb.token_type.comment:
            continue
        if token != duckdb.token_type.keyword:
            break
        word = _WORD.match(text, offset)
        if word is None:
            break
        words.append(word.group().upper())
        if words[0] != "FORCE" or len(words) == 2:
            break
    if not words or words[0] in _PREFIXES:
        return kind.name if kind is not None else "this statement"
    return " ".join(words)


def referenced_tables(sql: str) -> list[TableName] | None:
    """The tables and views one query statement names, in order, without running it; names
    of its CTEs left out. None when DuckDB's parser cannot serialize the statement."""
    statement = _statement(sql)
    con = _locked()
    try:
        con.execute("SET lock_configuration = true")
        (text,) = con.execute("SELECT json_serialize_sql(?)", [statement.query]).fetchone()
    finally:
        con.close()
    tree = json.loads(text)
    if tree.get("error"):
        if tree.get("error_type") == "parser":
            raise QueryError(f"SQL error: {tree.get('error_message')}")
        return None
    found: list[TableName] = []
    ctes: set[str] = set()
    _walk(tree.get("statements"), found, ctes)
    named = [t for t in found if t.schema or t.catalog or t.name not in ctes]
    return list(dict.fromkeys(named))


def _walk(node: Any, found: list[TableName], ctes: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, found, ctes)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "BASE_TABLE":
        found.append(
            TableName(
                str(node.get("catalog_name") or "").lower(),
                str(node.get("schema_name") or "").lower(),
                str(node.get("table_name") or "").lower(),
            )
        )
    cte_map = node.get("cte_map")
    if isinstance(cte_map, dict):
        ctes.update(
            str(entry.get("key", "")).lower()
            for entry in cte_map.get("map") or []
            if isinstance(entry, dict)
        )
    for value in node.values():
        _walk(value, found, ctes)


def run(con: duckdb.DuckDBPyConnection, sql: str, *, limit: int | None) -> QueryResult:
    """Run one query statement; fetch at most `limit` rows (None: all)."""
    import duckdb

    check_read_only(sql)
    try:
        relation = con.sql(sql)
        if relation is None:  # not a query after all
            raise QueryError("only queries are allowed")
        if limit is None:
            return QueryResult(relation.to_arrow_table(), truncated=False)
        rows = relation.limit(limit + 1).to_arrow_table()
    except duckdb.PermissionException as exc:
        raise QueryError(
            f"refused: a query may read only the lake's tables, no files ({_first_line(exc)})"
        ) from None
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from None
    if rows.num_rows > limit:
        return QueryResult(rows.slice(0, limit), truncated=True)
    return QueryResult(rows, truncated=False)
