"""The sweeper's adoption of a run it finds merged into main (it died after the merge):
published, with its report's counts, and alerted as Finish alerts a publish."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ingestion import constants as c
from ingestion.ledger import IngestRecord
from lambdas.sweeper import service
from tests.fixtures.moto_ledger import SETTINGS
from tests.fixtures.quarantine import quarantined_report

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


class _Nessie:
    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete_branch(self, branch: str) -> None:
        self.deleted.append(branch)


def _adopt(ledger, tmp_path, quarantined: int) -> tuple[IngestRecord, list]:
    report = quarantined_report(quarantined_rows=quarantined)
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report.to_dict()))
    record = IngestRecord(
        ingest_id="a" * 16,
        table="sales.orders",
        status=c.RUNNING,
        branch="wap_a",
        report_uri=path.as_uri(),
    )
    ledger.create_ingest(record)
    sent: list = []
    service.settle_merged(SETTINGS, ledger, _Nessie(), record, NOW, deliver=sent.append)
    return ledger.get_ingest(record.ingest_id), sent


def test_a_run_found_merged_with_rows_set_aside_sends_the_quarantine_warning(ledger, tmp_path):
    settled, sent = _adopt(ledger, tmp_path, quarantined=3)

    assert (settled.status, settled.rows_written, settled.quarantined_rows) == (
        c.PUBLISHED,
        997,
        3,
    )
    [alert] = sent
    assert alert.outcome == c.PUBLISHED
    assert (alert.quarantine.rows_published, alert.quarantine.rows_quarantined) == (997, 3)
    assert alert.quarantine.quarantine_tables == ("sales.orders__quarantine",)


def test_a_clean_run_found_merged_sends_nothing(ledger, tmp_path):
    settled, sent = _adopt(ledger, tmp_path, quarantined=0)

    assert (settled.status, settled.rows_written, settled.quarantined_rows) == (
        c.PUBLISHED,
        997,
        None,
    )
    assert sent == []
