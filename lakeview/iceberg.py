"""Read Iceberg table state without a JVM: pyiceberg over the metadata file Nessie points to.

Everything here takes a metadata location (what Nessie holds as `metadataLocation`) and
pyiceberg FileIO properties; pyiceberg's errors become `TableReadError`s with one line.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lakeview.exceptions import TableReadError

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.table import StaticTable


@dataclass(frozen=True)
class Column:
    """One field of the current schema."""

    field_id: int
    name: str
    type: str
    required: bool
    doc: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """A snapshot and its summary (`operation`, `total-records`, `wap.ingest-id`...)."""

    snapshot_id: int
    parent_id: int | None
    timestamp_ms: int
    operation: str | None
    summary: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TableInfo:
    """What the catalog UI shows of a table: schema, partitioning, current snapshot, rows."""

    location: str
    metadata_location: str
    format_version: int
    columns: list[Column]
    partition_spec: str
    current: Snapshot | None
    snapshot_count: int
    row_count: int


@contextmanager
def _reading(metadata_location: str) -> Iterator[None]:
    try:
        yield
    except (OSError, ValueError, KeyError) as exc:  # missing file, bad JSON, schema mismatch
        detail = " ".join(str(exc).split())[:300]
        raise TableReadError(
            f"cannot read Iceberg table {metadata_location}: {type(exc).__name__}: {detail}"
        ) from exc


def open_table(metadata_location: str, properties: dict[str, str] | None = None) -> StaticTable:
    """The table as its metadata file describes it."""
    from pyiceberg.table import StaticTable

    with _reading(metadata_location):
        return StaticTable.from_metadata(metadata_location, properties or {})


def row_count(metadata_location: str, properties: dict[str, str] | None = None) -> int:
    """Rows in the table's current snapshot (0 for a table without snapshots)."""
    table = open_table(metadata_location, properties)
    with _reading(metadata_location):
        return _rows(table, table.current_snapshot())


def _rows(table: StaticTable, snapshot: Any) -> int:
    if snapshot is None:
        return 0
    total = snapshot.summary.get("total-records") if snapshot.summary else None
    if total is not None:
        return int(total)
    return table.scan(snapshot_id=snapshot.snapshot_id).count()  # summaries are optional


def _snapshot(snapshot: Any) -> Snapshot:
    summary = snapshot.summary
    return Snapshot(
        snapshot_id=snapshot.snapshot_id,
        parent_id=snapshot.parent_snapshot_id,
        timestamp_ms=snapshot.timestamp_ms,
        operation=summary.operation.value if summary is not None else None,
        summary=dict(summary.additional_properties) if summary is not None else {},
    )


def describe(table: StaticTable) -> TableInfo:
    """Schema, partition spec, current snapshot and row count of an opened table."""
    metadata = table.metadata
    with _reading(table.metadata_location):
        schema = table.schema()
        current = table.current_snapshot()
        return TableInfo(
            location=metadata.location,
            metadata_location=table.metadata_location,
            format_version=metadata.format_version,
            columns=[
                Column(f.field_id, f.name, str(f.field_type), f.required, f.doc)
                for f in schema.fields
            ],
            partition_spec=", ".join(
                f"{f.transform}({schema.find_column_name(f.source_id)})"
                for f in table.spec().fields
            )
            or "unpartitioned",
            current=_snapshot(current) if current is not None else None,
            snapshot_count=len(metadata.snapshots),
            row_count=_rows(table, current),
        )


def snapshot_of(table: StaticTable, snapshot_id: int) -> Snapshot | None:
    """A snapshot of the table's history by id, or None."""
    found = table.snapshot_by_id(snapshot_id)
    return _snapshot(found) if found is not None else None


def read_rows(
    table: StaticTable, *, snapshot_id: int | None = None, limit: int | None = None
) -> pa.Table:
    """The table's rows as of a snapshot (default: current), at most `limit` of them."""
    with _reading(table.metadata_location):
        return table.scan(snapshot_id=snapshot_id, limit=limit).to_arrow()


def data_files(table: StaticTable) -> set[str]:
    """Paths of the data files in the current snapshot."""
    with _reading(table.metadata_location):
        return {task.file.file_path for task in table.scan().plan_files()}


def _tasks_outside(table: StaticTable, other_files: set[str], limit: int | None = None) -> Any:
    scan = table.scan(limit=limit)
    return scan, [t for t in scan.plan_files() if t.file.file_path not in other_files]


def count_outside(table: StaticTable, other_files: set[str]) -> int:
    """Rows in data files of the current snapshot that are not in `other_files` (no data read)."""
    with _reading(table.metadata_location):
        _, tasks = _tasks_outside(table, other_files)
        return sum(t.file.record_count for t in tasks)


def rows_outside(table: StaticTable, other_files: set[str], *, limit: int) -> tuple[pa.Table, int]:
    """Rows in data files of the current snapshot that are not in `other_files`.

    For an append-only branch against the table it forked from (a WAP branch against
    main), those are exactly the rows the branch added. Returns at most `limit` rows and
    the total count (from the files' record counts, without reading them).
    """
    from pyiceberg.io.pyarrow import ArrowScan

    with _reading(table.metadata_location):
        scan, tasks = _tasks_outside(table, other_files, limit)
        total = sum(t.file.record_count for t in tasks)
        rows = ArrowScan(
            table.metadata, table.io, scan.projection(), scan.row_filter, limit=limit
        ).to_table(tasks)
        return rows, total
