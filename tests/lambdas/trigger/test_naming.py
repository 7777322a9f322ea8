"""Routing, marker files, ingest ids, branch names: the pure rules of the trigger."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from pynessie.model import is_valid_reference_name

from contracts.layout import is_marker
from ingestion.exceptions import UnroutableKeyError
from ingestion.naming import TableRef, branch_name, ingest_id, route_key


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("sales/orders/file.parquet", ("sales", "orders")),
        ("sales/orders/2026/11/22/part-0.parquet", ("sales", "orders")),
        ("_raw/t_1/x.parquet", ("_raw", "t_1")),
    ],
)
def test_route_key_maps_the_first_two_segments_to_the_table(key, expected):
    table = route_key(key)
    assert (table.namespace, table.name) == expected


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("orders.parquet", "not under <namespace>/<table>/"),
        ("sales/orders.parquet", "not under <namespace>/<table>/"),
        ("Sales/orders/x.parquet", "namespace 'Sales'"),
        ("sales/order-lines/x.parquet", "table 'order-lines'"),
        ("1sales/orders/x.parquet", "namespace '1sales'"),
        ("sales/or ders/x.parquet", "table 'or ders'"),
        ("sales/orders;drop/x.parquet", "table 'orders;drop'"),
        # Reserved for multi-table datasets: a file dropped too shallow there is refused,
        # never routed to a table `_datasets.<name>`.
        ("_datasets/shop/x.parquet", "is for multi-table datasets"),
    ],
)
def test_route_key_rejects_with_a_reason(key, fragment):
    with pytest.raises(UnroutableKeyError, match=re.escape(fragment)):
        route_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "sales/orders/_SUCCESS",
        "sales/orders/",
        "sales/orders/_tmp.parquet",
        "sales/orders/.hidden.parquet",
        "sales/orders/day=1/_committed_123",
        "",
    ],
)
def test_markers_are_recognised(key):
    assert is_marker(key)


@pytest.mark.parametrize(
    "key", ["sales/orders/a.parquet", "sales/orders/a_b.parquet", "sales/orders/x.csv"]
)
def test_data_files_are_not_markers(key):
    assert not is_marker(key)


def test_ingest_id_is_the_first_16_hex_of_sha256_of_bucket_key_version():
    # Expected value computed by hand: sha256(b"wap-source/sales/orders/2026-11-22/
    # orders batch 1+2.parquet#096fKKXTRTtl3on89fVO.nfljtsv6qko")[:16]
    assert (
        ingest_id(
            "wap-source",
            "sales/orders/2026-11-22/orders batch 1+2.parquet",
            "096fKKXTRTtl3on89fVO.nfljtsv6qko",
        )
        == "e809019e39994974"
    )


def test_ingest_id_changes_with_any_input_and_needs_a_version():
    base = ingest_id("b", "ns/t/k.parquet", "v1")
    assert base != ingest_id("b", "ns/t/k.parquet", "v2")
    assert base != ingest_id("b2", "ns/t/k.parquet", "v1")
    with pytest.raises(ValueError):
        ingest_id("b", "ns/t/k.parquet", "")


def test_branch_name_follows_the_contract_in_utc():
    at = datetime(2026, 11, 22, 11, 15, 0, tzinfo=timezone(timedelta(hours=1)))
    name = branch_name(TableRef("sales", "orders"), at, "0123456789abcdef")
    assert name == "wap_sales_orders_20261122T101500_01234567"
    # pynessie's own check of reference names, an oracle independent of ours.
    assert is_valid_reference_name(name)


def test_branch_name_refuses_a_non_ingest_id():
    with pytest.raises(ValueError):
        branch_name(TableRef("sales", "orders"), datetime.now(UTC), "../main")


def test_table_ref_parse_validates_identifiers():
    assert TableRef.parse("sales.orders").qualified == "sales.orders"
    for bad in ("sales", "sales.orders.x", "Sales.orders", "sales.or-ders", "sales.orders;"):
        with pytest.raises(ValueError):
            TableRef.parse(bad)


VALID_REF_NAMES = ("a", "main", "wap_x_y_20261122T101500_01234567", "a.b/c-d", "a.")


@pytest.mark.parametrize("name", [*VALID_REF_NAMES, "", "1a", "a..b", "a/", "a b", "a\n", "ä"])
def test_one_ref_name_rule_for_the_lambdas_the_job_and_the_nessie_double(name):
    """The contract's rule, where the trigger, the job and our Nessie server apply it."""
    from contracts import naming
    from local.nessie.exceptions import BadRequestError
    from local.nessie.refs import validate_ref_name
    from spark_jobs.errors import InvalidArgumentError
    from spark_jobs.identifiers import validate_branch

    valid = naming.is_ref_name(name)
    assert valid == (name in VALID_REF_NAMES)
    try:
        validate_branch(name)
        job_accepts = True
    except InvalidArgumentError:
        job_accepts = False
    try:
        validate_ref_name(name)
        double_accepts = True
    except BadRequestError:
        double_accepts = False
    assert job_accepts == double_accepts == valid
