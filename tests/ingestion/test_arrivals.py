"""Expected arrivals (issue 42): a table whose drop was not published by its deadline
alerts once, and once more when a drop is published again; only a published drop is an
arrival. On moto's ledger and on a home's (the `ledger` fixture), with an injected clock."""

from __future__ import annotations

from datetime import UTC, datetime

from contracts.alert import LATE, RECOVERED, AlertEvent
from contracts.arrivals import parse_expect
from ingestion.arrivals import Expectation, check_arrivals, expectations, subject_freshness
from ingestion.ledger import dataset_subject
from tests.fixtures.ledger_items import ledger_item
from tests.ingestion.test_ledger import ledger  # noqa: F401 (the fixture)

DAILY = parse_expect({"every": "1d", "by": "06:00"})
ORDERS = Expectation("sales.orders", DAILY)


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def _drop(ledger, ingest_id: str, status: str, at: str, **fields) -> None:  # noqa: F811
    """A file uploaded and ended at `at` (written as stored: `create_ingest` stamps now)."""
    ledger._table.put_item(
        Item=ledger_item(
            ingest_id,
            table="sales.orders",
            status=status,
            created_at=at,
            finished_at=at,
            **{"source_uri": f"s3://source/sales/orders/{ingest_id}.parquet", **fields},
        )
    )


def _sweep(ledger, at: str, found=(ORDERS,)) -> list[AlertEvent]:  # noqa: F811
    sent: list[AlertEvent] = []
    check_arrivals(ledger, list(found), _at(at), sent.append)
    return sent


def test_a_late_table_alerts_once_and_once_more_when_it_recovers(ledger):  # noqa: F811
    _drop(ledger, "a" * 16, "PUBLISHED", "2026-11-25T06:02:00Z")
    assert _sweep(ledger, "2026-11-26T05:55:00") == []  # not due yet

    late = [*_sweep(ledger, "2026-11-26T06:00:00"), *_sweep(ledger, "2026-11-26T06:05:00")]
    late += _sweep(ledger, "2026-11-27T06:05:00")  # the next missed deadline: same episode

    [alert] = late
    assert alert.outcome == LATE and alert.table == "sales.orders"
    assert alert.reason == (
        "sales.orders: nothing published since 2026-11-25 06:02; expected daily by 06:00 UTC"
    )
    assert alert.arrival.deadline == "2026-11-26T06:00:00Z"
    assert alert.arrival.last_published_at == "2026-11-25T06:02:00Z"
    assert ledger.get_arrival("sales.orders").late_since == "2026-11-26T06:00:00Z"

    _drop(ledger, "b" * 16, "PUBLISHED", "2026-11-27T09:14:00Z")
    recovered = [*_sweep(ledger, "2026-11-27T09:15:00"), *_sweep(ledger, "2026-11-27T09:20:00")]

    [alert] = recovered
    assert alert.outcome == RECOVERED
    assert "published again at 2026-11-27 09:14" in alert.reason
    assert not ledger.get_arrival("sales.orders").late
    assert _sweep(ledger, "2026-11-28T05:00:00") == []


def test_a_drop_that_did_not_publish_is_not_an_arrival(ledger):  # noqa: F811
    _drop(ledger, "a" * 16, "PUBLISHED", "2026-11-25T06:02:00Z")
    for n, status in enumerate(["AUDIT_FAILED", "JOB_FAILED", "REJECTED", "HELD", "QUEUED"]):
        _drop(ledger, f"{n}" * 16, status, f"2026-11-26T05:0{n}:00Z")
    # Nor is a compaction, which publishes without a drop.
    _drop(
        ledger, "d" * 16, "PUBLISHED", "2026-11-26T05:30:00Z", source_uri="maintenance:compaction"
    )

    [alert] = _sweep(ledger, "2026-11-26T06:05:00")

    assert alert.outcome == LATE and "since 2026-11-25 06:02" in alert.reason


def test_a_table_never_published_is_late_after_its_first_deadline(ledger):  # noqa: F811
    [alert] = _sweep(ledger, "2026-11-26T06:05:00")
    assert alert.reason == "sales.orders: nothing published on record; expected daily by 06:00 UTC"
    assert alert.arrival.last_published_at is None


def test_a_dataset_arrives_when_it_is_published(ledger):  # noqa: F811
    shop = Expectation(dataset_subject("shop"), DAILY, dataset="shop", first_table="sales.items")
    ledger._table.put_item(
        Item=ledger_item(
            "e" * 16,
            kind="batch",
            table="sales.items",
            tables=["sales.items", "sales.orders"],
            dataset_name="shop",
            status="PUBLISHED",
            created_at="2026-11-26T05:00:00Z",
            finished_at="2026-11-26T05:01:00Z",
        )
    )
    assert _sweep(ledger, "2026-11-26T06:05:00", [shop]) == []
    [alert] = _sweep(ledger, "2026-11-27T06:05:00", [shop])
    assert alert.table == "dataset:shop" and "since 2026-11-26 05:01" in alert.reason


def test_freshness_lists_late_tables_first(ledger):  # noqa: F811
    found = expectations(
        {
            "sales.orders": 'expect: {every: 1d, by: "06:00"}',
            "sales.customers": "expect: {every: 1h}",
            "sales.plain": "schema_policy: additive",
            "sales.broken": "expect: {every: 7h}",
        }
    )
    _drop(ledger, "a" * 16, "PUBLISHED", "2026-11-26T05:00:00Z")
    rows = subject_freshness(ledger, found, _at("2026-11-26T07:00:00"))
    assert [(r.subject, r.late) for r in rows] == [
        ("sales.customers", True),
        ("sales.orders", False),
    ]
    assert rows[1].age_seconds == 7200 and rows[1].expected == "daily by 06:00 UTC"
