"""A DuckDB connection that can read one Arrow table and nothing else.

`wap query` runs SQL a person typed against a table of the lake. DuckDB is in-process
and by default reads and writes local files, attaches databases and loads extensions.
The sandbox closes each of those doors before the statement is parsed:

- an in-memory database holding only views over the registered Arrow table;
- `enable_external_access=false` (no file, network or extension access: `read_csv`,
  `COPY`, `ATTACH`, `INSTALL`, `LOAD` all fail), extension autoloading off, and the
  configuration locked so the statement cannot switch any of it back on;
- exactly one statement, and it must be a query (`SELECT`, `WITH`, `FROM`, `VALUES`,
  `DESCRIBE`, `SUMMARIZE`); `CREATE`, `INSERT`, `SET`, `CALL`, `PRAGMA`... are refused
  before they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from wap.exceptions import OpsError

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

_SOURCE = "_wap_source"
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


def connect(data: pa.Table, namespace: str, name: str) -> duckdb.DuckDBPyConnection:
    """A locked-down connection where `name` and `namespace.name` are views over `data`."""
    import duckdb

    con = duckdb.connect(":memory:", config=dict(_LOCKED_CONFIG))
    con.register(_SOURCE, data)
    if namespace != "main":
        con.execute(f"CREATE SCHEMA {_quote(namespace)}")
    con.execute(f"CREATE VIEW {_quote(namespace)}.{_quote(name)} AS FROM {_SOURCE}")
    if namespace != "main":
        con.execute(f"CREATE VIEW main.{_quote(name)} AS FROM {_SOURCE}")
    con.execute("SET lock_configuration = true")
    return con


def check_read_only(sql: str) -> str:
    """`sql` if it is one query statement; raise QueryError otherwise (nothing runs)."""
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from None
    if len(statements) != 1:
        raise QueryError(f"expected one SQL statement, got {len(statements)}")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise QueryError(
            f"only queries are allowed (SELECT, WITH, FROM, DESCRIBE...), not {kind.name}"
        )
    return sql


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
            f"refused: a query may read only the table, no files ({_first_line(exc)})"
        ) from None
    except duckdb.Error as exc:
        raise QueryError(f"SQL error: {_first_line(exc)}") from None
    if rows.num_rows > limit:
        return QueryResult(rows.slice(0, limit), truncated=True)
    return QueryResult(rows, truncated=False)
