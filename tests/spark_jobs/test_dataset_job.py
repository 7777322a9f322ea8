"""A multi-table dataset through the real job (issue 27): every table written on one
branch, each audited by its own checks, the checks between tables evaluated on the branch
after all writes, one report naming each table's snapshot and the one hash to merge."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace

import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_parquet

DATASET = """tables: [{ns}.orders, {ns}.order_items]
checks:
  - {{kind: foreign_key, table: {ns}.order_items, column: order_id,
     references: {ns}.orders.order_id}}
  - {{kind: row_count_relation, name: items_at_least_orders,
     expression: order_items >= orders}}
"""
ITEMS_CONFIG = "checks:\n  - {kind: not_null, column: sku}\n"


@pytest.fixture
def dataset(ingest, tmp_path):
    """Factory: job arguments for a dataset of `{ns}.orders` and `{ns}.order_items`."""

    def make(orders: dict, items: dict | None, ns: str | None = None):
        ns = ns or f"ds{uuid.uuid4().hex[:6]}"
        configs = tmp_path / f"configs-{ns}"
        (configs / "datasets").mkdir(parents=True)
        (configs / "datasets" / "shop.yaml").write_text(DATASET.format(ns=ns))
        (configs / f"{ns}.order_items.yaml").write_text(ITEMS_CONFIG)
        sources, tables = (
            [write_parquet(tmp_path / f"{ns}-orders.parquet", orders)],
            [f"{ns}.orders"],
        )
        if items is not None:
            sources.append(write_parquet(tmp_path / f"{ns}-items.parquet", items))
            tables.append(f"{ns}.order_items")
        args = ingest(f"{ns}.order_items", sources)
        return replace(
            args,
            table_config_uri=configs.as_uri() + "/",
            dataset_config_uri=(configs / "datasets" / "shop.yaml").as_uri(),
            source_tables=tuple(tables),
            all_or_nothing=True,
        ), ns

    return make


ORDERS = {"order_id": [1, 2, 3], "customer": ["ann", "bob", "cy"]}
ITEMS = {"order_id": [1, 1, 2, 3], "sku": ["a", "b", "c", "d"]}


def test_every_table_is_written_on_one_branch_and_the_report_names_each_snapshot(
    spark, nessie, nessie_api, dataset
):
    args, ns = dataset(ORDERS, ITEMS)
    report = run_ingest(spark, args)

    assert report["outcome"] == "passed", report["reason"]
    written = {entry["table"]: entry for entry in report["tables"]}
    assert {t: e["rows_written"] for t, e in written.items()} == {
        f"{ns}.order_items": 4,
        f"{ns}.orders": 3,
    }
    assert all(e["snapshot_id"] for e in written.values())
    assert report["branch_hash"] == nessie_api.ref(args.branch)["hash"]
    names = [check["name"] for check in report["checks"]]
    assert f"{ns}.order_items: sku_not_null" in names
    assert {"order_items_order_id_foreign_key", "items_at_least_orders"} <= set(names)
    assert nessie_api.table_keys(args.branch) >= {f"{ns}.orders", f"{ns}.order_items"}
    assert f"{ns}.orders" not in nessie_api.table_keys("main")
    assert len(report["sources"]) == 2 and {s["status"] for s in report["sources"]} == {"passed"}
    assert sorted(
        r[0] for r in read_on_ref(spark, nessie, args.branch, f"{ns}.order_items").collect()
    ) == [1, 1, 2, 3]


def test_an_orphan_key_and_a_table_check_fail_the_dataset_each_named(spark, dataset):
    args, ns = dataset(ORDERS, {"order_id": [1, 9, 9, 8], "sku": ["a", "b", None, "d"]})
    report = run_ingest(spark, args)

    assert report["outcome"] == "failed"
    fk = next(c for c in report["checks"] if c["kind"] == "foreign_key")
    assert (fk["status"], fk["violations"]) == ("failed", 3)
    assert fk["samples"] == [{"order_id": 9, "rows": 2}, {"order_id": 8, "rows": 1}]
    assert "order_items_order_id_foreign_key" in report["reason"]
    assert f"{ns}.order_items: sku_not_null" in report["reason"]  # with its table


def test_a_file_the_job_cannot_use_rejects_the_whole_dataset_naming_its_table(
    spark, dataset, tmp_path
):
    args, ns = dataset(ORDERS, ITEMS)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"PAR1 not really parquet PAR1")
    args = replace(args, sources=[args.sources[0], broken.as_uri()])
    report = run_ingest(spark, args)

    assert report["outcome"] == "rejected"
    assert report["reason"].startswith(f"{ns}.order_items: "), report["reason"]
    assert report.get("tables") in (None, [])


def test_a_new_table_the_drop_brings_no_files_for_is_refused(spark, dataset):
    args, _ns = dataset(ORDERS, None)
    report = run_ingest(spark, args)
    assert report["outcome"] == "rejected"
    assert "brings no files" in report["reason"]
    assert json.dumps(report)  # the report is plain JSON


def test_each_table_of_a_dataset_records_its_metrics_beside_it_on_the_branch(
    spark, nessie, nessie_api, dataset
):
    """docs/metric-history.md: a dataset run records one metrics table per data table, on
    the dataset's branch; the one merge publishes them all with the data."""
    args, ns = dataset(ORDERS, ITEMS)
    report = run_ingest(spark, args)
    assert report["outcome"] == "passed", report["reason"]
    assert report["branch_hash"] == nessie_api.ref(args.branch)["hash"]
    for table, rows in ((f"{ns}.orders", 3), (f"{ns}.order_items", 4)):
        metrics = read_on_ref(spark, nessie, args.branch, f"{table}__audit_metrics").collect()
        counts = {(m["scope"], m["metric"]): m["value"] for m in metrics if not m["column_name"]}
        assert counts[("table", "row_count")] == rows
        assert counts[("file", "row_count")] == rows
        assert {m["ingest_id"] for m in metrics} == {args.ingest_id}
