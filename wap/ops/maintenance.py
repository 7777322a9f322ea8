"""Maintenance of the lake on either backend: garbage collection across Nessie references.

The mark-and-sweep itself is `ingestion.maintenance.gc` (it reads Iceberg metadata with
pyiceberg; the scheduled maintenance Lambda runs it too); this module gives it the backend's
Nessie client and warehouse (a local directory or the lake bucket's prefix) and shapes its
report for `wap gc`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from contracts.table_config import MaintenanceOptions, TableConfigError, parse_table_config_text
from ingestion.maintenance.gc import (  # noqa: F401 (gc_options: `wap gc`'s, re-exported)
    GcOptions,
    GcReport,
    LocalWarehouse,
    S3Warehouse,
    Warehouse,
    collect,
    gc_options,
)
from wap.ops.backend import Backend
from wap.ops.configs import deployed_configs


def warehouse_of(backend: Backend) -> Warehouse:
    """The backend's warehouse as something to list and delete from."""
    uri = backend.warehouse_uri()
    if uri.startswith("file:"):
        return LocalWarehouse(uri)
    return S3Warehouse(backend.s3(), uri)


def collect_garbage(
    backend: Backend,
    options: GcOptions,
    *,
    clock: Callable[[], datetime] | None = None,
    between_phases: Callable[[], None] | None = None,
) -> GcReport:
    """Mark what every live reference reaches, sweep the rest (deleting only when
    `options.delete`); see `ingestion.maintenance.gc`."""
    return collect(
        backend.nessie,
        warehouse_of(backend),
        options,
        properties=backend.iceberg_properties(),
        clock=clock,
        between_phases=between_phases,
    )


def record_gc(backend: Backend, report: GcReport) -> None:
    """Keep the run's per-table health where the dashboard's table page reads it (the
    scheduled Lambda does the same on AWS) and write its metrics where this backend's go.
    Raises the S3 client's error when it cannot be put."""
    from ingestion.maintenance import health

    if (stream := backend.metrics_stream()) is not None:
        health.emit_metrics(report, stream=stream)
    prefix = backend.reports_prefix()
    if prefix is None:
        raise ValueError(f"the {backend.kind} backend keeps no reports")
    health.keep_summary(report, backend.s3(), prefix)
    backend.changed()


def gc_summary(backend: Backend) -> dict[str, Any] | None:
    """The latest garbage collection's summary (`ingestion.maintenance.health.summary`), None
    before the first one."""
    import json

    from ingestion.maintenance import health

    prefix = backend.reports_prefix()
    body = backend.read_object(health.summary_uri(prefix)) if prefix else None
    return None if body is None else json.loads(body)


@dataclass(frozen=True)
class GcRow:
    """One table's line of `wap gc`."""

    table: str
    data_files: int  # at main's head
    data_bytes: int
    average_file_bytes: int | None
    live_files: int
    live_bytes: int
    garbage_files: int
    garbage_bytes: int
    deleted_files: int
    deleted_bytes: int


def gc_rows(report: GcReport) -> list[GcRow]:
    """The report's tables, those with the most to reclaim first."""
    return [
        GcRow(
            t.table,
            t.data_files,
            t.data_bytes,
            t.data_bytes // t.data_files if t.data_files else None,
            t.live_files,
            t.live_bytes,
            t.garbage_files,
            t.garbage_bytes,
            t.deleted_files,
            t.deleted_bytes,
        )
        for t in sorted(report.tables.values(), key=lambda t: (-t.garbage_bytes, t.table))
    ]


def gc_json(report: GcReport | None, options: GcOptions) -> dict[str, Any]:
    """`wap gc --json` (docs/cli-schemas/gc.json); None: a home with nothing to collect."""
    from dataclasses import asdict

    if report is None:
        return {
            "deleted": False,
            "started": None,
            "cutoff": None,
            "retention_seconds": options.retention.total_seconds(),
            "grace_seconds": options.grace.total_seconds(),
            "references": 0,
            "live_commits": 0,
            "marked_files": 0,
            "missing_files": [],
            "collected_history": [],
            "reclaimable_files": 0,
            "reclaimable_bytes": 0,
            "tables": [],
        }
    return {
        "deleted": report.deleted,
        "started": report.started.isoformat(),
        "cutoff": report.cutoff.isoformat(),
        "retention_seconds": options.retention.total_seconds(),
        "grace_seconds": options.grace.total_seconds(),
        "references": report.references,
        "live_commits": report.live_commits,
        "marked_files": report.marked_files,
        "missing_files": list(report.missing),
        "collected_history": list(report.collected_history),
        "reclaimable_files": len(report.garbage),
        "reclaimable_bytes": report.garbage_bytes,
        "tables": [asdict(row) for row in gc_rows(report)],
    }


def table_maintenance(backend: Backend) -> dict[str, MaintenanceOptions]:
    """`ns.table` -> the `maintenance:` section of every table config the job would read
    (the tables directory locally, the artifacts bucket's `tables/` on AWS). A config that
    does not parse is left out: its table gets the defaults, as its ingests get refused."""
    import yaml

    texts = deployed_configs(backend).tables
    found: dict[str, MaintenanceOptions] = {}
    for table, text in texts.items():
        try:
            found[table] = parse_table_config_text(text, table, yaml=yaml).maintenance
        except TableConfigError:
            continue
    return found
