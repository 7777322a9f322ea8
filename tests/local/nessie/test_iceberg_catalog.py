"""Iceberg's Java NessieCatalog (Iceberg 1.10.2, Nessie client 0.104.5) against our server,
with pynessie 0.67 (API v1) creating branches and merging, as the service does."""

from __future__ import annotations

import pytest
from pynessie.error import NessieConflictException

from local.spark import lake_catalog_conf
from tests.fixtures.catalog_auth import harness_credentials, harness_pynessie
from tests.fixtures.nessie_api import unique

pytestmark = pytest.mark.slow


def catalog_for(spark, nessie, warehouse: str, ref: str) -> str:
    """A fresh Spark catalog name on `ref` (SparkCatalog caches its Nessie client per name)."""
    name = unique("t")
    conf = lake_catalog_conf(
        nessie.api_v2, warehouse, catalog=name, ref=ref, credentials=harness_credentials(nessie)
    )
    for key, value in conf.items():
        spark.conf.set(key, value)
    return name


def ids(spark, table: str) -> list[int]:
    return sorted(row.id for row in spark.sql(f"SELECT id FROM {table}").collect())


@pytest.fixture
def client(nessie):
    return harness_pynessie(nessie)


def test_append_on_branch_is_invisible_on_main_until_merged(lake, nessie, warehouse, client):
    spark = lake
    main = catalog_for(spark, nessie, warehouse, "main")
    spark.sql(f"CREATE NAMESPACE {main}.sales")
    spark.sql(f"CREATE TABLE {main}.sales.orders (id BIGINT, amount DOUBLE) USING iceberg")
    spark.sql(f"INSERT INTO {main}.sales.orders VALUES (1, 10.0)")

    main_ref = client.get_reference("main")
    client.create_branch("wap_sales_orders", "main", main_ref.hash_)
    branch = catalog_for(spark, nessie, warehouse, "wap_sales_orders")
    spark.sql(f"INSERT INTO {branch}.sales.orders VALUES (2, 20.0), (3, 30.0)")

    assert ids(spark, f"{main}.sales.orders") == [1]
    assert ids(spark, f"{branch}.sales.orders") == [1, 2, 3]
    assert [r.namespace for r in spark.sql(f"SHOW NAMESPACES IN {branch}").collect()] == ["sales"]
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {branch}.sales").collect()] == [
        "orders"
    ]

    result = client.merge("wap_sales_orders", "main")
    assert result.was_successful and result.was_applied

    assert ids(spark, f"{main}.sales.orders") == [1, 2, 3]
    assert ids(spark, f"{catalog_for(spark, nessie, warehouse, 'main')}.sales.orders") == [1, 2, 3]
    assert client.get_reference("main").hash_ == result.resultant_target_hash
    client.delete_branch("wap_sales_orders", client.get_reference("wap_sales_orders").hash_)
    assert [r.name for r in client.list_references().references] == ["main"]


def test_second_merge_of_two_branches_appending_to_one_table_conflicts(
    lake, nessie, warehouse, client
):
    spark = lake
    main = catalog_for(spark, nessie, warehouse, "main")
    spark.sql(f"CREATE NAMESPACE {main}.events")
    spark.sql(f"CREATE TABLE {main}.events.clicks (id BIGINT) USING iceberg")
    spark.sql(f"INSERT INTO {main}.events.clicks VALUES (1)")
    start = client.get_reference("main").hash_
    client.create_branch("wap_a", "main", start)
    client.create_branch("wap_b", "main", start)
    spark.sql(
        f"INSERT INTO {catalog_for(spark, nessie, warehouse, 'wap_a')}.events.clicks VALUES (2)"
    )
    spark.sql(
        f"INSERT INTO {catalog_for(spark, nessie, warehouse, 'wap_b')}.events.clicks VALUES (3)"
    )

    assert client.merge("wap_a", "main").was_successful
    main_after_first = client.get_reference("main").hash_

    with pytest.raises(NessieConflictException) as err:
        client.merge("wap_b", "main")
    assert err.value.status_code == 409
    assert err.value.error_code == "REFERENCE_CONFLICT"
    assert err.value.server_message == (
        "Values of existing and expected content for key 'events.clicks' are different."
    )

    assert client.get_reference("main").hash_ == main_after_first
    assert ids(spark, f"{main}.events.clicks") == [1, 2]


def test_catalog_errors_map_to_icebergs_exceptions(lake, nessie, warehouse):
    """Our conflict details are what NessieCatalog turns into Iceberg's typed exceptions."""
    spark = lake
    cat = catalog_for(spark, nessie, warehouse, "main")
    ns = unique("errs")
    spark.sql(f"CREATE NAMESPACE {cat}.{ns}")
    with pytest.raises(Exception, match="SCHEMA_ALREADY_EXISTS"):
        spark.sql(f"CREATE NAMESPACE {cat}.{ns}")
    with pytest.raises(
        Exception, match=f"NoSuchNamespaceException: Namespace does not exist: {ns}_missing"
    ):
        spark.sql(f"CREATE TABLE {cat}.{ns}_missing.t (id INT) USING iceberg")
    spark.sql(f"CREATE TABLE {cat}.{ns}.t (id INT) USING iceberg")
    with pytest.raises(
        Exception, match=f"NamespaceNotEmptyException: Namespace '{ns}' is not empty"
    ):
        spark.sql(f"DROP NAMESPACE {cat}.{ns}")
    spark.sql(f"ALTER TABLE {cat}.{ns}.t RENAME TO {cat}.{ns}.renamed")
    spark.sql(f"ALTER NAMESPACE {cat}.{ns} SET PROPERTIES ('team'='wap')")
    assert [r.tableName for r in spark.sql(f"SHOW TABLES IN {cat}.{ns}").collect()] == ["renamed"]
    described = {
        r.info_name: r.info_value
        for r in spark.sql(f"DESCRIBE NAMESPACE EXTENDED {cat}.{ns}").collect()
    }
    assert described["Properties"] == "((team,wap))"
