"""Secrets Manager answers moto cannot produce (throttling, denied), via botocore's Stubber."""

from __future__ import annotations

import traceback

import boto3
import pytest
from botocore.stub import Stubber

from ingestion.alerting.exceptions import AlertConfigError, AlertDeliveryError
from ingestion.alerting.secrets import load_slack_token

ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:wap/slack-AbCdEf"


@pytest.fixture
def stubbed():
    client = boto3.client(
        "secretsmanager",
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with Stubber(client) as stubber:
        yield client, stubber


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("ThrottlingException", AlertDeliveryError),
        ("InternalServiceError", AlertDeliveryError),
        ("AccessDeniedException", AlertConfigError),
        ("DecryptionFailure", AlertConfigError),
    ],
)
def test_secrets_manager_errors_are_classified(stubbed, code, error):
    client, stubber = stubbed
    stubber.add_client_error("get_secret_value", service_error_code=code)

    with pytest.raises(error, match=code):
        load_slack_token(ARN, client=client)


def test_unparseable_json_secret_is_refused_without_quoting_it(stubbed):
    client, stubber = stubbed
    secret = '{"token": "xoxb-leak-me'
    stubber.add_response(
        "get_secret_value", {"ARN": ARN, "Name": "wap/slack", "SecretString": secret}
    )

    with pytest.raises(AlertConfigError, match="does not parse") as caught:
        load_slack_token(ARN, client=client)

    assert caught.value.__context__ is None
    assert "xoxb-leak-me" not in "".join(traceback.format_exception(caught.value))


def test_non_string_token_is_refused(stubbed):
    client, stubber = stubbed
    stubber.add_response(
        "get_secret_value", {"ARN": ARN, "Name": "wap/slack", "SecretString": '{"token": 42}'}
    )

    with pytest.raises(AlertConfigError, match="'token' must be a string"):
        load_slack_token(ARN, client=client)
