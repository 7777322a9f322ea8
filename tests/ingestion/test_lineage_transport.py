"""Sending OpenLineage events: the API key from its secret (never logged), bounded tries,
nothing sent without a receiver (ingestion/lineage/transport.py)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest

from ingestion import aws
from ingestion.config import Settings
from ingestion.lineage import LineageInput, start_event, transport
from local.lineage_receiver import LineageReceiver
from tests.fixtures.fake_aws import use_fake_credentials
from tests.fixtures.lineage import metrics_log

API_KEY = "olk-4f1d9c2b7e"
REGION = "eu-west-1"


def settings(**lineage) -> Settings:
    return Settings(
        ledger_table="l",
        nessie_uri="http://n/api/v1",
        emr_application_id="a",
        emr_execution_role_arn="r",
        job_entrypoint="e",
        reports_prefix="s3://b/r/",
        logs_prefix="s3://b/l/",
        state_machine_arn="m",
        artifacts_bucket="b",
        **lineage,
    )


def event():
    return start_event(
        namespace="WapIngest",
        ingest_id="0123456789abcdef",
        table="sales.orders",
        inputs=[LineageInput("s3://src/sales/orders/a.parquet?versionId=v1")],
        branch="wap_sales_orders_x",
        attempt=1,
        at=datetime.now(UTC),
    )


@pytest.fixture
def secrets(monkeypatch):
    from moto import mock_aws

    use_fake_credentials(monkeypatch, REGION)
    with mock_aws():
        aws.reset()
        transport._api_key.cache_clear()
        import boto3

        yield boto3.client("secretsmanager", region_name=REGION)
    aws.reset()
    transport._api_key.cache_clear()


@pytest.fixture
def keyed_receiver():
    started = LineageReceiver(api_key=API_KEY).start()
    yield started
    started.stop()


@pytest.fixture
def counted(monkeypatch):
    return metrics_log(monkeypatch)


def test_the_key_in_its_secret_authorizes_the_event(secrets, keyed_receiver, counted):
    arn = secrets.create_secret(Name="marquez", SecretString=json.dumps({"apiKey": API_KEY}))["ARN"]

    sent = transport.emit_quietly(
        settings(lineage_url=keyed_receiver.url, lineage_api_key_secret_arn=arn), [event()]
    )

    assert sent == 1 and len(keyed_receiver.events) == 1 and keyed_receiver.refused == []
    assert counted.getvalue() == ""


def test_a_refused_key_is_tried_a_bounded_number_of_times_and_never_logged(
    secrets, keyed_receiver, counted, caplog, capsys
):
    arn = secrets.create_secret(Name="marquez", SecretString="wrong-" + API_KEY)["ARN"]
    waits: list[float] = []
    policy = transport.RetryPolicy(tries=4, base_delay_seconds=0.1)

    with caplog.at_level(logging.DEBUG):
        sent = transport.emit_quietly(
            settings(lineage_url=keyed_receiver.url, lineage_api_key_secret_arn=arn),
            [event(), event()],
            policy=policy,
            sleep=waits.append,
        )

    assert sent == 0
    assert [status for status, _ in keyed_receiver.refused] == [401] * 8
    assert waits == [0.1, 0.2, 0.4] * 2
    given_up = [r for r in caplog.records if r.getMessage() == "OpenLineage event not sent"]
    assert [r.problem for r in given_up] == ["HTTP 401 after 4 tries"] * 2
    logged = caplog.text + capsys.readouterr().out + counted.getvalue()
    assert API_KEY not in logged
    assert [
        json.loads(line)["LineageEventsNotSent"] for line in counted.getvalue().splitlines()
    ] == [1, 1]


def test_an_unreadable_secret_sends_nothing_and_says_so_without_its_value(secrets, counted, caplog):
    missing = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:gone-AbCdEf"
    sent = transport.emit_quietly(
        settings(lineage_url="http://127.0.0.1:9", lineage_api_key_secret_arn=missing), [event()]
    )
    assert sent == 0
    [record] = [r for r in caplog.records if r.getMessage() == "OpenLineage event not sent"]
    assert record.problem == "transport not available: LineageKeyError"


def test_without_a_receiver_nothing_is_sent_or_read(counted, monkeypatch):
    monkeypatch.setattr(transport, "_transport", lambda *a: pytest.fail("no transport"))
    assert transport.emit_quietly(settings(), [event()]) == 0
    assert counted.getvalue() == ""
