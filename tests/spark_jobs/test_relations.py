"""Checks between the tables of a multi-table dataset (issue 27): the config contract and
the evaluation on real Spark frames (the job's wiring: tests/spark_jobs/test_dataset_job.py)."""

from __future__ import annotations

import pytest
import yaml

from contracts.dataset_config import parse_dataset_config
from contracts.table_config import TableConfigError
from spark_jobs.relations import evaluate_relations

CONFIG = """
tables: [sales.orders, sales.order_items]
checks:
  - {kind: foreign_key, table: sales.order_items, column: order_id,
     references: sales.orders.order_id}
  - {kind: row_count_relation, name: items_at_least_orders, expression: order_items >= orders}
"""


def _config(text: str = CONFIG):
    return parse_dataset_config(yaml.safe_load(text), "orders_with_items")


def test_the_tables_are_kept_in_canonical_order_for_their_locks():
    assert _config().tables == ("sales.order_items", "sales.orders")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("tables: [sales.orders]", "two or more tables"),
        ("tables: [sales.orders, sales.orders]", "twice"),
        (
            "tables: [a.b, c.d]\nchecks: [{kind: foreign_key, table: a.b, column: x, "
            "references: e.f.x}]",
            "must name tables of the dataset",
        ),
        ("tables: [a.b, c.d]\nchecks: [{kind: foreign_key, table: a.b, column: x}]", "takes"),
        ("tables: [a.b, c.d]\nchecks: [{kind: unique, column: x}]", "foreign_key or"),
        ("tables: [a.b, c.d]\nextra: 1", "unknown key"),
        ("tables: [x.orders, y.orders, z.x_orders]", "which repeat"),  # x.orders -> x_orders
        ("tables: [_datasets.a, c.d]", "two or more tables"),  # the drops' folder, no namespace
    ],
)
def test_a_bad_dataset_config_is_refused_naming_the_entry(text, fragment):
    with pytest.raises(TableConfigError, match=fragment):
        _config(text)


@pytest.mark.parametrize("lookup_keys", [10_000, 1])  # an IN filter; an anti-join
def test_foreign_key_finds_new_keys_main_and_the_dataset_lack(spark, monkeypatch, lookup_keys):
    monkeypatch.setattr("spark_jobs.relations.LOOKUP_KEYS", lookup_keys)
    orders_on_main = spark.createDataFrame([(1,), (2,)], "order_id bigint")
    new_orders = spark.createDataFrame([(3,), (4,)], "order_id bigint")
    new_items = spark.createDataFrame(
        [(1, "a"), (3, "b"), (7, "c"), (7, "d"), (None, "e"), (8, "f")],
        "order_id bigint, sku string",
    )
    results = evaluate_relations(
        spark,
        _config(),
        new_rows={"sales.order_items": new_items, "sales.orders": new_orders},
        earlier_rows={"sales.orders": orders_on_main, "sales.order_items": None},
        added={"sales.orders": 2, "sales.order_items": 6},
    )

    fk, counts = results
    assert (fk.status, fk.violations) == ("failed", 3)  # 7 twice and 8; 1 on main, 3 new
    assert list(fk.samples) == [{"order_id": 7, "rows": 2}, {"order_id": 8, "rows": 1}]
    assert (counts.status, counts.observed) == ("passed", {"order_items": 6, "orders": 2})


def test_foreign_key_passes_on_keys_found_on_main_or_in_the_drop_alone(spark):
    orders_on_main = spark.createDataFrame([(1,), (2,)], "order_id bigint")
    items = spark.createDataFrame([(1,), (2,), (2,)], "order_id bigint")
    on_main = evaluate_relations(
        spark,
        _config(),
        {"sales.order_items": items, "sales.orders": orders_on_main.limit(0)},
        {"sales.orders": orders_on_main},
        {"sales.order_items": 3},
    )[0]
    assert (on_main.status, on_main.violations) == ("passed", 0)
    # A new parent table (no earlier rows), or one the drop adds the key column to.
    new_orders = spark.createDataFrame([(1,), (2,)], "order_id bigint")
    without_key = spark.createDataFrame([("x",)], "customer string")
    for earlier in (None, without_key):
        in_drop = evaluate_relations(
            spark,
            _config(),
            {"sales.order_items": items, "sales.orders": new_orders},
            {"sales.orders": earlier},
            {"sales.orders": 2, "sales.order_items": 3},
        )[0]
        assert (in_drop.status, in_drop.violations) == ("passed", 0)


def test_a_count_relation_that_does_not_hold_fails_and_a_bad_one_is_a_config_error(spark):
    none = spark.createDataFrame([], "order_id bigint")
    rows = {"sales.order_items": none, "sales.orders": none}
    fewer = evaluate_relations(
        spark, _config(), rows, {"sales.orders": none}, {"sales.orders": 4, "sales.order_items": 1}
    )
    assert fewer[1].status == "failed" and fewer[0].status == "passed"

    bad = _config(CONFIG.replace("order_items >= orders", "items >= orders"))
    with pytest.raises(TableConfigError, match="does not analyse"):
        evaluate_relations(spark, bad, rows, {"sales.orders": none}, {})


def test_keys_of_types_that_cannot_be_compared_are_a_config_error(spark):
    items = spark.createDataFrame([("1",)], "order_id string")
    orders = spark.createDataFrame([(1,)], "order_id bigint")
    with pytest.raises(TableConfigError, match="is string but"):
        evaluate_relations(
            spark, _config(), {"sales.order_items": items, "sales.orders": orders}, {}, {}
        )
