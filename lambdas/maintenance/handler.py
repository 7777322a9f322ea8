"""Maintenance Lambda: the daily run (garbage collection across Nessie references, then
compaction) and, invoked by `wap --aws maintain`, one table's compaction."""

from __future__ import annotations

from typing import Any

from contracts.table_config import MaintenanceOptions
from ingestion import compaction_runs
from ingestion import constants as c
from ingestion.config import load_settings
from ingestion.exceptions import InvalidEventError
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.nessie import client_for
from lambdas.maintenance import compaction
from lambdas.maintenance.service import (
    load_maintenance_settings,
    outcome,
    run_maintenance,
    table_maintenance,
)

ACTION_COMPACT = "compact"
ACTION_COMPACT_FINISH = "compact_finish"


@logger.inject_lambda_context(clear_state=True)
def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Input: the schedule's event, `{"action": "compact", "table": "ns.table"}` or
    `{"action": "compact_finish", "run_id": R}`. Output: the daily run in numbers, or the
    compaction's state (`status` RUNNING until its job run ended, then its outcome)."""
    settings = load_settings()
    nessie = client_for(settings)
    ledger = Ledger(settings.ledger_table, lease=settings.lock_lease)
    action = event.get("action") if isinstance(event, dict) else None
    if action == ACTION_COMPACT:
        table = event.get("table")
        if not isinstance(table, str):
            raise InvalidEventError("compact needs {'table': 'ns.table'}")
        options = table_maintenance(settings, [table]).get(table)
        return compaction_runs.start(
            settings, ledger, nessie, table, options or MaintenanceOptions()
        )
    if action == ACTION_COMPACT_FINISH:
        run_id = event.get("run_id")
        if not isinstance(run_id, str):
            raise InvalidEventError("compact_finish needs {'run_id': '<16 hex>'}")
        return compaction_runs.finish(settings, ledger, nessie, run_id)
    if action is not None:
        raise InvalidEventError(f"unknown action {action!r} (compact, compact_finish)")
    # Each table's `maintenance:` read once: the collection and the compactions use it.
    listed = sorted(nessie.iceberg_tables(c.MAIN_BRANCH))
    options = table_maintenance(settings, listed)
    report = run_maintenance(settings, load_maintenance_settings(), nessie, options)
    result = outcome(report)
    logger.info("garbage collection done", extra=result)
    # Main's data files per table, as the collection just measured them (a directory no
    # table owns counts none).
    tables = {
        name: sweep.data_files for name, sweep in report.tables.items() if sweep.data_files > 0
    }
    # A table that reached main after the listing above has its config read now.
    options |= table_maintenance(settings, sorted(set(tables) - set(listed)))
    result["compaction"] = compaction.daily(settings, ledger, nessie, tables, options)
    logger.info("compactions finished and started", extra=result["compaction"])
    return result
