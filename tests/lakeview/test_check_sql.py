"""The violating-rows queries `wap show` suggests, run in the query sandbox on rows whose
violations are known by construction (ids chosen by hand below, not by the code)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

from lakeview.check_sql import KEYWORDS, ident, literal, violation_query
from wap.ops import sql_sandbox

ROWS = pa.table(
    {
        "id": [1, 2, 3, 4, 5, 6],
        "status": ["NEW", "PAID", "LOST", None, "NEW", "it's"],
        "amount": [10.0, -1.0, 5.0, None, 2_000_000.0, 3.0],
        "email": ["a@b.c", "nope", None, "x@y.z", "p@q.r", "s@t.u"],
        "order": [1, 1, 2, 3, 4, 5],  # a reserved word as a column name
        "discount": [1.0, 0.0, 9.0, None, 0.0, 0.0],
    }
)


def violating_ids(check: dict) -> list[int]:
    sql = violation_query(check, "sales.orders")
    assert sql is not None
    con = sql_sandbox.connect(ROWS, "sales", "orders")
    result = sql_sandbox.run(con, sql.replace("SELECT *", "SELECT id", 1), limit=None)
    return sorted(result.rows.column("id").to_pylist())


@pytest.mark.parametrize(
    ("check", "ids"),
    [
        ({"kind": "not_null", "columns": ["status"]}, [4]),
        ({"kind": "null_fraction", "columns": ["amount"], "threshold": {"max": 0.1}}, [4]),
        ({"kind": "unique", "columns": ["order"]}, [1, 2]),
        (
            {
                "kind": "accepted_values",
                "columns": ["status"],
                "threshold": {"values": ["NEW", "PAID", "it's"]},
            },
            [3],
        ),
        ({"kind": "range", "columns": ["amount"], "threshold": {"min": 0, "max": 1000000}}, [2, 5]),
        ({"kind": "range", "columns": ["amount"], "threshold": {"min": 0, "max": None}}, [2]),
        ({"kind": "regex", "columns": ["email"], "threshold": {"pattern": "^[^@]+@[^@]+$"}}, [2]),
        (  # row 2: discount 0 > amount -1; row 3: 9 > 5; row 4's NULL discount passes
            {"kind": "expression", "threshold": {"sql": "discount IS NULL OR discount <= amount"}},
            [2, 3],
        ),
    ],
)
def test_each_check_kind_lists_exactly_its_violating_rows(check, ids):
    assert violating_ids(check) == ids


def test_batch_checks_get_the_aggregate_they_judged():
    assert violation_query({"kind": "row_count"}, "sales.orders") == (
        "SELECT count(*) AS row_count FROM sales.orders"
    )
    assert violation_query({"kind": "freshness", "columns": ["ts"]}, "sales.orders") == (
        "SELECT max(ts) AS newest FROM sales.orders"
    )


def test_what_cannot_be_expressed_gets_no_query():
    assert violation_query({"kind": "range", "columns": ["a"], "threshold": None}, "s.t") is None
    assert violation_query({"kind": "custom"}, "s.t") is None
    assert violation_query({"kind": "not_null", "columns": ["a"]}, "s.t; DROP x") is None


def test_identifiers_and_literals_are_quoted_when_they_must_be():
    assert ident("amount") == "amount"
    assert ident("order") == '"order"'
    assert ident('Odd "Name"') == '"Odd ""Name"""'
    assert literal("it's") == "'it''s'"
    assert literal(None) == "NULL" and literal(True) == "TRUE" and literal(1.5) == "1.5"


def test_the_keyword_list_is_the_pinned_duckdbs():
    rows = duckdb.sql(
        "SELECT keyword_name FROM duckdb_keywords() "
        "WHERE keyword_category IN ('reserved', 'type_function')"
    ).fetchall()
    assert {name for (name,) in rows} == KEYWORDS
