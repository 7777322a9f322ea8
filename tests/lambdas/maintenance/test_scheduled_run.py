"""The scheduled maintenance Lambda on the local stack, as the template deploys it: its own
role (IAM checked per call), the lake bucket's warehouse on S3, Nessie's API, each table's
`maintenance:` section. No Spark: pyiceberg writes one table into the lake bucket through
the Lambda's own FileIO (lambdas/maintenance/fileio.py), and the table is committed to main
the way Iceberg's NessieCatalog commits.
"""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest

from ingestion import metrics
from lambdas.maintenance.fileio import PROPERTIES
from local.aws.stack import LambdaInvocationError
from tests.fixtures.catalog_auth import harness_auth
from tests.fixtures.lake_seed import NessieSeeder

SCHEDULED = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
LAKE = "wap-lake"  # StackSettings.lake_bucket
ORPHAN = "warehouse/sales/orders/data/00000-never-committed.parquet"
ORPHAN_BYTES = b"PAR1" + b"x" * 500 + b"PAR1"
SCHEMA = pa.schema([("order_id", pa.int64()), ("amount", pa.float64())])


@pytest.fixture
def stack(make_stack, nessie, tmp_path):
    """sales.orders on main: two appends (two data files) in the lake bucket, plus a file no
    reference reaches; its config's `grace: 0` makes that file garbage at once (moto stamps
    objects with the time of the put). sales.refunds: one append, no config (a day's grace:
    nothing of it is garbage yet)."""
    from pyiceberg.catalog.glue import GlueCatalog

    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "sales.orders.yaml").write_text("maintenance: {grace: 0}\n")
    stack = make_stack(tables_dir=tables)
    glue = GlueCatalog(
        "lake",
        **{
            "glue.region": stack.settings.region,
            "warehouse": f"s3://{LAKE}/warehouse",
            **PROPERTIES,
        },
    )
    glue.create_namespace("sales")
    table = glue.create_table(
        "sales.orders", schema=SCHEMA, location=f"s3://{LAKE}/warehouse/sales/orders"
    )
    for order in (1, 2):
        table.append(pa.Table.from_pylist([{"order_id": order, "amount": 1.5}], schema=SCHEMA))
    seeder = NessieSeeder(nessie.api_v2, harness_auth(nessie))
    seeder.put_table("main", glue.load_table("sales.orders"), with_namespace=True)
    # A table without a config keeps the defaults (the run asks for a config that is not
    # there: S3 answers 404 only to a caller that may list the bucket).
    other = glue.create_table(
        "sales.refunds", schema=SCHEMA, location=f"s3://{LAKE}/warehouse/sales/refunds"
    )
    other.append(pa.Table.from_pylist([{"order_id": 9, "amount": 2.0}], schema=SCHEMA))
    seeder.put_table("main", glue.load_table("sales.refunds"), key="sales.refunds")
    s3 = stack.client("s3")
    s3.put_object(Bucket=LAKE, Key=ORPHAN, Body=ORPHAN_BYTES)
    s3.put_object(Bucket=LAKE, Key="elsewhere/not-the-warehouse.parquet", Body=b"x")
    return stack


def _keys(stack) -> set[str]:
    pages = stack.client("s3").get_paginator("list_objects_v2").paginate(Bucket=LAKE)
    return {o["Key"] for page in pages for o in page.get("Contents", [])}


def test_the_daily_run_reports_measures_and_keeps_a_summary_but_deletes_nothing(stack, monkeypatch):
    before = _keys(stack)
    log = io.StringIO()  # the function's log, where its embedded metrics go
    monkeypatch.setattr(metrics, "_log_stream", lambda: log)

    result = stack.invoke("maintenance", SCHEDULED)

    assert result["deleted"] is False and result["missing_files"] == 0
    # Main's one commit reads the last metadata JSON, its manifest list, both manifests and
    # both data files; the orphan, the two metadata JSONs before the last append and the
    # first append's manifest list are unreferenced.
    assert (result["marked_files"], result["reclaimable_files"]) == (6 + 4, 4)
    reclaimable = result["reclaimable_bytes"]
    assert reclaimable > len(ORPHAN_BYTES)
    assert _keys(stack) == before  # report mode: the deploy did not set gcDelete
    # Each table's health in the function's log, as embedded metrics.
    documents = [json.loads(line) for line in log.getvalue().splitlines()]
    [orders] = [d for d in documents if d.get("Table") == "sales.orders"]
    assert orders["DataFilesOnMain"] == 2
    assert orders["ReclaimableBytes"] == reclaimable
    assert orders["AverageDataFileBytes"] > 0
    # ... and its summary where the dashboard reads it.
    body = stack.client("s3").get_object(
        Bucket=stack.settings.artifacts_bucket, Key="reports/maintenance/gc-latest.json"
    )
    summary = json.loads(body["Body"].read())
    assert summary["tables"]["sales.orders"]["data_files"] == 2
    assert summary["tables"]["sales.orders"]["reclaimable_files"] == 4
    # It read the lake as its role, within the warehouse, and nothing was refused.
    calls = {(r.action, r.resource) for r in stack.iam.records if r.principal == "maintenance"}
    assert ("s3:ListBucket", f"arn:aws:s3:::{LAKE}") in calls
    read = {
        resource
        for action, resource in calls
        if action == "s3:GetObject" and resource.startswith(f"arn:aws:s3:::{LAKE}/")
    }
    assert read and all(r.startswith(f"arn:aws:s3:::{LAKE}/warehouse/") for r in read)
    assert [r for r in stack.iam.denied if r.principal == "maintenance"] == []
    # Then compaction: it looked for compactions still running (the ledger's status index)
    # and started none, since no table has its `min_files` (5 by default) on main.
    assert result["compaction"] == {"finished": [], "started": []}
    assert any(action == "dynamodb:Query" and "/index/" in resource for action, resource in calls)

    # The local stand-in evaluates the role per call, as AWS would: without the grant the
    # run is refused.
    assert stack.iam.revoke_action("maintenance", "s3:GetObject", resource_part="warehouse")
    try:
        with pytest.raises(LambdaInvocationError, match="AccessDenied"):
            stack.invoke("maintenance", SCHEDULED)
    finally:
        stack.iam.restore()
