"""The job reads its catalog client from Secrets Manager (spark_jobs/catalog_secret.py): by the
ARN its arguments name, into the environment the catalog code reads; a missing or malformed
secret is a CatalogError naming the secret and never its value."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws

from contracts.catalog_tokens import ENV_CLIENT_ID, ENV_CLIENT_SECRET, ENV_TOKEN_ENDPOINT
from spark_jobs import catalog_secret
from spark_jobs.errors import CatalogError
from tests.fixtures.fake_aws import use_fake_credentials

REGION = "eu-west-1"
VALUE = {
    "client_id": "4abc",
    "client_secret": "s3cr3t-value",
    "token_endpoint": "https://wap-123.auth.eu-west-1.amazoncognito.com/oauth2/token",
    "scope": "wap/wap-job",
}


@pytest.fixture
def secrets(monkeypatch):
    use_fake_credentials(monkeypatch)
    monkeypatch.setattr(catalog_secret, "client_factory", None)
    with mock_aws():
        yield boto3.client("secretsmanager", region_name=REGION)


def test_the_named_secret_becomes_the_jobs_catalog_client(secrets):
    arn = secrets.create_secret(Name="wap-job", SecretString=json.dumps(VALUE))["ARN"]
    environ: dict[str, str] = {}
    credentials = catalog_secret.use_catalog_secret(arn, environ)
    assert credentials.client_id == "4abc" and credentials.client_secret == "s3cr3t-value"
    assert environ == {
        ENV_TOKEN_ENDPOINT: VALUE["token_endpoint"],
        ENV_CLIENT_ID: "4abc",
        ENV_CLIENT_SECRET: "s3cr3t-value",
    }


def test_a_run_without_a_secret_changes_nothing(secrets):
    environ: dict[str, str] = {}
    assert catalog_secret.use_catalog_secret(None, environ) is None
    assert environ == {}


def test_a_missing_secret_is_refused_naming_it(secrets):
    arn = f"arn:aws:secretsmanager:{REGION}:123456789012:secret:wap-job-AbCdEf"
    with pytest.raises(CatalogError, match="ResourceNotFoundException") as caught:
        catalog_secret.read_catalog_secret(arn)
    assert arn in str(caught.value)


def test_a_malformed_secret_never_shows_its_value(secrets):
    arn = secrets.create_secret(Name="wap-job", SecretString="s3cr3t-value")["ARN"]
    with pytest.raises(CatalogError, match="not JSON") as caught:
        catalog_secret.read_catalog_secret(arn)
    assert "s3cr3t-value" not in str(caught.value)
    with pytest.raises(CatalogError, match="not a secret's ARN"):
        catalog_secret.read_catalog_secret("wap-job")
