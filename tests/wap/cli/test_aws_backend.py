"""`wap --aws` against a "deployed" stack: what only the AWS backend does (profiles, the
stack's outputs, uploads to its source bucket, a Nessie URL override). The stack is
tests/fixtures/backends.py's: moto (CloudFormation outputs, DynamoDB, S3) + our Nessie
server, holding tests/fixtures/lake_seed.py's lake; what every backend does is tested once for
both in tests/wap/ops/test_backend_behaviour.py."""

from __future__ import annotations

import hashlib
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.fixtures.backends import SOURCE_BUCKET, STACK, aws_world
from tests.fixtures.lake_seed import BRANCH, FAILED_ID, JOB_FAILED_BRANCH, REGION
from tests.fixtures.wap_cli import assert_one_line_error, run_wap


@pytest.fixture(scope="module")
def deployed(tmp_path_factory):
    with aws_world(tmp_path_factory.mktemp("deployed")) as world:
        yield world


def aws(*args: str):
    return run_wap("--aws", "--region", REGION, "--stack", STACK, *args)


@pytest.fixture
def profile(tmp_path, monkeypatch) -> str:
    config = tmp_path / "config"
    config.write_text(
        f"[profile wap-test]\nregion = {REGION}\n"
        "aws_access_key_id = testing\naws_secret_access_key = testing\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    return "wap-test"


def test_a_profile_selects_the_account(deployed, profile):
    result = run_wap("--profile", profile, "--stack", STACK, "branches")
    assert result.exit_code == 0, result.output
    assert BRANCH in result.stdout and JOB_FAILED_BRANCH in result.stdout


def test_a_profile_selects_the_account_to_query(deployed, profile):
    result = run_wap(
        "--profile",
        profile,
        "--stack",
        STACK,
        "query",
        FAILED_ID,
        "SELECT count(*) AS n FROM orders",
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"n": 5}]


def test_nessie_url_override_reaches_the_same_catalog(deployed):
    nessie = deployed.extra["nessie"]
    result = run_wap(
        "--aws", "--region", REGION, "--stack", STACK, "--nessie-url", nessie.url, "show", FAILED_ID
    )
    assert result.exit_code == 0, result.output
    assert "main: 2   branch: 5" in result.stdout


def test_ingest_without_waiting_uploads_under_the_table_prefix(deployed, tmp_path):
    s3 = deployed.extra["s3"]
    path = tmp_path / "orders 2026-11-22.parquet"
    pq.write_table(pa.table({"order_id": [9]}), path)
    result = aws("ingest", str(path), "--table", "sales.orders", "--no-wait")
    assert result.exit_code == 0, result.output
    key = "sales/orders/orders 2026-11-22.parquet"
    [version] = s3.list_object_versions(Bucket=SOURCE_BUCKET, Prefix=key)["Versions"]
    assert version["VersionId"] != "null"
    assert s3.get_object(Bucket=SOURCE_BUCKET, Key=key)["Body"].read() == path.read_bytes()
    expected_id = hashlib.sha256(
        f"{SOURCE_BUCKET}/{key}#{version['VersionId']}".encode()
    ).hexdigest()[:16]
    assert f"(ingest {expected_id})" in result.stdout


def test_waiting_gives_up_with_one_line_after_the_timeout(deployed, tmp_path):
    path = tmp_path / "late.parquet"
    pq.write_table(pa.table({"order_id": [1]}), path)
    result = aws("ingest", str(path), "--table", "sales.orders", "--timeout", "1")
    assert_one_line_error(result, "timed out", "late.parquet")


def test_a_missing_stack_is_one_line(deployed):
    result = run_wap("--aws", "--region", REGION, "--stack", "NoSuchStack", "runs")
    assert_one_line_error(result, "NoSuchStack")


def test_files_are_checked_before_anything_is_uploaded(deployed, tmp_path):
    path = tmp_path / "orders.csv.parquet"
    path.write_text("order_id\n1\n")
    result = aws("ingest", str(path), "--table", "sales.orders")
    assert_one_line_error(result, "not a parquet file")
    listed = deployed.extra["s3"].list_objects_v2(
        Bucket=SOURCE_BUCKET, Prefix="sales/orders/orders.csv"
    )
    assert listed.get("KeyCount", 0) == 0


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


def test_maintain_on_a_stack_without_the_maintenance_function_is_one_line(deployed):
    """`wap --aws maintain` invokes the stack's maintenance Lambda, named by its output
    (what it does there: tests/wap/ops/test_compaction_run.py)."""
    result = aws("maintain", "sales.orders")
    assert_one_line_error(result, "MaintenanceFunctionName")


def test_replay_reads_main_of_the_deployed_stack(deployed, tmp_path):
    # The same code as locally: the deployed main's tables and ledger (the seeded lake
    # quarantined nothing, so the command names what is missing).
    from tests.fixtures.lake_seed import PUBLISHED_ID

    done = aws("replay", "sales.orders", PUBLISHED_ID, "--out", str(tmp_path))
    assert_one_line_error(done, "sales.orders has no quarantined rows on main")
    assert_one_line_error(
        aws("replay", "sales.nothing", PUBLISHED_ID), "no table sales.nothing on main"
    )
