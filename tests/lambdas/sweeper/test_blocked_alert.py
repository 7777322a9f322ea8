"""A table blocked by a start that keeps failing is alerted once, even when two sweeps
overlap (a slow sweep and the next scheduled one both find the same file blocked)."""

from __future__ import annotations

from datetime import UTC, datetime

from ingestion import constants as c
from ingestion.exceptions import NessieUnavailableError
from ingestion.ledger import IngestRecord
from lambdas.sweeper import service

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_two_overlapping_sweeps_alert_a_blocked_file_once(ledger, monkeypatch):
    sent: list = []
    monkeypatch.setattr(service, "send_alert_quietly", sent.append)
    record = IngestRecord(ingest_id="b" * 16, table="sales.orders", status=c.QUEUED)
    ledger.create_ingest(record)
    lock = ledger.get_lock("sales.orders")
    down = NessieUnavailableError("Nessie unreachable")

    # Both sweeps read the record before either marked it alerted.
    first, second = ledger.get_ingest(record.ingest_id), ledger.get_ingest(record.ingest_id)
    service._alert_blocked_once(ledger, first, lock, NOW, down)
    service._alert_blocked_once(ledger, second, lock, NOW, down)

    assert len(sent) == 1
    assert ledger.get_ingest(record.ingest_id).blocked_alerted_at is not None
