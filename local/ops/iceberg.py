"""Read Iceberg table state without a JVM: pyiceberg over the metadata file Nessie points to."""

from __future__ import annotations

from local.ops.exceptions import CatalogError


def row_count(metadata_location: str, properties: dict[str, str] | None = None) -> int:
    """Rows in the table's current snapshot (0 for a table without snapshots)."""
    from pyiceberg.table import StaticTable

    try:
        table = StaticTable.from_metadata(metadata_location, properties or {})
        snapshot = table.current_snapshot()
        if snapshot is None:
            return 0
        total = snapshot.summary.get("total-records") if snapshot.summary else None
        if total is not None:
            return int(total)
        return table.scan().count()  # summaries are optional in the spec
    except (OSError, ValueError) as exc:
        raise CatalogError(
            f"cannot read Iceberg metadata {metadata_location}: {type(exc).__name__}: {exc}"
        ) from exc
