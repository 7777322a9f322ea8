"""The loaders against a "deployed" stack: moto (CloudFormation outputs, DynamoDB, S3) and our
Nessie server, reached with the CLI's `--aws` switch."""

from __future__ import annotations

import json

import pytest
from moto import mock_aws

from contracts.catalog_authorization import READER
from ingestion.ledger import Ledger, table_schema
from tests.fixtures.catalog_auth import sign_in, sign_in_outputs
from tests.fixtures.fake_aws import use_fake_credentials
from wap.dashboard import source
from wap.exceptions import DashboardError
from wap.ops.backends import Target

STACK, REGION = "WapDash", "us-east-1"
ARTIFACTS, LEDGER = "wapdash-artifacts", "wapdash-ledger"
FAILED_ID, QUEUED_ID = "a1a1a1a1a1a1a1a1", "b2b2b2b2b2b2b2b2"
CONFIG = "schema_policy: strict\nchecks:\n  - {kind: not_null, column: order_id}\n"


@pytest.fixture(scope="module")
def nessie(tmp_path_factory):
    """The deployed stack's Nessie, authenticating and authorizing as the deployed one."""
    from local.nessie.runner import start_server

    server = start_server(str(tmp_path_factory.mktemp("nessie") / "nessie.db"))
    yield server
    server.stop()


def _template(nessie) -> str:
    return json.dumps(
        {
            "Resources": {
                "Source": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": "wapdash-src"}},
                "Artifacts": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": ARTIFACTS}},
                "Ledger": {
                    "Type": "AWS::DynamoDB::Table",
                    "Properties": {
                        "TableName": LEDGER,
                        "BillingMode": "PAY_PER_REQUEST",
                        **table_schema(),  # the deployed ledger's keys and indexes
                    },
                },
            },
            "Outputs": {  # the output names of infra/stack.py
                "SourceBucketName": {"Value": {"Ref": "Source"}},
                "ArtifactsBucketName": {"Value": {"Ref": "Artifacts"}},
                "NessieApiUrl": {"Value": nessie.api_v2},
                "NessieUiUrl": {"Value": "https://nessie.example.com"},
                "StateMachineArn": {
                    "Value": f"arn:aws:states:{REGION}:123456789012:stateMachine:{STACK}-ingest"
                },
                **{name: {"Value": value} for name, value in sign_in_outputs(nessie).items()},
            },
        }
    )


@pytest.fixture
def deployed(nessie, monkeypatch, tmp_path):
    """The stack, read by the dashboard of a person who signed in with `wap --aws login` and
    holds the wap-reader role only (the dashboard only reads)."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    sign_in(nessie, STACK, REGION, "rae", READER, tmp_path / "config")
    for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    use_fake_credentials(monkeypatch)
    with mock_aws():
        import boto3

        boto3.client("cloudformation", region_name=REGION).create_stack(
            StackName=STACK, TemplateBody=_template(nessie)
        )
        s3 = boto3.client("s3", region_name=REGION)
        s3.put_object(Bucket=ARTIFACTS, Key="tables/sales.orders.yaml", Body=CONFIG.encode())
        s3.put_object(Bucket=ARTIFACTS, Key="tables/README.md", Body=b"not a config")
        ledger = Ledger(LEDGER, boto3.resource("dynamodb", region_name=REGION))
        ledger.create_ingest(
            FAILED_ID,
            {
                "table": "sales.orders",
                "status": "AUDIT_FAILED",
                "source_uri": "s3://wapdash-src/sales/orders/a.parquet",
                "error": "check order_id_not_null failed; token=xoxb-1-2-secret",
            },
        )
        ledger.create_ingest(QUEUED_ID, {"table": "sales.refunds", "status": "QUEUED"})
        ledger.create_ingest("c" * 16, {"table": "sales.refunds", "status": "RECEIVED"})
        ledger.acquire_or_enqueue("sales.refunds", "c" * 16)
        ledger.acquire_or_enqueue("sales.refunds", QUEUED_ID)
        yield Target(aws=True, stack=STACK)


def test_overview_reads_the_deployed_ledger_and_queues(deployed):
    data = source.load_overview(deployed)

    assert sorted(r.ingest_id for r in data.runs) == [FAILED_ID, QUEUED_ID, "c" * 16]
    assert data.locks == [
        {"table": "sales.refunds", "active": "c" * 16, "queue": [QUEUED_ID], "batch": []}
    ]
    assert data.branches == []  # nothing but main in this Nessie


def test_table_config_comes_from_the_artifacts_bucket(deployed):
    page = source.load_table(deployed, "sales.orders")

    assert page.config_uri == f"s3://{ARTIFACTS}/tables/sales.orders.yaml"
    assert page.config_text == CONFIG
    assert page.on_main is False
    assert source.list_tables(deployed) == ["sales.orders", "sales.refunds"]


def test_a_missing_stack_is_a_one_line_error(deployed):
    with pytest.raises(DashboardError, match="cannot read CloudFormation stack Nope"):
        source.load_overview(Target(aws=True, stack="Nope"))


def test_ingest_page_links_to_the_stacks_nessie_ui(deployed):
    page = source.load_ingest(deployed, FAILED_ID)

    assert page.view.record.status == "AUDIT_FAILED"
    assert page.view.report is None  # the job wrote none: the page says so
    assert page.nessie_ui_url == "https://nessie.example.com"
