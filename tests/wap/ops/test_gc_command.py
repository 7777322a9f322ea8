"""`wap gc` on both backends, over the seeded lake (tests/fixtures/lake_seed.py): it reports
by default, deletes only with --delete, and sweeps only the warehouse (a home's directory;
the lake bucket's warehouse/ prefix on AWS). The mark itself is tested on a lake the real
flow wrote (tests/ingestion/maintenance/test_gc.py)."""

from __future__ import annotations

import os
import time

import pytest

from tests.fixtures.backends import LAKE_BUCKET, World
from tests.fixtures.wap_cli import json_document

STRAY = "sales/orders_stray/data/never-committed.parquet"


@pytest.fixture(scope="module")
def stray(world: World) -> str:
    """A file no reference reaches, three days old, in the backend's warehouse; its path
    as `wap gc` reports it."""
    if world.kind == "local":
        path = world.extra["home"] / "warehouse" / STRAY
        path.parent.mkdir(parents=True)
        path.write_bytes(b"PAR1" + b"x" * 100 + b"PAR1")
        three_days_ago = time.time() - 3 * 86400
        os.utime(path, (three_days_ago, three_days_ago))
        return str(path)
    s3 = world.extra["s3"]
    s3.put_object(Bucket=LAKE_BUCKET, Key=f"warehouse/{STRAY}", Body=b"PAR1" + b"x" * 100 + b"PAR1")
    s3.put_object(Bucket=LAKE_BUCKET, Key="elsewhere/not-the-warehouse.parquet", Body=b"x")
    return f"s3://{LAKE_BUCKET}/warehouse/{STRAY}"


def gc(world: World, *args: str) -> dict:
    result = world.wap("gc", "--json", *args)
    assert result.exit_code == 0, result.output
    return json_document(result, "gc")


def exists(world: World, path: str) -> bool:
    if world.kind == "local":
        return os.path.exists(path)
    keys = world.extra["s3"].list_objects_v2(Bucket=LAKE_BUCKET).get("Contents", [])
    return path.removeprefix(f"s3://{LAKE_BUCKET}/") in {k["Key"] for k in keys}


def grace(world: World) -> list[str]:
    # moto stamps objects with the time of the put: on AWS the stray is young.
    return ["--grace-hours", "0"] if world.kind == "aws" else []


def test_gc_reports_what_it_would_reclaim_and_deletes_nothing(world, stray):
    document = gc(world, *grace(world))

    assert document["deleted"] is False
    assert document["references"] >= 5  # main and the seeded open branches
    assert document["missing_files"] == []
    rows = {row["table"]: row for row in document["tables"]}
    assert rows["sales/orders_stray"]["garbage_files"] == 1
    assert rows["sales/orders_stray"]["deleted_files"] == 0
    assert exists(world, stray)
    # main's sales.orders: MAIN_ROWS in one data file (lake_seed.py), on either backend
    assert (rows["sales.orders"]["data_files"], rows["sales.orders"]["garbage_files"]) == (1, 0)
    assert rows["sales.orders"]["average_file_bytes"] == rows["sales.orders"]["data_bytes"]
    if world.kind == "local":
        assert rows["sales.orders"]["live_files"] > 0


def summary(world: World) -> dict:
    """The latest collection's summary, where the dashboard reads it (the artifacts bucket's
    reports/; a home keeps that bucket's reports under its state)."""
    import json

    key = "reports/maintenance/gc-latest.json"
    if world.kind == "local":
        from wap.runtime.home import WapHome

        home = WapHome(world.extra["home"])
        kept = home.objects / world.artifacts_bucket / key
        assert list(home.state.rglob("gc-latest.json")) == [kept]  # there, and only there
        return json.loads(kept.read_bytes())
    body = world.extra["s3"].get_object(Bucket=world.artifacts_bucket, Key=key)["Body"]
    return json.loads(body.read())


def test_gc_keeps_each_tables_health_for_the_dashboard_and_writes_its_metrics(world, stray):
    document = gc(world, *grace(world))

    kept = summary(world)
    assert kept["collected_at"] == document["started"] and kept["deleted"] is False
    orders = kept["tables"]["sales.orders"]
    assert (orders["data_files"], orders["reclaimable_bytes"]) == (1, 0)
    assert orders["average_file_bytes"] == orders["data_bytes"] > 0
    assert kept["tables"]["sales/orders_stray"]["reclaimable_files"] == 1
    if world.kind == "local":  # as the local Lambdas' metrics: in the command's log
        logs = "".join(p.read_text() for p in (world.extra["home"] / "logs").glob("*gc*.log"))
        assert '"DataFilesOnMain": 1' in logs and '"Table": "sales.orders"' in logs


def test_gc_delete_removes_the_garbage_only(world, stray):
    document = gc(world, "--delete", *grace(world))

    assert document["deleted"] is True
    rows = {row["table"]: row for row in document["tables"]}
    assert rows["sales/orders_stray"]["deleted_files"] == 1
    assert not exists(world, stray)
    after = gc(world, "--grace-hours", "0", "--retention-days", "3650")
    assert after["missing_files"] == []  # every file a reference reaches is still there
    if world.kind == "aws":
        assert exists(world, f"s3://{LAKE_BUCKET}/elsewhere/not-the-warehouse.parquet")


def test_gc_human_output_names_the_tables(world, stray):
    result = world.wap("gc")

    assert result.exit_code == 0, result.output
    assert "Reclaimable:" in result.stdout


def test_a_tables_own_grace_applies_unless_a_flag_is_given(world, tmp_path):
    """`maintenance: {grace: 0}` in sales.orders' config makes its young unreferenced files
    garbage; --grace-hours overrides every table's setting."""
    if world.kind == "aws":
        pytest.skip("the seeded tables' files are not in the lake bucket on this backend")
    from ingestion.maintenance.gc import normalize

    metadata = normalize(world.metadata_location("main", "sales.orders"))
    young = os.path.join(os.path.dirname(os.path.dirname(metadata)), "data", "young.parquet")
    with open(young, "wb") as out:
        out.write(b"PAR1 young PAR1")
    (tmp_path / "sales.orders.yaml").write_text("maintenance: {grace: 0}\n")
    env = {"WAP_TABLES_DIR": str(tmp_path)}

    def garbage(*args: str) -> int:
        result = world.wap("gc", "--json", *args, env=env)
        assert result.exit_code == 0, result.output
        rows = {row["table"]: row for row in json_document(result, "gc")["tables"]}
        return rows["sales.orders"]["garbage_files"]

    try:
        assert garbage() >= 1
        assert garbage("--grace-hours", "24") == 0
    finally:
        os.remove(young)


def test_flags_override_the_tables_maintenance_settings():
    from datetime import timedelta

    from contracts.table_config import MaintenanceOptions
    from wap.ops.maintenance import gc_options

    tables = {"a.b": MaintenanceOptions(retention=3600, grace=60)}
    own = gc_options(delete=False, retention_days=None, grace_hours=None, tables=tables)
    flagged = gc_options(delete=True, retention_days=2, grace_hours=0, tables=tables)

    assert (own.retention_of("a.b"), own.grace_of("a.b")) == (
        timedelta(hours=1),
        timedelta(minutes=1),
    )
    assert (own.retention_of("c.d"), own.grace_of("c.d")) == (timedelta(days=7), timedelta(days=1))
    assert (flagged.retention_of("a.b"), flagged.grace_of("a.b"), flagged.delete) == (
        timedelta(days=2),
        timedelta(0),
        True,
    )
