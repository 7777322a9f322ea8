"""Records created typed, and a batch's files taking its outcome when the table is handed
on (`settle_members`), on moto's ledger."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contracts.report import AuditReport, SourceVerdict
from ingestion import batching
from ingestion import constants as c
from ingestion.batching import settle_members
from ingestion.ledger import BatchRecord, IngestRecord
from tests.fixtures.moto_ledger import SETTINGS, moto_ledger

BATCH = "b" * 16
MEMBERS = ("1" * 16, "2" * 16)


@pytest.fixture
def ledger(monkeypatch):
    yield from moto_ledger(monkeypatch)


def _batch_of_running_files(ledger, **fields) -> BatchRecord:
    """The batch BATCH of MEMBERS (its record's `fields`), each file still RUNNING in it."""
    for member in MEMBERS:
        ledger.create_ingest(
            IngestRecord(ingest_id=member, table="s.t", status=c.RUNNING, batch_id=BATCH)
        )
    ledger.create_ingest(BatchRecord(ingest_id=BATCH, table="s.t", members=MEMBERS, **fields))
    return ledger.get_ingest(BATCH)


def test_the_files_of_a_batch_discarded_before_they_were_settled_are_discarded(ledger):
    # Finish recorded the batch JOB_FAILED and stopped before handing the table on; a
    # person discarded it (its files, still RUNNING, do not follow a discard); the sweep
    # that frees the table then settles the files with the batch's outcome.
    batch = _batch_of_running_files(
        ledger, status=c.DISCARDED, previous_status=c.JOB_FAILED, error="the job failed"
    )

    assert settle_members(SETTINGS, ledger, batch) == []

    settled = ledger.get_ingests(MEMBERS)
    assert {settled[m].status for m in MEMBERS} == {c.DISCARDED}
    assert {settled[m].error for m in MEMBERS} == {"the job failed"}


def test_a_record_is_created_from_its_type_once(ledger):
    record = IngestRecord(ingest_id=MEMBERS[0], table="s.t", status=c.RECEIVED, size=3)

    assert ledger.create_ingest(record)
    assert not ledger.create_ingest(replace(record, table="other.t"))

    stored = ledger.get_ingest(MEMBERS[0])
    assert isinstance(stored, IngestRecord) and (stored.table, stored.size) == ("s.t", 3)
    assert stored.created_at and stored.created_at == stored.updated_at
    batch = BatchRecord(ingest_id=BATCH, table="s.t", members=MEMBERS, status=c.RECEIVED)
    assert ledger.create_ingest(batch)
    assert ledger.get_ingest(BATCH).members == MEMBERS
    with pytest.raises(TypeError, match="a record, or an ingest id"):
        ledger.create_ingest(record, {"table": "s.t"})


def test_a_record_created_ended_expires_and_waits_for_the_sweep(ledger):
    ledger.create_ingest(IngestRecord(ingest_id=MEMBERS[0], status=c.REJECTED))

    stored = ledger.get_ingest(MEMBERS[0])
    assert stored.expires_at and stored.sweep == "pending"


def test_each_file_of_a_published_batch_records_the_rows_it_had_set_aside(ledger, monkeypatch):
    # Issue 40: the report's verdict of each source counts its quarantined rows; each
    # file's record carries its own count (its rows published apart).
    sources = ("s3://staging/s.t/1.parquet", "s3://staging/s.t/2.parquet")
    report = AuditReport(
        ingest_id=BATCH,
        table="s.t",
        branch="wap_b",
        outcome="passed",
        source_uris=sources,
        sources=(
            SourceVerdict(uri=sources[0], status="passed", rows=10, quarantined_rows=0),
            SourceVerdict(uri=sources[1], status="passed", rows=7, quarantined_rows=3),
        ),
        rows_written=17,
        quarantined_rows=3,
    )
    monkeypatch.setattr(batching.aws, "read_json_s3", lambda uri: report.to_dict())
    batch = _batch_of_running_files(
        ledger,
        sources=sources,
        status=c.PUBLISHED,
        report_uri="s3://artifacts/reports/b.json",
        quarantined_rows=3,
    )

    assert settle_members(SETTINGS, ledger, batch) == []

    members = [ledger.get_ingest(member) for member in MEMBERS]
    assert [(m.status, m.rows_written, m.quarantined_rows) for m in members] == [
        (c.PUBLISHED, 10, 0),
        (c.PUBLISHED, 7, 3),
    ]
    assert SourceVerdict.from_dict(report.sources[1].to_dict()) == report.sources[1]
