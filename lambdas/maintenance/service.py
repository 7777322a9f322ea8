"""The scheduled maintenance run: garbage collection across every Nessie reference over the
lake bucket's warehouse, each table's health as metrics and a summary for the dashboard.

It reports what is reclaimable; it deletes only when the deploy says so (`-c gcDelete=true`,
`WAP_GC_DELETE`), the way `wap gc` deletes only with `--delete`. Each table's `maintenance:`
section (its config in the artifacts bucket) sets its retention and grace, as for `wap gc`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from contracts.table_config import MaintenanceOptions, TableConfigError
from ingestion import aws
from ingestion import constants as c
from ingestion.batching import read_table_config
from ingestion.config import Settings
from ingestion.exceptions import ConfigError
from ingestion.log import logger
from ingestion.maintenance import checkpoint, health
from ingestion.maintenance.gc import Budget, GcReport, S3Warehouse, collect, gc_options
from ingestion.nessie import NessieClient
from lambdas.maintenance.fileio import PROPERTIES


@dataclass(frozen=True)
class MaintenanceSettings:
    """What only the maintenance Lambda reads from its environment."""

    warehouse_uri: str  # s3://<lake bucket>/warehouse/
    gc_delete: bool = False


def load_maintenance_settings(env: Mapping[str, str] | None = None) -> MaintenanceSettings:
    """Raises `ConfigError` for a missing warehouse or a malformed switch."""
    env = os.environ if env is None else env
    warehouse = env.get(c.ENV_WAREHOUSE_URI, "")
    if not warehouse.startswith("s3://"):
        raise ConfigError(
            f"{c.ENV_WAREHOUSE_URI} must be the lake's s3:// warehouse, got {warehouse!r}"
        )
    raw = (env.get(c.ENV_GC_DELETE) or "false").strip().lower()
    if raw not in ("true", "false"):
        raise ConfigError(f"{c.ENV_GC_DELETE} must be true or false, got {raw!r}")
    return MaintenanceSettings(warehouse_uri=warehouse, gc_delete=raw == "true")


def table_maintenance(settings: Settings, tables: list[str]) -> dict[str, MaintenanceOptions]:
    """The `maintenance:` section of each table's config; a table without one, or whose
    config does not parse (its ingests are refused too), keeps the defaults."""
    found: dict[str, MaintenanceOptions] = {}
    for table in tables:
        try:
            config = read_table_config(settings, table)
        except TableConfigError as exc:
            logger.warning(
                "table config refused: its table keeps the maintenance defaults",
                extra={"table": table, "error": str(exc)},
            )
            continue
        if config is not None:
            found[table] = config.maintenance
    return found


def run_maintenance(
    settings: Settings,
    maintenance: MaintenanceSettings,
    nessie: NessieClient,
    tables: dict[str, MaintenanceOptions],
    *,
    clock: Callable[[], datetime] | None = None,
    budget: Budget | None = None,
) -> GcReport:
    """Collect (deleting only when `maintenance.gc_delete`; each table's retention and grace
    from `tables`, its `table_maintenance`), write each table's metrics to the log and keep
    the summary under the reports prefix; the collection's report.

    Within `budget` (the invocation's time less what compaction and the summary need): a
    mark that outlasts it keeps its checkpoint, and the next run continues from there."""
    s3 = aws.client("s3")
    options = gc_options(
        delete=maintenance.gc_delete, retention_days=None, grace_hours=None, tables=tables
    )
    now = (clock or (lambda: datetime.now(UTC)))()
    resume = checkpoint.load(s3, settings.reports_prefix, now)
    report = collect(
        nessie,
        S3Warehouse(s3, maintenance.warehouse_uri),
        options,
        properties=dict(PROPERTIES),
        clock=lambda: now,
        budget=budget,
        resume=resume,
    )
    if resume is not None or not report.complete:
        checkpoint.keep(s3, settings.reports_prefix, report.checkpoint)
    if not report.complete:
        logger.warning(
            "garbage collection out of time: its mark continues in the next run",
            extra={"live_commits": report.live_commits, "marked_files": report.marked_files},
        )
    health.emit_metrics(report)
    health.keep_summary(report, s3, settings.reports_prefix)
    return report


def outcome(report: GcReport) -> dict[str, Any]:
    """What the invocation returns and logs: the run in numbers."""
    return {
        "deleted": report.deleted,
        "complete": report.complete,
        "resumed": report.resumed,
        "references": report.references,
        "live_commits": report.live_commits,
        "marked_files": report.marked_files,
        "reclaimable_files": len(report.garbage),
        "reclaimable_bytes": report.garbage_bytes,
        "missing_files": len(report.missing),
        "tables": len(report.tables),
    }
