"""The deployed ledger table works with the real ledger module (moto, same key schema)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ingestion.ledger import LOCK_ACTIVE, LOCK_QUEUED, Ledger
from tests.fixtures.fake_aws import use_fake_credentials


@pytest.fixture
def ledger(synthesized, monkeypatch):
    use_fake_credentials(monkeypatch, "eu-west-1")
    tables = [
        t["Properties"]
        for t in synthesized.of_type("AWS::DynamoDB::Table").values()
        if "TableName" not in t["Properties"]
    ]  # Nessie's tables are the named ones
    (props,) = tables
    with mock_aws():
        dynamodb = boto3.resource("dynamodb")
        dynamodb.create_table(
            TableName="ledger",
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            GlobalSecondaryIndexes=props["GlobalSecondaryIndexes"],
            BillingMode=props["BillingMode"],
        )
        yield Ledger("ledger", dynamodb_resource=dynamodb)


def test_ingest_records_are_written_once(ledger):
    assert ledger.create_ingest("0123456789abcdef", {"table": "sales.orders"}) is True
    assert ledger.create_ingest("0123456789abcdef", {"table": "sales.orders"}) is False
    assert ledger.get_ingest("0123456789abcdef").table == "sales.orders"


def test_table_locks_queue_in_arrival_order(ledger):
    for iid in ("a" * 16, "b" * 16):  # the lock transaction checks the ingest is pending
        ledger.create_ingest(iid, {"table": "sales.orders", "status": "RECEIVED"})
    assert ledger.acquire_or_enqueue("sales.orders", "a" * 16) == LOCK_ACTIVE
    assert ledger.acquire_or_enqueue("sales.orders", "b" * 16) == LOCK_QUEUED
    assert ledger.release("sales.orders", "a" * 16).id == "b" * 16


def test_listings_work_on_the_deployed_indexes(ledger):
    ledger.create_ingest("c" * 16, {"table": "sales.orders", "status": "RECEIVED"})
    ledger.update_ingest("c" * 16, {"status": "PUBLISHED"})
    assert [r.ingest_id for r in ledger.list_ingests(table="sales.orders")] == ["c" * 16]
    assert [r.ingest_id for r in ledger.list_ingests(statuses={"PUBLISHED"})] == ["c" * 16]
