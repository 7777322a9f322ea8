"""The deployed ledger table works with the real ledger module (moto, same key schema)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from lambdas.common.ledger import LOCK_ACTIVE, LOCK_QUEUED, Ledger


@pytest.fixture
def ledger(synthesized, monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    tables = [t["Properties"] for t in synthesized.of_type("AWS::DynamoDB::Table").values()
              if "TableName" not in t["Properties"]]  # Nessie's tables are the named ones
    (props,) = tables
    with mock_aws():
        dynamodb = boto3.resource("dynamodb")
        dynamodb.create_table(TableName="ledger", KeySchema=props["KeySchema"],
                              AttributeDefinitions=props["AttributeDefinitions"],
                              BillingMode=props["BillingMode"])
        yield Ledger("ledger", dynamodb_resource=dynamodb)


def test_ingest_records_are_written_once(ledger):
    assert ledger.create_ingest("0123456789abcdef", {"table": "sales.orders"}) is True
    assert ledger.create_ingest("0123456789abcdef", {"table": "sales.orders"}) is False
    assert ledger.get_ingest("0123456789abcdef")["table"] == "sales.orders"


def test_table_locks_queue_in_arrival_order(ledger):
    assert ledger.acquire_or_enqueue("sales.orders", "a" * 16) == LOCK_ACTIVE
    assert ledger.acquire_or_enqueue("sales.orders", "b" * 16) == LOCK_QUEUED
    assert ledger.release("sales.orders", "a" * 16) == "b" * 16
