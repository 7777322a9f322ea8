"""A table's health as a garbage collection measured it: the embedded metrics each table's
document carries and the summary the dashboard reads (no lake needed: a report by hand)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

from ingestion.maintenance import health
from ingestion.maintenance.gc import GcReport, StoredFile, TableSweep

STARTED = datetime(2026, 11, 25, 3, 0, tzinfo=UTC)


def _report() -> GcReport:
    """sales.orders: 4 data files of 1,000 bytes on main, 300 bytes reclaimable; a directory
    no table owns (a discarded branch's new table): 100 bytes reclaimable."""
    report = GcReport(started=STARTED, cutoff=STARTED, deleted=False)
    report.tables["sales.orders"] = TableSweep(
        "sales.orders", data_files=4, data_bytes=4000, garbage_files=2, garbage_bytes=300
    )
    report.tables["sales/stray"] = TableSweep("sales/stray", garbage_files=1, garbage_bytes=100)
    report.garbage = [
        StoredFile("/w/sales/orders/a", 100, STARTED),
        StoredFile("/w/sales/orders/b", 200, STARTED),
        StoredFile("/w/sales/stray/c", 100, STARTED),
    ]
    return report


def test_each_table_gets_its_files_average_size_and_reclaimable_bytes_by_table_only():
    log = io.StringIO()

    health.emit_metrics(_report(), stream=log)

    documents = [json.loads(line) for line in log.getvalue().splitlines()]
    by_table = {d.get("Table"): d for d in documents}
    orders = by_table["sales.orders"]
    [directive] = orders["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "WAP/Ingest"
    # Sizes of different tables do not add up: no total dimension set.
    assert directive["Dimensions"] == [["Table"]]
    units = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert units == {
        "DataFilesOnMain": "Count",
        "AverageDataFileBytes": "Bytes",
        "ReclaimableBytes": "Bytes",
    }
    assert (
        orders["DataFilesOnMain"],
        orders["AverageDataFileBytes"],
        orders["ReclaimableBytes"],
    ) == (4, 1000, 300)
    # No data file on main: no average (zero would read as a tiny file).
    assert "AverageDataFileBytes" not in by_table["sales/stray"]
    total = by_table[None]
    assert total["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[]]
    assert total["ReclaimableBytes"] == 400


def test_the_summary_names_each_table_and_when_the_collection_ran():
    summary = health.summary(_report())

    assert summary["collected_at"] == STARTED.isoformat()
    assert summary["deleted"] is False and summary["reclaimable_bytes"] == 400
    assert summary["tables"]["sales.orders"] == {
        "data_files": 4,
        "data_bytes": 4000,
        "average_file_bytes": 1000,
        "reclaimable_files": 2,
        "reclaimable_bytes": 300,
        "deleted_bytes": 0,
    }
    assert summary["tables"]["sales/stray"]["average_file_bytes"] is None
    assert health.summary_uri("s3://art/reports/") == "s3://art/reports/maintenance/gc-latest.json"
