"""The daily run's compaction (lambdas/maintenance/handler.py, after garbage collection):
finish every compaction whose job run ended, then start one for each table whose data files
on main reach its `maintenance.min_files`. The runs themselves: ingestion/
compaction_runs.py."""

from __future__ import annotations

from collections.abc import Mapping

from contracts.table_config import MaintenanceOptions
from ingestion import compaction as rules
from ingestion import constants as c
from ingestion.compaction_runs import RUNNING, finish, start
from ingestion.config import Settings
from ingestion.exceptions import TableBusyError
from ingestion.ledger import Ledger
from ingestion.log import logger
from ingestion.nessie import NessieClient


def daily(
    settings: Settings,
    ledger: Ledger,
    nessie: NessieClient,
    data_files: Mapping[str, int],
    options: Mapping[str, MaintenanceOptions],
) -> dict[str, list[str]]:
    """Finish the compactions whose job ended, then start one for each table whose data
    files on main (`data_files`, from the day's collection) reach its `min_files`. A table
    that fails is logged and left for tomorrow; the others go on."""
    finished, started = [], []
    for record in ledger.list_ingests(statuses=[c.RUNNING]):  # an index: re-read below
        if record.source_uri != rules.SOURCE:
            continue
        try:
            if finish(settings, ledger, nessie, record.ingest_id)["status"] != RUNNING:
                finished.append(record.ingest_id)
        except Exception:
            logger.exception("compaction not finished", extra={"run_id": record.ingest_id})
    for table, files in sorted(data_files.items()):
        table_options = options.get(table) or MaintenanceOptions()
        if files < max(table_options.min_files, 2):  # one file has nothing to merge with
            continue
        try:
            started.append(start(settings, ledger, nessie, table, table_options)["run_id"])
        except TableBusyError:
            logger.info("compaction skipped: the table is busy", extra={"table": table})
        except Exception:
            logger.exception("compaction not started", extra={"table": table})
    return {"finished": finished, "started": started}
