"""`wap --aws` against a "deployed" stack: moto (CloudFormation outputs, DynamoDB, S3) + our
Nessie server, with Iceberg tables written by pyiceberg (Glue catalog on moto) and
registered in Nessie the way Iceberg's NessieCatalog does (API v2 commits)."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import requests
from moto import mock_aws

from lambdas.common.ledger import Ledger, table_schema
from tests.cli.conftest import assert_one_line_error, run_wap
from tests.lake_seed import NessieSeeder, failed_report

STACK = "WapTest"
REGION = "us-east-1"
SOURCE, ARTIFACTS, LEDGER = "wap-test-source", "wap-test-artifacts", "wap-test-ledger"
FAILED_ID, OTHER_ID, DONE_ID = "a1a1a1a1a1a1a1a1", "b2b2b2b2b2b2b2b2", "c3c3c3c3c3c3c3c3"
FAILED_BRANCH = f"wap_sales_orders_20261122T101500_{FAILED_ID[:8]}"
OTHER_BRANCH = f"wap_sales_orders_20261122T101600_{OTHER_ID[:8]}"
MOVED_ID, CONFLICT_ID = "d4d4d4d4d4d4d4d4", "e5e5e5e5e5e5e5e5"
MOVED_BRANCH = f"wap_sales_orders_20261122T101700_{MOVED_ID[:8]}"
CONFLICT_BRANCH = f"wap_sales_orders_20261122T101800_{CONFLICT_ID[:8]}"
SCHEMA = pa.schema([("order_id", pa.int64()), ("amount", pa.float64())])


def _template(nessie) -> str:
    key = table_schema()  # the deployed ledger's keys and indexes
    return json.dumps(
        {
            "Resources": {
                "Source": {
                    "Type": "AWS::S3::Bucket",
                    "Properties": {
                        "BucketName": SOURCE,
                        "VersioningConfiguration": {"Status": "Enabled"},
                    },
                },
                "Artifacts": {"Type": "AWS::S3::Bucket", "Properties": {"BucketName": ARTIFACTS}},
                "Ledger": {
                    "Type": "AWS::DynamoDB::Table",
                    "Properties": {"TableName": LEDGER, "BillingMode": "PAY_PER_REQUEST", **key},
                },
            },
            # The output names of infra/stack.py; the ledger is found among the resources.
            "Outputs": {
                "SourceBucketName": {"Value": {"Ref": "Source"}},
                "ArtifactsBucketName": {"Value": {"Ref": "Artifacts"}},
                "NessieApiUrl": {"Value": nessie.api_v2},
                "NessieUiUrl": {"Value": nessie.url},
                "StateMachineArn": {
                    "Value": f"arn:aws:states:{REGION}:123456789012:stateMachine:{STACK}-ingest"
                },
            },
        }
    )


@pytest.fixture(scope="module")
def deployed(nessie, tmp_path_factory):
    """A stack with one failed ingest on an open branch, a second one, and a published one."""
    warehouse = tmp_path_factory.mktemp("iceberg")
    with pytest.MonkeyPatch.context() as mp, mock_aws():
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
            mp.setenv(name, "testing")
        mp.setenv("AWS_DEFAULT_REGION", REGION)
        import boto3
        from pyiceberg.catalog.glue import GlueCatalog

        boto3.client("cloudformation", region_name=REGION).create_stack(
            StackName=STACK, TemplateBody=_template(nessie)
        )
        glue = GlueCatalog("seed", warehouse=warehouse.as_uri(), **{"glue.region": REGION})
        glue.create_namespace("sales")
        table = glue.create_table("sales.orders", schema=SCHEMA)
        table.append(pa.table({"order_id": [1, 2], "amount": [10.0, 20.0]}, schema=SCHEMA))
        seeder = NessieSeeder(nessie.api_v2)
        seeder.put_table("main", table, with_namespace=True)
        seeder.branch(FAILED_BRANCH)
        seeder.branch(OTHER_BRANCH)
        table.append(
            pa.table({"order_id": [3, 4, 5], "amount": [1.0, -4.5, -77.25]}, schema=SCHEMA)
        )
        seeder.put_table(FAILED_BRANCH, table)
        audited_hash, failed_metadata = seeder.head(FAILED_BRANCH), table.metadata_location
        audited_snapshot = str(table.metadata.current_snapshot_id)  # as finish records it
        # Audited, then someone wrote to the branch: what was audited is no longer the head.
        seeder.branch(MOVED_BRANCH)
        seeder.put_table(MOVED_BRANCH, table)
        moved_audited = seeder.head(MOVED_BRANCH)
        table.append(pa.table({"order_id": [6], "amount": [6.0]}, schema=SCHEMA))
        seeder.put_table(MOVED_BRANCH, table)
        # Audited on a branch, but main changed the same table since (an outside writer).
        seeder.branch(CONFLICT_BRANCH)
        seeder.put_table(CONFLICT_BRANCH, table)
        conflict_audited = seeder.head(CONFLICT_BRANCH)
        later_snapshot = str(table.metadata.current_snapshot_id)

        s3 = boto3.client("s3", region_name=REGION)
        if s3.get_bucket_versioning(Bucket=SOURCE).get("Status") != "Enabled":
            # moto's CloudFormation skips VersioningConfiguration; the real bucket is versioned.
            s3.put_bucket_versioning(Bucket=SOURCE, VersioningConfiguration={"Status": "Enabled"})
        report_uri = f"s3://{ARTIFACTS}/reports/sales.orders/{FAILED_ID}/attempt-1/report.json"
        s3.put_object(
            Bucket=ARTIFACTS,
            Key=report_uri.split("/", 3)[3],
            Body=json.dumps(
                failed_report(
                    branch_hash=audited_hash,
                    snapshot_id=int(audited_snapshot),
                    branch=FAILED_BRANCH,
                    source=f"s3://{SOURCE}/sales/orders/batch.parquet",
                    rule="amount_positive",
                )
            ).encode(),
        )
        ledger = Ledger(LEDGER, boto3.resource("dynamodb", region_name=REGION))
        for iid, status, branch, extra in (
            (
                FAILED_ID,
                "AUDIT_FAILED",
                FAILED_BRANCH,
                {
                    "branch_hash": audited_hash,
                    "snapshot_id": audited_snapshot,
                    "report_uri": report_uri,
                    "error": "1 error-severity check(s) did not pass: amount_positive",
                    "rows_written": 3,
                },
            ),
            (OTHER_ID, "JOB_FAILED", OTHER_BRANCH, {"error": "JobRunFailed: OOM"}),
            (DONE_ID, "PUBLISHED", "wap_sales_orders_20261122T100000_c3c3c3c3", {}),
            (MOVED_ID, "AUDIT_FAILED", MOVED_BRANCH,
             {"branch_hash": moved_audited, "snapshot_id": audited_snapshot}),
            (CONFLICT_ID, "AUDIT_FAILED", CONFLICT_BRANCH,
             {"branch_hash": conflict_audited, "snapshot_id": later_snapshot}),
        ):
            ledger.create_ingest(
                iid,
                {
                    "table": "sales.orders",
                    "key": f"sales/orders/{iid}.p",
                    "source_uri": f"s3://{SOURCE}/sales/orders/{iid}.p",
                    "status": status,
                    "branch": branch,
                    "finished_at": "2026-11-22T10:20:00Z",
                    **extra,
                },
            )
        yield {
            "seeder": seeder,
            "table": table,
            "ledger": ledger,
            "s3": s3,
            "audited_hash": audited_hash,
            "failed_metadata": failed_metadata,
        }


def aws(*args: str):
    return run_wap("--aws", "--region", REGION, "--stack", STACK, *args)


def test_runs_reads_the_ledger_the_stack_names(deployed):
    result = aws("runs")
    assert result.exit_code == 0, result.output
    for iid, status in (
        (FAILED_ID, "AUDIT_FAILED"),
        (OTHER_ID, "JOB_FAILED"),
        (DONE_ID, "PUBLISHED"),
    ):
        line = next(ln for ln in result.stdout.splitlines() if iid in ln)
        assert status in line and f"s3://{SOURCE}/sales/orders/{iid}.p" in line


def test_a_profile_selects_the_account(deployed, tmp_path, monkeypatch):
    config = tmp_path / "config"
    config.write_text(
        f"[profile wap-test]\nregion = {REGION}\n"
        "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    result = run_wap("--profile", "wap-test", "--stack", STACK, "branches")
    assert result.exit_code == 0, result.output
    assert FAILED_BRANCH in result.stdout and OTHER_BRANCH in result.stdout


def test_branches_joins_nessie_and_the_ledger(deployed):
    result = aws("branches")
    assert result.exit_code == 0, result.output
    failed = next(ln for ln in result.stdout.splitlines() if FAILED_BRANCH in ln)
    other = next(ln for ln in result.stdout.splitlines() if OTHER_BRANCH in ln)
    assert "AUDIT_FAILED" in failed and FAILED_ID in failed and "amount_positive" in failed
    assert "JOB_FAILED" in other and "OOM" in other


def test_show_reads_counts_through_pyiceberg_and_the_report_from_s3(deployed):
    result = aws("show", FAILED_BRANCH)
    assert result.exit_code == 0, result.output
    assert "main: 2   branch: 5" in result.stdout
    check = next(
        ln for ln in result.stdout.splitlines() if "amount_positive" in ln and "range" in ln
    )
    assert "failed" in check and " 2 " in check
    assert "-77.25" in result.stdout and "-4.5" in result.stdout
    assert f"publish {FAILED_BRANCH}" in result.stdout


def test_nessie_url_override_reaches_the_same_catalog(deployed, nessie):
    result = run_wap(
        "--aws", "--region", REGION, "--stack", STACK, "--nessie-url", nessie.url, "show", FAILED_ID
    )
    assert result.exit_code == 0, result.output
    assert "main: 2   branch: 5" in result.stdout


def test_ingest_without_waiting_uploads_under_the_table_prefix(deployed, tmp_path):
    path = tmp_path / "orders 2026-11-22.parquet"
    pq.write_table(pa.table({"order_id": [9]}), path)
    result = aws("ingest", str(path), "--table", "sales.orders", "--no-wait")
    assert result.exit_code == 0, result.output
    key = "sales/orders/orders 2026-11-22.parquet"
    [version] = deployed["s3"].list_object_versions(Bucket=SOURCE, Prefix=key)["Versions"]
    assert version["VersionId"] != "null"
    assert deployed["s3"].get_object(Bucket=SOURCE, Key=key)["Body"].read() == path.read_bytes()
    expected_id = hashlib.sha256(f"{SOURCE}/{key}#{version['VersionId']}".encode()).hexdigest()[:16]
    assert f"(ingest {expected_id})" in result.stdout


def test_waiting_gives_up_with_one_line_after_the_timeout(deployed, tmp_path):
    path = tmp_path / "late.parquet"
    pq.write_table(pa.table({"order_id": [1]}), path)
    result = aws("ingest", str(path), "--table", "sales.orders", "--timeout", "1")
    assert_one_line_error(result, "timed out", "late.parquet")


def test_publish_merges_the_audited_hash_with_the_review_in_the_message(deployed, nessie):
    main_before = deployed["seeder"].head("main")
    result = aws("publish", FAILED_BRANCH, "--reason", "two refunds, expected", "--by", "carol")
    assert result.exit_code == 0, result.output

    record = deployed["ledger"].get_ingest(FAILED_ID)
    assert record["status"] == "PUBLISHED" and record["published_by"] == "carol"
    log = requests.get(f"{nessie.api_v2}/trees/main/history", timeout=10).json()["logEntries"]
    head = log[0]["commitMeta"]
    assert head["hash"] == record["published_hash"] != main_before
    assert "two refunds, expected" in head["message"] and "carol" in head["message"]
    assert head["authors"] == ["carol"]
    assert head["allProperties"]["wap.ingest-id"] == [FAILED_ID]
    on_main = requests.get(f"{nessie.api_v2}/trees/main/contents/sales.orders", timeout=10)
    assert on_main.json()["content"]["metadataLocation"] == deployed["failed_metadata"]
    assert requests.get(f"{nessie.api_v2}/trees/{FAILED_BRANCH}", timeout=10).status_code == 404


def test_discard_deletes_the_branch_and_records_it(deployed, nessie):
    result = aws("discard", OTHER_BRANCH)
    assert result.exit_code == 0, result.output
    record = deployed["ledger"].get_ingest(OTHER_ID)
    assert record["status"] == "DISCARDED" and record["previous_status"] == "JOB_FAILED"
    assert requests.get(f"{nessie.api_v2}/trees/{OTHER_BRANCH}", timeout=10).status_code == 404


def test_unknown_branch_changes_nothing(deployed, nessie):
    before = (
        deployed["ledger"].list_ingests(),
        requests.get(f"{nessie.api_v2}/trees", timeout=10).json(),
    )
    assert_one_line_error(
        aws("publish", "wap_sales_orders_20200101T000000_00000000", "--reason", "x"),
        "unknown branch",
    )
    assert_one_line_error(aws("discard", "wap_nope"), "unknown branch")
    after = (
        deployed["ledger"].list_ingests(),
        requests.get(f"{nessie.api_v2}/trees", timeout=10).json(),
    )
    assert after == before


def test_a_missing_stack_is_one_line(deployed):
    result = run_wap("--aws", "--region", REGION, "--stack", "NoSuchStack", "runs")
    assert_one_line_error(result, "NoSuchStack")


def test_files_are_checked_before_anything_is_uploaded(deployed, tmp_path):
    path = tmp_path / "orders.csv.parquet"
    path.write_text("order_id\n1\n")
    result = aws("ingest", str(path), "--table", "sales.orders")
    assert_one_line_error(result, "not a parquet file")
    listed = deployed["s3"].list_objects_v2(Bucket=SOURCE, Prefix="sales/orders/orders.csv")
    assert listed.get("KeyCount", 0) == 0


def test_show_without_a_report_says_so(deployed):
    result = aws("show", OTHER_ID)
    assert result.exit_code == 0, result.output
    assert "no audit report" in result.stdout and "JobRunFailed: OOM" in result.stdout


def _snapshot(deployed, nessie):
    return (
        deployed["ledger"].list_ingests(),
        requests.get(f"{nessie.api_v2}/trees", timeout=10).json(),
    )


def test_a_branch_that_moved_since_its_audit_is_not_published(deployed, nessie):
    before = _snapshot(deployed, nessie)
    result = aws("publish", MOVED_BRANCH, "--reason", "looks fine")
    assert_one_line_error(result, "moved since its audit")
    assert _snapshot(deployed, nessie) == before


def test_a_publish_that_conflicts_with_main_changes_nothing(deployed, nessie):
    # main changes the same table after the audit (only now: earlier tests publish to main)
    seeder = deployed["seeder"]
    deployed["table"].append(pa.table({"order_id": [7], "amount": [7.0]}, schema=SCHEMA))
    seeder.put_table("main", deployed["table"])
    before = _snapshot(deployed, nessie)
    result = aws("publish", CONFLICT_BRANCH, "--reason", "looks fine")
    assert_one_line_error(result, "main changed sales.orders since the audit")
    assert _snapshot(deployed, nessie) == before


def test_an_unreachable_nessie_is_one_line(deployed):
    result = run_wap(
        "--aws",
        "--region",
        REGION,
        "--stack",
        STACK,
        "--nessie-url",
        "http://127.0.0.1:9",
        "branches",
    )
    assert_one_line_error(result, "unreachable", "127.0.0.1:9")
