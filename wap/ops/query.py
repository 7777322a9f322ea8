"""`wap query`: SQL (DuckDB) over the tables of a branch, an ingest or main, without a JVM.

The tables the statement names (DuckDB's parser says which, without running it) are read
with pyiceberg through the `metadataLocation` Nessie holds on the reference, as `wap show`
counts rows, and handed to a locked-down DuckDB connection (`sql_sandbox`) as Arrow tables
named like the tables (`sales.orders`). A bare name (`orders`) is the table of that name on
the reference: the one `--table` or the ingest names, else the only one so named. Only the
tables named are read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contracts.naming import INGEST_ID, NESSIE_REF_NAME
from ingestion import constants as c
from lakeview import iceberg
from wap.exceptions import InvalidInputError, NotAllowedError, UnknownTargetError
from wap.ops import sql_sandbox
from wap.ops.backend import Backend
from wap.ops.ingests import find_ingest, parse_table, read_report
from wap.ops.sql_sandbox import QueryError, QueryResult, TableName

DEFAULT_LIMIT = 100
# The tables are read into memory whole: refuse what would not fit comfortably.
DEFAULT_MAX_SCAN_MB = 512
# DuckDB's own catalog (metadata views and functions): answered by DuckDB, not the lake.
_DUCKDB_CATALOGS = {"system", "temp"}
_DUCKDB_SCHEMAS = {"information_schema", "pg_catalog"}


@dataclass(frozen=True)
class TableRead:
    """One table a query reads, at which snapshot (None: the reference's current state)."""

    table: str
    metadata_location: str
    snapshot_id: int | None = None


@dataclass(frozen=True)
class RefTables:
    """The Iceberg tables `target` (branch, ingest id or main) lets a query read."""

    ref: str
    tables: dict[str, str]  # ns.table -> metadataLocation, every table on the ref
    default: str | None = None  # --table or the ingest's table: its bare name means it
    snapshots: dict[str, int] = field(default_factory=dict)  # pinned (a published ingest's)
    ingest_id: str | None = None

    def read(self, table: str) -> TableRead:
        return TableRead(table, self.tables[table], self.snapshots.get(table))


@dataclass(frozen=True)
class QuerySource:
    """What a query reads: which tables of which reference, at which snapshots."""

    ref: str
    reads: tuple[TableRead, ...] = ()
    ingest_id: str | None = None
    # The views the sandbox holds: (namespace, name) as the SQL names it -> ns.table.
    views: dict[tuple[str, str], str] = field(default_factory=dict)

    def describe(self) -> str:
        ingest = f" (ingest {self.ingest_id})" if self.ingest_id else ""
        if not self.reads:
            return f"{self.ref} (no table read){ingest}"
        if len(self.reads) == 1 and self.reads[0].snapshot_id is not None:
            read = self.reads[0]
            return f"{read.table} on {self.ref} at snapshot {read.snapshot_id}{ingest}"
        names = ", ".join(
            read.table
            + (f" at snapshot {read.snapshot_id}" if read.snapshot_id is not None else "")
            for read in self.reads
        )
        return f"{names} on {self.ref}{ingest}"


@dataclass(frozen=True)
class QueryOutcome:
    source: QuerySource
    result: QueryResult


def resolve_ref(backend: Backend, target: str, *, table: str | None = None) -> RefTables:
    """The reference `target` names and the tables it holds.

    An ingest id reads its branch while the branch is open; a published ingest reads main,
    its table as of the snapshot it published. `table` (`--table`) must be on the ref.
    """
    target = target.strip()
    wanted = parse_table(table).qualified if table is not None else None
    if INGEST_ID.fullmatch(target):
        return _ingest_ref(backend, target, wanted)
    if not NESSIE_REF_NAME.fullmatch(target):
        raise InvalidInputError(
            f"{target!r} is neither an ingest id (16 hex characters) nor a branch name"
        )
    if backend.nessie.reference(target) is None:
        raise UnknownTargetError(f"no branch or tag {target!r} in Nessie (see `wap branches`)")
    tables = backend.nessie.iceberg_tables(target)
    if wanted is not None and wanted not in tables:
        raise UnknownTargetError(f"no table {wanted} on {target}{_listing(tables)}")
    return RefTables(target, tables, default=wanted)


def _listing(tables: dict[str, str]) -> str:
    names = sorted(tables)
    if not names:
        return " (it holds none)"
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f" (tables there: {shown})"


def _ingest_ref(backend: Backend, ingest: str, wanted: str | None) -> RefTables:
    record = find_ingest(backend, ingest)
    table, branch, status = record.table, record.branch, record.status
    if not table:
        raise NotAllowedError(f"ingest {ingest} has no table")
    if wanted is not None and wanted != table:
        raise InvalidInputError(f"ingest {ingest} wrote {table}, not {wanted}")
    if branch and backend.nessie.reference(branch) is not None:
        tables = backend.nessie.iceberg_tables(branch)
        if table not in tables:
            raise NotAllowedError(f"ingest {ingest} wrote nothing to {table} on {branch}")
        return RefTables(branch, tables, default=table, ingest_id=ingest)
    if status == c.PUBLISHED:
        report = None if record.audited_snapshot_id else read_report(backend, record)
        snapshot = record.audited_snapshot_id or (report.snapshot_id if report else None)
        tables = backend.nessie.iceberg_tables(c.MAIN_BRANCH)
        if snapshot is not None and table in tables:
            return RefTables(c.MAIN_BRANCH, tables, table, {table: int(snapshot)}, ingest_id=ingest)
    raise NotAllowedError(
        f"ingest {ingest} is {status} and its branch is gone: nothing of it to query "
        f"(query main instead)"
    )


def bind(ref: RefTables, names: list[TableName] | None) -> QuerySource:
    """Which table of the ref each name of the statement means; None (DuckDB could not
    tell the names) reads the default table, or the ref's only one."""
    if names is None:
        default = ref.default or (next(iter(ref.tables)) if len(ref.tables) == 1 else None)
        if default is None:
            raise InvalidInputError(
                f"cannot tell which tables this statement reads: name one with --table"
                f"{_listing(ref.tables)}"
            )
        namespace, name = default.split(".")
        views = {(namespace, name): default, ("main", name): default}
    else:
        views = {}
        for found in names:
            view = _bind_one(ref, found)
            if view is None:
                continue
            if views.setdefault(view[0], view[1]) != view[1]:
                raise InvalidInputError(
                    f"{'.'.join(view[0])} names both {views[view[0]]} and {view[1]} on "
                    f"{ref.ref}: name them in full"
                )
    read = sorted(set(views.values()))
    return QuerySource(ref.ref, tuple(ref.read(t) for t in read), ref.ingest_id, views)


def _bind_one(ref: RefTables, found: TableName) -> tuple[tuple[str, str], str] | None:
    if found.catalog in _DUCKDB_CATALOGS or (
        found.catalog in ("", "memory") and found.schema in _DUCKDB_SCHEMAS
    ):
        return None
    qualified = f"{found.schema}.{found.name}"
    if found.catalog in ("", "memory") and found.schema and qualified in ref.tables:
        return (found.schema, found.name), qualified
    if found.catalog in ("", "memory") and found.schema in ("", "main"):
        if ref.default is not None and ref.default.split(".")[1] == found.name:
            return ("main", found.name), ref.default
        same = sorted(t for t in ref.tables if t.split(".")[1] == found.name)
        if len(same) == 1:
            return ("main", found.name), same[0]
        if same:
            raise InvalidInputError(
                f"{found.name} is ambiguous on {ref.ref}: name it {' or '.join(same)}"
            )
    raise UnknownTargetError(f"no table {found} on {ref.ref}{_listing(ref.tables)}")


def load(source: QuerySource, properties: dict[str, str], *, max_scan_mb: int) -> dict[str, Any]:
    """Each table of the source's rows as an Arrow table (by ns.table); refuses snapshots
    above `max_scan_mb` of data files in all, before reading any."""
    opened = []
    total = 0
    for read in source.reads:
        table = iceberg.open_table(read.metadata_location, properties)
        snapshot = (
            table.snapshot_by_id(read.snapshot_id)
            if read.snapshot_id is not None
            else table.current_snapshot()
        )
        if read.snapshot_id is not None and snapshot is None:
            raise NotAllowedError(
                f"snapshot {read.snapshot_id} is no longer in {read.table}'s history on "
                f"{source.ref}"
            )
        size = (snapshot.summary or {}).get("total-files-size") if snapshot is not None else None
        total += int(size or 0)
        opened.append((read, table))
    if max_scan_mb and total > max_scan_mb * 1024 * 1024:
        hold = "holds" if len(source.reads) == 1 else "hold"
        raise NotAllowedError(
            f"{source.describe()} {hold} {total / 1024 / 1024:.0f} MiB of data files, above "
            f"--max-scan-mb {max_scan_mb}: the tables are read into memory whole (raise the "
            "limit if this machine can hold it)"
        )
    return {
        read.table: iceberg.read_rows(table, snapshot_id=read.snapshot_id) for read, table in opened
    }


def check_statement(sql: str) -> list[TableName] | None:
    """The tables `sql` names (None: DuckDB cannot tell); raise QueryError unless it is one
    read-only query statement."""
    if not sql.strip():
        raise QueryError("the SQL statement is empty")
    return sql_sandbox.referenced_tables(sql)


def resolve(backend: Backend, target: str, sql: str, *, table: str | None = None) -> QuerySource:
    """The tables of the ref `target` names that `sql` reads (nothing is read yet)."""
    names = check_statement(sql)
    return bind(resolve_ref(backend, target, table=table), names)


def run_query(
    backend: Backend,
    target: str,
    sql: str,
    *,
    table: str | None = None,
    limit: int | None = DEFAULT_LIMIT,
    max_scan_mb: int = DEFAULT_MAX_SCAN_MB,
) -> QueryOutcome:
    """Run one read-only SQL statement over the tables of `target` it names; at most
    `limit` rows."""
    source = resolve(backend, target, sql, table=table)  # refused before any table is read
    rows = load(source, backend.iceberg_properties(), max_scan_mb=max_scan_mb)
    tables = {tuple(name.split(".")): data for name, data in rows.items()}
    short = {
        name: tuple(table.split("."))
        for (schema, name), table in source.views.items()
        if schema == "main" and table.split(".")[0] != "main"
    }
    con = sql_sandbox.connect_tables(tables, short=short)
    try:
        return QueryOutcome(source, sql_sandbox.run(con, sql, limit=limit))
    finally:
        con.close()
