"""Fixtures for the alert tests: the Slack stand-in, moto for S3 and Secrets Manager."""

from __future__ import annotations

import json

import pytest

from ingestion.alerting.slack import RetryPolicy
from local.slack_standin import start_slack_standin
from tests.fixtures.alerts import ALERT_EVENTS, TOKEN, load_event
from tests.fixtures.fake_aws import use_fake_credentials

REGION = "eu-west-1"


@pytest.fixture
def slack():
    """The Slack stand-in, knowing TOKEN and #wap-alerts."""
    standin = start_slack_standin(token=TOKEN, channels=("#wap-alerts",))
    yield standin
    standin.stop()


@pytest.fixture
def aws(monkeypatch):
    """moto for every boto3 client made inside the test."""
    from moto import mock_aws

    use_fake_credentials(monkeypatch, REGION, session_token=True)
    with mock_aws():
        yield


@pytest.fixture
def s3(aws):
    import boto3

    return boto3.client("s3", region_name=REGION)


@pytest.fixture
def secretsmanager(aws):
    import boto3

    return boto3.client("secretsmanager", region_name=REGION)


@pytest.fixture
def stored_report(s3):
    """The recorded failed report, stored where events/audit_failed.json points."""
    s3.create_bucket(
        Bucket="wap-artifacts", CreateBucketConfiguration={"LocationConstraint": REGION}
    )
    s3.put_object(
        Bucket="wap-artifacts",
        Key="reports/0123456789abcdef.json",
        Body=(ALERT_EVENTS / "report_failed.json").read_bytes(),
    )
    return load_event("report_failed.json")


@pytest.fixture
def sleeps() -> list[float]:
    """Waits the retry handlers asked for (recorded, not slept)."""
    return []


@pytest.fixture
def fast_retry(sleeps) -> RetryPolicy:
    return RetryPolicy(
        max_retries=3, backoff_factor=0.01, max_retry_after=5, timeout=5, sleep=sleeps.append
    )


@pytest.fixture
def alert_env(monkeypatch, secretsmanager, slack):
    """The Lambda's environment: a secret holding TOKEN, the stand-in's URL, channel, UI URL."""
    arn = secretsmanager.create_secret(Name="wap/slack", SecretString=json.dumps({"token": TOKEN}))[
        "ARN"
    ]
    monkeypatch.setenv("WAP_SLACK_SECRET_ARN", arn)
    monkeypatch.setenv("WAP_SLACK_CHANNEL", "#wap-alerts")
    monkeypatch.setenv("WAP_SLACK_API_URL", slack.api_url)
    monkeypatch.setenv("WAP_NESSIE_UI_URL", "https://nessie.example.com/")
    return arn
