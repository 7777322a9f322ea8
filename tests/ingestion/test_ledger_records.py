"""The ledger's typed records and their one mapping to and from DynamoDB items."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal

import pytest

from ingestion import constants as c
from ingestion.ledger import (
    STATUSES,
    BatchRecord,
    IngestRecord,
    TableLock,
    lock_from_item,
    lock_to_item,
    record_from_item,
    record_to_item,
)
from tests.fixtures.ledger_items import ledger_item

INGEST_ITEM = ledger_item(
    "a" * 16,
    table="s.t",
    status="PUBLISHED",
    created_at="2026-01-01T00:00:00Z",
    bucket="b",
    key="s/t/x.parquet",
    source_uri="s3://b/s/t/x.parquet",
    object_version="v1",
    staged_uri="s3://a/staging/x.parquet",
    size=Decimal("12"),
    attempts=Decimal("2"),
    job_tries=Decimal("1"),
    rows_written=Decimal("1000"),
    branch="wap_s_t_x",
    snapshot_id="123",
    expires_at=Decimal("1900000000"),
    solo=True,
    branch_attempt_2="wap_s_t_y",
    job_started_at_a2_t1="2026-01-01T00:01:00Z",
)
BATCH_ITEM = ledger_item(
    "b" * 16,
    kind="batch",
    table="s.t",
    status="RUNNING",
    members=["1" * 16, "2" * 16],
    sources=["s3://a/staging/1", "s3://a/staging/2"],
    files=Decimal("2"),
    all_or_nothing=True,
    size=Decimal("30"),
    attempts=Decimal("0"),
)


def test_an_ingest_item_reads_as_a_typed_record_and_writes_back_the_same():
    record = record_from_item(INGEST_ITEM)
    assert isinstance(record, IngestRecord) and not record.is_batch
    assert record.status == c.PUBLISHED and record.is_terminal and not record.is_pending
    assert record.rows_written == 1000 and type(record.rows_written) is int
    assert record.size == 12 and record.attempts == 2 and record.solo is True
    assert record.reader_uris == ("s3://a/staging/x.parquet",)
    # Named per attempt: kept in `extra`, read through their accessors.
    assert record.branch_attempt(2) == "wap_s_t_y" and record.branch_attempt(3) is None
    assert record.started_at(2, 1) == "2026-01-01T00:01:00Z"
    assert record_to_item(record) == INGEST_ITEM
    assert record_from_item(record_to_item(record)) == record


def test_a_batch_item_reads_as_a_batch_record_and_writes_back_the_same():
    record = record_from_item(BATCH_ITEM)
    assert isinstance(record, BatchRecord) and record.is_batch and record.is_pending is False
    assert record.members == ("1" * 16, "2" * 16) and record.files == 2
    assert record.reader_uris == ("s3://a/staging/1", "s3://a/staging/2")
    assert record.member_sources == {"1" * 16: "s3://a/staging/1", "2" * 16: "s3://a/staging/2"}
    assert record_to_item(record) == BATCH_ITEM
    assert record_from_item(record_to_item(record)) == record


def test_an_unknown_attribute_survives_a_round_trip():
    """Written by another version of the service: kept, never dropped by a rewrite."""
    item = {**INGEST_ITEM, "written_by_v9": {"nested": [Decimal("1.5"), "x"]}}
    record = record_from_item(item)
    assert record.extra["written_by_v9"] == {"nested": [1.5, "x"]}
    assert record_to_item(record)["written_by_v9"] == {"nested": [Decimal("1.5"), "x"]}
    assert (
        record_to_item(replace(record, status=c.DISCARDED))["written_by_v9"]
        == item["written_by_v9"]
    )


def test_numbers_come_back_as_int_or_float_and_go_back_as_decimal():
    record = record_from_item(
        {**INGEST_ITEM, "rows_written": Decimal("7"), "ratio": Decimal("0.25")}
    )
    assert record.rows_written == 7 and isinstance(record.rows_written, int)
    assert record.extra["ratio"] == 0.25 and isinstance(record.extra["ratio"], float)
    item = record_to_item(record)
    assert item["rows_written"] == Decimal("7") and item["ratio"] == Decimal("0.25")
    assert not any(isinstance(v, float) for v in item.values())


def test_none_is_not_stored_and_an_item_without_kind_is_an_ingest():
    record = record_from_item({"pk": "ingest#" + "c" * 16, "ingest_id": "c" * 16, "error": None})
    assert isinstance(record, IngestRecord) and record.error is None
    assert record_to_item(record) == {
        "pk": "ingest#" + "c" * 16,
        "kind": "ingest",
        "ingest_id": "c" * 16,
    }
    with pytest.raises(ValueError, match="kind 'table'"):
        record_from_item({"pk": "table#s.t", "kind": "table", "table": "s.t"})


def test_a_record_is_read_by_attribute_and_is_not_a_mapping():
    record = record_from_item(INGEST_ITEM)
    assert record.status == "PUBLISHED" and record.error is None
    assert record.branch_attempt(2) == "wap_s_t_y" and record.field_value("error") is None
    assert not isinstance(record, Mapping)
    with pytest.raises(TypeError, match="not subscriptable"):
        record["status"]  # type: ignore[index]
    with pytest.raises(AttributeError):
        record.get("status")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        _ = {**record}  # type: ignore[dict-item]


def test_the_status_type_names_every_status_of_the_constants():
    assert frozenset({c.RECEIVED, c.HELD, c.QUEUED, c.RUNNING}) | c.TERMINAL_STATUSES == STATUSES


def test_a_lock_item_round_trips_with_its_unknown_attributes():
    item = {
        "pk": "table#s.t",
        "kind": "table",
        "table": "s.t",
        "active": "1" * 16,
        "active_since": "2026-01-01T00:00:00Z",
        "lease_expires_at": "2026-01-01T04:00:00Z",
        "queue": ["2" * 16],
        "batch": ["1" * 16, "3" * 16],
        "handed_over_from": "0" * 16,
        "version": Decimal("4"),
        "created_at": "2025-12-31T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "from_the_future": Decimal("3"),
    }
    lock = lock_from_item("s.t", item)
    assert lock == TableLock(
        table="s.t",
        active="1" * 16,
        active_since=item["active_since"],
        queue=["2" * 16],
        batch=["1" * 16, "3" * 16],
        handed_over_from="0" * 16,
        lease_expires_at=item["lease_expires_at"],
        created_at=item["created_at"],
        version=4,
        extra={"from_the_future": 3},
    )
    assert lock_to_item(lock, "2026-01-01T00:00:00Z") == item
    assert lock_from_item("s.t", None) == TableLock(table="s.t")
