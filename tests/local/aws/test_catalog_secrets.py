"""The catalog clients' secrets on the local stack, as the template grants them: a job run
names the job's secret by ARN, the job reads it with its own role's keys, and another
role's secret is refused it (IAM enforced, local/aws/iam.py)."""

from __future__ import annotations

import json

import boto3
import pytest

from spark_jobs import catalog_secret
from spark_jobs.errors import CatalogError
from tests.fixtures.local_stack import fake_parquet, wait_for_key


def _job_keys(stack) -> dict[str, str]:
    return {f"aws_{name[4:].lower()}": value for name, value in stack.emr.credentials.items()}


def test_the_job_reads_the_jobs_catalog_secret_and_no_other(make_stack, monkeypatch):
    stack = make_stack()
    job_secret = stack.env["WAP_JOB_NESSIE_CREDENTIALS_SECRET_ARN"]
    trigger = stack.functions["trigger"].configuration["Environment"]["Variables"]
    keys = _job_keys(stack)
    monkeypatch.setattr(
        catalog_secret,
        "client_factory",
        lambda region: boto3.client("secretsmanager", region_name=region, **keys),
    )
    local = stack.settings.catalog_credentials
    expected = local("wap-job").client_id if local else "local-wap-job"
    assert catalog_secret.read_catalog_secret(job_secret).client_id == expected
    with pytest.raises(CatalogError, match="AccessDenied"):
        catalog_secret.read_catalog_secret(trigger["WAP_NESSIE_CLIENT_SECRET_ARN"])
    # The stack holds each secret as the deploy does: the client's id, secret, endpoint, scope.
    value = json.loads(
        stack.client("secretsmanager").get_secret_value(SecretId=job_secret)["SecretString"]
    )
    assert set(value) == {"client_id", "client_secret", "token_endpoint", "scope"}


def test_a_job_run_names_the_jobs_secret_by_arn(make_stack):
    stack = make_stack()
    stack.drop_file("sales/orders/a.parquet", fake_parquet("a"))
    record = wait_for_key(stack, "sales/orders/a.parquet")
    (run,) = [
        r
        for r in stack.client("emr-serverless").list_job_runs(applicationId=stack.application_id)[
            "jobRuns"
        ]
    ]
    detail = stack.client("emr-serverless").get_job_run(
        applicationId=stack.application_id, jobRunId=run["id"]
    )["jobRun"]
    arguments = detail["jobDriver"]["sparkSubmit"]["entryPointArguments"]
    at = arguments.index("--catalog-credentials-secret")
    assert arguments[at + 1] == stack.env["WAP_JOB_NESSIE_CREDENTIALS_SECRET_ARN"]
    # Nothing of the secret's value is in the run's details.
    value = json.loads(
        stack.client("secretsmanager").get_secret_value(SecretId=arguments[at + 1])["SecretString"]
    )
    assert value["client_secret"] not in json.dumps(detail, default=str)
    assert record.status
