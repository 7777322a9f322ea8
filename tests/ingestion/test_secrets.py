"""The one Secrets Manager reader (ingestion/secrets.py) as the catalog's client secret uses
it (ingestion/nessie.read_client_secret): the string itself or a JSON object's field, failures
mapped to the token errors, and the value never in what is raised. Secrets Manager's answers
come from botocore's Stubber (throttling and binary secrets are beyond moto's)."""

from __future__ import annotations

import traceback

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError
from botocore.stub import Stubber

from contracts.catalog_tokens import TokenEndpointUnavailableError, TokenError
from ingestion import aws
from ingestion.nessie import read_client_secret
from ingestion.secrets import SecretUnreadableError, read_secret_string

ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:wap/trigger-AbCdEf"
VALUE = "s3cr3t-value"


@pytest.fixture
def stubbed(monkeypatch):
    client = boto3.client(
        "secretsmanager",
        region_name="eu-west-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    monkeypatch.setattr(aws, "client", lambda service: client)
    with Stubber(client) as stubber:
        yield client, stubber


def _answer(stubber, **secret) -> None:
    stubber.add_response("get_secret_value", {"ARN": ARN, "Name": "wap/trigger", **secret})


@pytest.mark.parametrize(
    "text", [VALUE, f'{{"client_id": "wap-trigger", "client_secret": "{VALUE}"}}']
)
def test_the_client_secret_is_the_string_or_its_json_field(stubbed, text):
    _, stubber = stubbed
    _answer(stubber, SecretString=text)
    assert read_client_secret(ARN) == VALUE


@pytest.mark.parametrize(
    "text",
    ['{"client_id": "wap-trigger"}', '{"client_secret": 42}', f'{{"client_secret": "{VALUE}'],
)
def test_json_without_a_client_secret_string_is_refused_without_quoting_it(stubbed, text):
    _, stubber = stubbed
    _answer(stubber, SecretString=text)
    with pytest.raises(TokenError, match="is JSON without a client_secret string") as caught:
        read_client_secret(ARN)
    assert caught.value.__context__ is None
    assert VALUE not in "".join(traceback.format_exception(caught.value))


def test_a_binary_secret_is_refused_naming_the_secret(stubbed):
    _, stubber = stubbed
    _answer(stubber, SecretBinary=b"\x00\x01")
    with pytest.raises(TokenError, match="holds no secret string") as caught:
        read_client_secret(ARN)
    assert ARN in str(caught.value)


def test_a_refusal_is_a_token_error_and_no_answer_an_outage(stubbed, monkeypatch):
    client, stubber = stubbed
    stubber.add_client_error("get_secret_value", service_error_code="AccessDeniedException")
    with pytest.raises(TokenError, match=f"{ARN}: AccessDeniedException"):
        read_client_secret(ARN)

    def unreachable(**_):
        raise EndpointConnectionError(endpoint_url="https://secretsmanager")

    monkeypatch.setattr(client, "get_secret_value", unreachable)
    with pytest.raises(TokenEndpointUnavailableError, match="EndpointConnectionError"):
        read_client_secret(ARN)
    with pytest.raises(SecretUnreadableError) as caught:
        read_secret_string(ARN, client)
    assert caught.value.code == "EndpointConnectionError" and caught.value.answered is False
