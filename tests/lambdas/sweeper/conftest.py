"""A ledger on moto's DynamoDB for the sweeper's functions."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ingestion.ledger import Ledger
from local.aws.stack import create_ledger_table


@pytest.fixture
def ledger(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        create_ledger_table(boto3.client("dynamodb"), "ledger")
        yield Ledger("ledger")
