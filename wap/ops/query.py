"""`wap query`: SQL (DuckDB) over one table as of a branch, an ingest or main, without a JVM.

The table is read with pyiceberg through the `metadataLocation` Nessie holds on the
reference, as `wap show` counts rows, and handed to a locked-down DuckDB connection
(`sql_sandbox`) as an Arrow table named like the table (`orders` and `sales.orders`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from contracts.naming import INGEST_ID, NESSIE_REF_NAME
from lakeview import iceberg
from lambdas.common import constants as c
from wap.exceptions import InvalidInputError, NotAllowedError, UnknownTargetError
from wap.ops import sql_sandbox
from wap.ops.backend import Backend
from wap.ops.operations import find_ingest, parse_table, read_report
from wap.ops.sql_sandbox import QueryError, QueryResult

DEFAULT_LIMIT = 100
# The whole table is read into memory: refuse what would not fit comfortably.
DEFAULT_MAX_SCAN_MB = 512


@dataclass(frozen=True)
class QuerySource:
    """The table a query reads: on which reference, at which snapshot."""

    ref: str
    table: str
    metadata_location: str
    snapshot_id: int | None = None  # None: the reference's current state
    ingest_id: str | None = None

    def describe(self) -> str:
        at = f" at snapshot {self.snapshot_id}" if self.snapshot_id is not None else ""
        ingest = f" (ingest {self.ingest_id})" if self.ingest_id else ""
        return f"{self.table} on {self.ref}{at}{ingest}"


@dataclass(frozen=True)
class QueryOutcome:
    source: QuerySource
    result: QueryResult


def resolve(backend: Backend, target: str, *, table: str | None = None) -> QuerySource:
    """Which table, reference and snapshot `target` (branch, ingest id or main) names.

    An ingest id reads its branch while the branch is open; a published ingest reads main
    as of the snapshot it published. A reference holding several tables needs `table`,
    unless exactly one of them differs from main.
    """
    target = target.strip()
    wanted = parse_table(table).qualified if table is not None else None
    if INGEST_ID.fullmatch(target):
        return _ingest_source(backend, target, wanted)
    if not NESSIE_REF_NAME.fullmatch(target):
        raise InvalidInputError(
            f"{target!r} is neither an ingest id (16 hex characters) nor a branch name"
        )
    if backend.nessie.reference(target) is None:
        raise UnknownTargetError(f"no branch or tag {target!r} in Nessie (see `wap branches`)")
    tables = backend.nessie.iceberg_tables(target)
    name = _choose_table(backend, target, tables, wanted)
    return QuerySource(ref=target, table=name, metadata_location=tables[name])


def _choose_table(backend: Backend, ref: str, tables: dict[str, str], wanted: str | None) -> str:
    if wanted is not None:
        if wanted not in tables:
            raise UnknownTargetError(f"no table {wanted} on {ref}{_listing(tables)}")
        return wanted
    if len(tables) == 1:
        return next(iter(tables))
    if not tables:
        raise UnknownTargetError(f"{ref} holds no Iceberg tables")
    if ref != c.MAIN_BRANCH:
        main = backend.nessie.iceberg_tables(c.MAIN_BRANCH)
        changed = [name for name, location in tables.items() if main.get(name) != location]
        if len(changed) == 1:
            return changed[0]
    raise InvalidInputError(
        f"{ref} holds several tables: choose one with --table{_listing(tables)}"
    )


def _listing(tables: dict[str, str]) -> str:
    names = sorted(tables)
    if not names:
        return " (it holds none)"
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    return f" (tables there: {shown})"


def _ingest_source(backend: Backend, ingest: str, wanted: str | None) -> QuerySource:
    record = find_ingest(backend, ingest)
    table, branch, status = record.table, record.branch, record.status
    if not table:
        raise NotAllowedError(f"ingest {ingest} has no table")
    if wanted is not None and wanted != table:
        raise InvalidInputError(f"ingest {ingest} wrote {table}, not {wanted}")
    if branch and backend.nessie.reference(branch) is not None:
        location = backend.nessie.metadata_location(branch, table)
        if location is None:
            raise NotAllowedError(f"ingest {ingest} wrote nothing to {table} on {branch}")
        return QuerySource(branch, table, location, ingest_id=ingest)
    if status == c.PUBLISHED:
        report = None if record.audited_snapshot_id else read_report(backend, record)
        snapshot = record.audited_snapshot_id or (report.snapshot_id if report else None)
        location = backend.nessie.metadata_location(c.MAIN_BRANCH, table)
        if snapshot is not None and location is not None:
            return QuerySource(c.MAIN_BRANCH, table, location, int(snapshot), ingest_id=ingest)
    raise NotAllowedError(
        f"ingest {ingest} is {status} and its branch is gone: nothing of it to query "
        f"(query main instead)"
    )


def load(source: QuerySource, properties: dict[str, str], *, max_scan_mb: int) -> Any:
    """The source's rows as an Arrow table; refuses a snapshot above `max_scan_mb` of files."""
    table = iceberg.open_table(source.metadata_location, properties)
    snapshot = (
        table.snapshot_by_id(source.snapshot_id)
        if source.snapshot_id is not None
        else table.current_snapshot()
    )
    if source.snapshot_id is not None and snapshot is None:
        raise NotAllowedError(
            f"snapshot {source.snapshot_id} is no longer in {source.table}'s history on main"
        )
    size = (snapshot.summary or {}).get("total-files-size") if snapshot is not None else None
    if size is not None and max_scan_mb and int(size) > max_scan_mb * 1024 * 1024:
        raise NotAllowedError(
            f"{source.describe()} holds {int(size) / 1024 / 1024:.0f} MiB of data files, above "
            f"--max-scan-mb {max_scan_mb}: the whole table is read into memory (raise the limit "
            "if this machine can hold it)"
        )
    return iceberg.read_rows(table, snapshot_id=source.snapshot_id)


def check_statement(sql: str) -> None:
    """Raise QueryError unless `sql` is one read-only query statement."""
    if not sql.strip():
        raise QueryError("the SQL statement is empty")
    sql_sandbox.check_read_only(sql)


def run_query(
    backend: Backend,
    target: str,
    sql: str,
    *,
    table: str | None = None,
    limit: int | None = DEFAULT_LIMIT,
    max_scan_mb: int = DEFAULT_MAX_SCAN_MB,
) -> QueryOutcome:
    """Run one read-only SQL statement over the table `target` names; at most `limit` rows."""
    check_statement(sql)  # refused before any table is read
    source = resolve(backend, target, table=table)
    rows = load(source, backend.iceberg_properties(), max_scan_mb=max_scan_mb)
    namespace, name = source.table.split(".")
    con = sql_sandbox.connect(rows, namespace, name)
    try:
        return QueryOutcome(source, sql_sandbox.run(con, sql, limit=limit))
    finally:
        con.close()
