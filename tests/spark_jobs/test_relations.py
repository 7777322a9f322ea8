"""Checks between the tables of a multi-table dataset (issue 27, first part): the config
contract and the evaluation on real Spark frames. Wiring into the flow is still to come."""

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


@pytest.mark.parametrize(("text", "fragment"), [
    ("tables: [sales.orders]", "two or more tables"),
    ("tables: [sales.orders, sales.orders]", "twice"),
    ("tables: [a.b, c.d]\nchecks: [{kind: foreign_key, table: a.b, column: x, "
     "references: e.f.x}]", "must name tables of the dataset"),
    ("tables: [a.b, c.d]\nchecks: [{kind: foreign_key, table: a.b, column: x}]", "takes"),
    ("tables: [a.b, c.d]\nchecks: [{kind: unique, column: x}]", "foreign_key or"),
    ("tables: [a.b, c.d]\nextra: 1", "unknown key"),
    ("tables: [x.orders, y.orders, z.x_orders]", "which repeat"),  # x.orders -> x_orders
    ("tables: [_datasets.a, c.d]", "two or more tables"),  # the drops' folder, no namespace
])
def test_a_bad_dataset_config_is_refused_naming_the_entry(text, fragment):
    with pytest.raises(TableConfigError, match=fragment):
        _config(text)


def test_foreign_key_finds_new_keys_main_and_the_dataset_lack(spark):
    orders_on_branch = spark.createDataFrame([(1,), (2,), (3,)], "order_id bigint")
    new_items = spark.createDataFrame([(1, "a"), (3, "b"), (7, "c"), (7, "d"), (None, "e")],
                                      "order_id bigint, sku string")
    results = evaluate_relations(
        spark, _config(), new_rows={"sales.order_items": new_items},
        branch_rows={"sales.orders": orders_on_branch},
        added={"sales.orders": 3, "sales.order_items": 5})

    fk, counts = results
    assert (fk.status, fk.violations) == ("failed", 2)
    assert list(fk.samples) == [{"order_id": 7, "rows": 2}]
    assert (counts.status, counts.observed) == ("passed", {"order_items": 5, "orders": 3})


def test_a_count_relation_that_does_not_hold_fails_and_a_bad_one_is_a_config_error(spark):
    none = spark.createDataFrame([], "order_id bigint")
    rows = {"sales.order_items": none}
    fewer = evaluate_relations(spark, _config(), rows, {"sales.orders": none},
                               {"sales.orders": 4, "sales.order_items": 1})
    assert fewer[1].status == "failed" and fewer[0].status == "passed"

    bad = _config(CONFIG.replace("order_items >= orders", "items >= orders"))
    with pytest.raises(TableConfigError, match="does not analyse"):
        evaluate_relations(spark, bad, rows, {"sales.orders": none}, {})


def test_keys_of_types_that_cannot_be_compared_are_a_config_error(spark):
    items = spark.createDataFrame([("1",)], "order_id string")
    orders = spark.createDataFrame([(1,)], "order_id bigint")
    with pytest.raises(TableConfigError, match="is string but"):
        evaluate_relations(spark, _config(), {"sales.order_items": items},
                           {"sales.orders": orders}, {})
