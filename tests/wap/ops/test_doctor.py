"""`wap doctor` passes on a working stack and names the failing step on a broken one."""

from __future__ import annotations

import pytest

from local.aws.emr_serverless import spark_job
from tests.fixtures.wap_cli import run_wap
from wap.ops.doctor import LocalDoctorTarget, render, run_doctor


def _doctor(stack):
    checks = run_doctor(LocalDoctorTarget(stack), timeout=300, poll_seconds=0.2)
    return checks, render(checks, "the local stack")


def _failed(checks) -> list[str]:
    return [check.name for check in checks if not check.ok]


@pytest.mark.slow
def test_every_check_passes_on_the_local_stack(make_stack, lake):
    stack = make_stack(job=spark_job(lake))
    checks, text = _doctor(stack)

    assert _failed(checks) == [], text
    names = [check.name for check in checks]
    for expected in (
        "stack outputs",
        "lambda trigger",
        "lambda sweeper",
        "slack secret",
        "nessie from the trigger",
        "smoke job submitted",
        "smoke job ran",
        "smoke report read back",
        "smoke: load org.apache.iceberg.nessie.NessieCatalog",
        "smoke: load FileIO org.apache.iceberg.hadoop.HadoopFileIO",
        "smoke: create a Nessie branch",
        "smoke: open the Iceberg catalog on the branch",
        "smoke: drop the Nessie branch",
    ):
        assert expected in names, text
    assert text.endswith(f"all {len(checks)} checks passed")
    assert "xoxb-test-token" not in text  # the token is set, and never printed
    # The smoke run made the calls an ingest makes, as the roles that make them.
    denied = stack.iam.denied
    assert denied == [], denied


@pytest.mark.slow
def test_a_removed_grant_fails_the_step_that_needs_it(make_stack, lake):
    stack = make_stack(job=spark_job(lake))
    assert stack.iam.revoke_action("job", "s3:PutObject", resource_part="/reports/")
    checks, text = _doctor(stack)

    assert "smoke job ran" in _failed(checks), text
    assert "smoke report read back" in _failed(checks), text
    assert "AccessDenied" in text
    assert "nessie from the trigger" not in _failed(checks)


def test_a_stopped_nessie_fails_the_nessie_check(make_stack, tmp_path):
    from local.nessie.runner import start_server

    nessie = start_server(str(tmp_path / "nessie.db"))
    stack = make_stack(nessie_api_v1=nessie.api_v1)
    nessie.stop()
    checks, text = _doctor(stack)

    assert "nessie from the trigger" in _failed(checks), text
    assert "FAIL  nessie from the trigger" in text
    assert "checks failed" in text.splitlines()[-1]


def test_an_empty_slack_secret_fails_without_printing_anything_secret(make_stack):
    stack = make_stack(slack_token=None)
    checks, text = _doctor(stack)
    assert "slack secret" in _failed(checks), text
    assert "Set the Slack token" in text


@pytest.mark.slow
def test_wap_doctor_on_a_fresh_home(spark, tmp_path):
    import json

    from jsonschema import Draft202012Validator

    from local.aws.stack import REPO_ROOT

    result = run_wap(
        "--home", str(tmp_path / "home"), "doctor", "--timeout", "300", "--json", spark=spark
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # stdout is the JSON document alone
    schema = json.loads((REPO_ROOT / "docs" / "cli-schemas" / "doctor.json").read_text())
    Draft202012Validator(schema).validate(document)
    assert document["ok"] is True and all(check["ok"] for check in document["checks"])
    assert "smoke job ran" in [check["name"] for check in document["checks"]]


def test_the_deployed_import_check_reads_each_functions_own_log_group():
    """The stack gives each function its own log group (LoggingConfig), not /aws/lambda/."""
    import time

    import boto3
    from moto import mock_aws

    from wap.ops.doctor import AwsDoctorTarget

    with mock_aws():
        session = boto3.Session(
            region_name="eu-west-1", aws_access_key_id="testing", aws_secret_access_key="testing"
        )
        logs = session.client("logs")
        group = "WapIngest-PipelineTriggerLogs"
        logs.create_log_group(logGroupName=group)
        logs.create_log_stream(logGroupName=group, logStreamName="s")
        now = int(time.time() * 1000)
        logs.put_log_events(
            logGroupName=group,
            logStreamName="s",
            logEvents=[
                {"timestamp": now - 2000, "message": "START RequestId: 1"},
                {
                    "timestamp": now - 1000,
                    "message": "[ERROR] Runtime.ImportModuleError: Unable to "
                    "import module 'lambdas.trigger.handler'",
                },
            ],
        )
        target = AwsDoctorTarget(session, "WapIngest", {})
        target._configurations["fn"] = {
            "LoggingConfig": {"LogGroup": group},
            "LastModified": "2020-01-01T00:00:00.000+0000",
        }
        assert "Runtime.ImportModuleError" in target.init_failure("fn")
        # A redeploy after the failure: the old error no longer counts.
        target._configurations["fn"]["LastModified"] = "2099-01-01T00:00:00.000+0000"
        assert target.init_failure("fn") is None


def test_the_doctor_says_once_when_loads_will_have_no_price():
    from contracts.pricing import EMR_SERVERLESS_PRICES
    from wap.ops.doctor import emr_prices_check

    unpriced = emr_prices_check("ap-south-1", None)
    assert unpriced.ok and unpriced.name == "emr prices"  # a warning, not a failure
    assert "unknown" in unpriced.detail and "emrPrices" in unpriced.detail
    assert "us-east-1" in EMR_SERVERLESS_PRICES
    assert "unknown" not in emr_prices_check("us-east-1", None).detail
    assert "configured" in emr_prices_check("ap-south-1", "vcpu=1,memory=1,storage=0").detail
