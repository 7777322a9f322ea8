"""IAM is enforced on every call a function, the job or the state machine makes.

Unit tests of what the evaluator asks for (the way AWS authorizes each call), then one flow
per principal with one needed statement removed from its policy: the call is denied with
the service's AccessDenied and the flow does not pretend it succeeded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from local.aws.iam import (
    EMR_SERVERLESS_PRINCIPAL,
    Principal,
    Request,
    Statement,
    UnmappedCall,
    requests_for,
    statements_of,
)
from local.aws.overrides import LocalParityError
from tests.fixtures.local_stack import fake_parquet, record_for_key

REGION, ACCOUNT = "eu-west-1", "123456789012"
LEDGER = f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/wap-ledger"
APP = f"arn:aws:emr-serverless:{REGION}:{ACCOUNT}:/applications/app1"


def needs(service: str, operation: str, **params: Any) -> list[Request]:
    return requests_for(service, operation, params, region=REGION, account=ACCOUNT)


def test_a_versioned_read_needs_get_object_version():
    assert needs("s3", "GetObject", Bucket="b", Key="k/x") == [
        Request("s3:GetObject", "arn:aws:s3:::b/k/x")
    ]
    assert needs("s3", "HeadObject", Bucket="b", Key="k", VersionId="v1") == [
        Request("s3:GetObjectVersion", "arn:aws:s3:::b/k")
    ]


def test_a_copy_reads_the_source_version_and_writes_the_target():
    assert needs(
        "s3",
        "CopyObject",
        Bucket="art",
        Key="staging/1/x.parquet",
        CopySource={"Bucket": "src", "Key": "a b.parquet", "VersionId": "v"},
    ) == [
        Request("s3:GetObjectVersion", "arn:aws:s3:::src/a b.parquet"),
        Request("s3:PutObject", "arn:aws:s3:::art/staging/1/x.parquet"),
    ]
    assert needs(
        "s3",
        "UploadPartCopy",
        Bucket="art",
        Key="t",
        PartNumber=1,
        UploadId="u",
        CopySource="src/a%20b.parquet?versionId=v",
    )[0] == Request("s3:GetObjectVersion", "arn:aws:s3:::src/a b.parquet")


def test_dynamodb_transactions_need_each_items_action_and_queries_the_index():
    items = [
        {"ConditionCheck": {"TableName": "wap-ledger"}},
        {"Update": {"TableName": "wap-ledger"}},
    ]
    assert needs("dynamodb", "TransactWriteItems", TransactItems=items) == [
        Request("dynamodb:ConditionCheckItem", LEDGER),
        Request("dynamodb:UpdateItem", LEDGER),
    ]
    assert needs("dynamodb", "Query", TableName="wap-ledger", IndexName="by_table") == [
        Request("dynamodb:Query", f"{LEDGER}/index/by_table")
    ]


def _start_job_run(role: str) -> list[Request]:
    """What StartJobRun with execution role `role` asks of the policy."""
    return needs(
        "emr-serverless",
        "StartJobRun",
        applicationId="app1",
        executionRoleArn=role,
        clientToken="t",
        tags={"wap:table": "a.b"},
    )


def test_starting_a_job_passes_its_role_and_tags_it():
    role = f"arn:aws:iam::{ACCOUNT}:role/job"
    assert _start_job_run(role) == [
        Request("emr-serverless:StartJobRun", APP),
        Request("iam:PassRole", role, (("iam:PassedToService", EMR_SERVERLESS_PRINCIPAL),)),
        Request("emr-serverless:TagResource", f"{APP}/jobruns/*"),
    ]
    assert needs("emr-serverless", "GetJobRun", applicationId="app1", jobRunId="r1") == [
        Request("emr-serverless:GetJobRun", f"{APP}/jobruns/r1")
    ]


def test_a_call_the_evaluator_cannot_name_is_refused_not_allowed():
    with pytest.raises(UnmappedCall):
        needs("s3", "PutBucketPolicy", Bucket="b", Policy="{}")


def test_wildcards_and_explicit_deny():
    allow = Statement("p", 0, "Allow", ("s3:GetObject*",), ("arn:aws:s3:::art/reports/*",))
    deny = Statement("p", 1, "Deny", ("s3:*",), ("arn:aws:s3:::art/reports/secret/*",))
    principal = Principal("fn", "Pipeline/Fn/ServiceRole", "arn:aws:iam::1:role/r", [allow, deny])
    assert principal.decide("s3:GetObjectVersion", "arn:aws:s3:::art/reports/a/b.json") is allow
    assert principal.decide("S3:getobject", "arn:aws:s3:::art/reports/x") is allow
    assert principal.decide("s3:GetObject", "arn:aws:s3:::art/staging/x") is None
    assert principal.decide("s3:PutObject", "arn:aws:s3:::art/reports/x") is None
    assert principal.decide("s3:GetObject", "arn:aws:s3:::art/reports/secret/x") is None


def test_a_role_passed_only_to_emr_serverless_cannot_be_passed_to_another_service():
    role = f"arn:aws:iam::{ACCOUNT}:role/job"
    [statement] = statements_of(
        "p",
        {
            "Statement": [
                {
                    "Effect": "Allow",
                    "Action": "iam:PassRole",
                    "Resource": role,
                    "Condition": {
                        "StringEquals": {"iam:PassedToService": EMR_SERVERLESS_PRINCIPAL}
                    },
                }
            ]
        },
    )
    principal = Principal("fn", "Pipeline/Fn/ServiceRole", "arn:aws:iam::1:role/r", [statement])
    [_, passing, _] = _start_job_run(role)
    assert principal.grant(passing.action, passing.resource, context=dict(passing.context))
    assert (
        principal.grant("iam:PassRole", role, context={"iam:PassedToService": "ec2.amazonaws.com"})
        is None
    )
    assert principal.grant("iam:PassRole", role) is None  # a request without the key
    with pytest.raises(LocalParityError, match="StringLike"):
        statements_of(
            "p",
            {
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "iam:PassRole",
                        "Resource": role,
                        "Condition": {"StringLike": {"a": "b"}},
                    }
                ]
            },
        )


# ---- enforcement bites: one needed statement removed per principal ------------------------


def _revoke(stack: Any, principal: str, action: str) -> None:
    assert stack.iam.revoke_action(principal, action), (
        f"{principal} has no statement granting {action}"
    )


def _errors_of(stack: Any, function: str) -> str:
    return json.dumps([c.error for c in stack.dispatcher.calls(function) if c.error])


def _drop(stack: Any, key: str) -> dict[str, Any] | None:
    stack.drop_file(key, fake_parquet(key))
    stack.wait_idle(timeout=120)
    return record_for_key(stack, key)


def _clean(stack: Any, function: str) -> str:
    record = _drop(stack, f"perm{function}/orders/x.parquet")
    assert record is None or record.status != "PUBLISHED", record
    return _errors_of(stack, function)


def _audit_fails(stack: Any, function: str) -> str:
    _drop(stack, "permalert/orders/fail.parquet")
    return _errors_of(stack, function)


def _job_crashes_once(stack: Any, function: str) -> str:
    stack.emr.inject_crash("executor lost")
    record = _drop(stack, "permretry/orders/x.parquet")
    assert record is None or record.status != "PUBLISHED", record
    return _errors_of(stack, function)


def _job(stack: Any, function: str) -> str:
    record = _drop(stack, "permjob/orders/x.parquet")
    assert record is None or record.status != "PUBLISHED", record
    return json.dumps([stack.emr_job_run(run).state_details for run in stack.emr.started_runs])


def _state_machine(stack: Any, function: str) -> str:
    _clean(stack, "sm")
    [execution] = stack.executions()
    history = stack.execution_history(execution["executionArn"])
    return json.dumps([e for e in history if "Failed" in e["type"]], default=str)


def _sweep(stack: Any, function: str) -> str:
    stack.iam.restore()
    stack.drop_file("permsweep/orders/x.parquet", fake_parquet("sweep"))
    stack.wait_idle(timeout=120)
    assert record_for_key(stack, "permsweep/orders/x.parquet").status == "PUBLISHED"
    _revoke(stack, "sweeper", "s3:DeleteObject*")
    return json.dumps(stack.invoke("sweeper", {}))


Scenario = Callable[[Any, str], str]
CASES: list[tuple[str, str, Scenario]] = [
    ("trigger", "s3:PutObject", _clean),  # the staged copy
    ("job_status", "emr-serverless:GetJobRun", _clean),
    ("publish", "dynamodb:UpdateItem", _clean),
    ("finish", "dynamodb:UpdateItem", _clean),
    ("alert", "secretsmanager:GetSecretValue", _audit_fails),
    ("retry_job", "emr-serverless:StartJobRun", _job_crashes_once),
    ("sweeper", "s3:DeleteObject*", _sweep),
    ("job", "s3:PutObject", _job),  # the report
    ("state-machine", "lambda:InvokeFunction", _state_machine),
]


@pytest.mark.parametrize(
    ("principal", "action", "scenario"), CASES, ids=[case[0] for case in CASES]
)
def test_a_removed_statement_is_access_denied(make_stack, principal, action, scenario):
    stack = make_stack(state_retry_scale=0)  # a denied task exhausts its Retry: do not wait
    _revoke(stack, principal, action)

    evidence = scenario(stack, principal)

    denied = [r for r in stack.iam.denied if r.principal == principal]
    assert denied, f"no call of {principal} was denied"
    # The service's AccessDenied, or Step Functions' report of the Lambda API's refusal.
    assert "AccessDenied" in evidence or "is not authorized to perform" in evidence, evidence


def test_a_secret_under_a_customer_managed_key_needs_kms_decrypt_through_secrets_manager():
    """GetSecretValue decrypts with the secret's KMS key as the caller: a customer managed
    key needs `kms:Decrypt` on it (by way of Secrets Manager: `kms:ViaService`), the AWS
    managed `aws/secretsmanager` key no grant
    (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html)."""
    import boto3
    from botocore.exceptions import ClientError
    from moto import mock_aws

    from local.aws.iam import IamEnforcer

    key_arn = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"

    def client(access_key: str):
        return boto3.client(
            "secretsmanager",
            region_name=REGION,
            aws_access_key_id=access_key,
            aws_secret_access_key="secret",
        )

    with mock_aws():
        admin = client("AKIAADMIN")
        under_key = admin.create_secret(Name="cmk", SecretString="k", KmsKeyId=key_arn)["ARN"]
        managed = admin.create_secret(Name="managed", SecretString="k")["ARN"]
        read = {
            "Effect": "Allow",
            "Action": "secretsmanager:GetSecretValue",
            "Resource": [under_key, managed],
        }
        decrypt = {
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": key_arn,
            "Condition": {
                "StringEquals": {"kms:ViaService": f"secretsmanager.{REGION}.amazonaws.com"}
            },
        }
        principal = Principal(
            "sender",
            "Sender/ServiceRole",
            f"arn:aws:iam::{ACCOUNT}:role/sender",
            statements_of("Sender/Policy", {"Statement": [read]}),
        )
        enforcer = IamEnforcer(region=REGION, account=ACCOUNT)
        enforcer.add("AKIASENDER", principal)
        enforcer.install()
        try:
            sender = client("AKIASENDER")
            assert sender.get_secret_value(SecretId=managed)["SecretString"] == "k"
            with pytest.raises(ClientError, match="kms:Decrypt"):
                sender.get_secret_value(SecretId=under_key)
            principal.statements = statements_of("Sender/Policy", {"Statement": [read, decrypt]})
            assert sender.get_secret_value(SecretId=under_key)["SecretString"] == "k"
            assert ("Sender/Policy", 1, 0) in enforcer.used_grants()
        finally:
            enforcer.uninstall()
