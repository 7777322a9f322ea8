"""`wap query` reads the tables its SQL names: any tables of the ref, joins included.

The home is seeded without Spark (tests/fixtures/lake_seed.py): main holds sales.orders
(2 rows) and sales.customers (CUSTOMERS, then OUTSIDE_CUSTOMERS from a writer outside
wap); the failed ingest's open branch adds 3 orders. Expected values come from those
seeded rows.
"""

from __future__ import annotations

import json

import pytest

from lakeview import iceberg
from tests.fixtures.lake_seed import (
    BRANCH,
    BRANCH_ROWS,
    CUSTOMERS,
    FAILED_ID,
    MAIN_ROWS,
    NAME_COLUMN,
    OUTSIDE_CUSTOMERS,
    PUBLISHED_ID,
    seed_home,
)
from tests.fixtures.wap_cli import assert_one_line_error, run_wap
from wap.ops import sql_sandbox

TABLES_THERE = "sales.customers, sales.orders"
# main's customers: the seeded ones and the outside writer's (which no branch holds)
MAIN_CUSTOMERS = CUSTOMERS + OUTSIDE_CUSTOMERS
# Every order with the id of the customer of that name, if there is one.
JOIN = (
    f"SELECT o.order_id, c.customer_id FROM sales.orders o LEFT JOIN sales.customers c "
    f'ON c.name = o."{NAME_COLUMN}" ORDER BY o.order_id'
)


def joined(orders: list[dict]) -> list[dict]:
    ids = {c["name"]: c["customer_id"] for c in CUSTOMERS}
    return [
        {"order_id": o["order_id"], "customer_id": ids.get(o[NAME_COLUMN])}
        for o in sorted(orders, key=lambda o: o["order_id"])
    ]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return seed_home(tmp_path_factory.mktemp("query_tables") / "home").root


def wap(home, *args: str):
    return run_wap("--home", str(home), *args)


def as_json(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def opened(monkeypatch) -> list[str]:
    """The metadata locations `wap query` opens, in order."""
    seen: list[str] = []
    real = iceberg.open_table

    def spy(location, properties=None):
        seen.append(location)
        return real(location, properties)

    monkeypatch.setattr(iceberg, "open_table", spy)
    return seen


def test_the_readmes_count_on_a_ref_with_two_tables(home):
    result = wap(home, "query", "main", "SELECT count(*) FROM sales.orders")
    assert result.exit_code == 0, result.output
    assert "sales.orders on main" in result.stdout
    rows = as_json(wap(home, "query", "main", "SELECT count(*) AS n FROM sales.orders", "--json"))
    assert rows == [{"n": len(MAIN_ROWS)}]


def test_a_join_across_two_tables_of_main(home):
    assert joined(MAIN_ROWS) != joined(MAIN_ROWS + BRANCH_ROWS)  # the refs do differ
    assert as_json(wap(home, "query", "main", JOIN, "--json")) == joined(MAIN_ROWS)


@pytest.mark.parametrize("target", [BRANCH, FAILED_ID])
def test_a_join_across_two_tables_of_a_failed_branch(home, target):
    result = wap(home, "query", target, JOIN, "--json")
    assert as_json(result) == joined(MAIN_ROWS + BRANCH_ROWS)
    result = wap(home, "query", target, JOIN)
    assert result.exit_code == 0, result.output
    assert f"sales.customers, sales.orders on {BRANCH}" in result.stdout


def test_a_published_ingest_joins_main_as_of_its_snapshot(home):
    result = wap(home, "query", PUBLISHED_ID, JOIN, "--json")
    assert as_json(result) == joined(MAIN_ROWS)


def test_quoted_and_unqualified_names(home):
    rows = as_json(
        wap(
            home,
            "query",
            "main",
            'SELECT c."name" AS who, (SELECT count(*) FROM "sales"."orders") AS n FROM customers c',
            "--json",
        )
    )
    assert rows == [{"who": c["name"], "n": len(MAIN_ROWS)} for c in MAIN_CUSTOMERS]


def test_only_the_tables_named_are_read(home, opened):
    assert as_json(wap(home, "query", "main", "SELECT count(*) AS n FROM sales.orders", "--json"))
    assert len(opened) == 1
    opened.clear()
    # A CTE is not a table of the ref, and a statement without tables reads none.
    rows = as_json(
        wap(home, "query", "main", "WITH orders AS (SELECT 42 AS x) SELECT x FROM orders", "--json")
    )
    assert rows == [{"x": 42}]
    assert as_json(wap(home, "query", "main", "SELECT 1 AS one", "--json")) == [{"one": 1}]
    assert opened == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM sales.nope",
        "SELECT * FROM sales.orders JOIN sales.nope USING (order_id)",
        "SELECT * FROM nope",
    ],
)
def test_an_unknown_table_in_the_sql_is_one_line(home, sql, opened):
    result = wap(home, "query", BRANCH, sql)
    assert result.exit_code == 1
    assert_one_line_error(result, "nope", f"on {BRANCH}", TABLES_THERE)
    assert opened == []  # refused before any table is read


@pytest.mark.parametrize(
    ("sql", "keyword"),
    [
        ("INSTALL httpfs", "INSTALL"),
        ("FORCE INSTALL httpfs", "FORCE INSTALL"),
        ("LOAD httpfs", "LOAD"),
        ("/* why not */ install httpfs", "INSTALL"),
        ("UPDATE EXTENSIONS", "UPDATE"),
        ("CREATE TABLE stolen AS SELECT * FROM sales.orders", "CREATE"),
        ("WITH x AS (SELECT 1) INSERT INTO sales.orders SELECT * FROM x", "INSERT"),
        ("USE sales", "USE"),
        ("CHECKPOINT", "CHECKPOINT"),
    ],
)
def test_a_refusal_names_the_refused_keyword(home, sql, keyword):
    result = wap(home, "query", "main", sql)
    assert result.exit_code == 1
    assert_one_line_error(result, f"{keyword} is not allowed")


def test_table_is_still_a_shortcut(home, opened):
    rows = as_json(
        wap(
            home,
            "query",
            "main",
            "SELECT name FROM customers",
            "--table",
            "sales.customers",
            "--json",
        )
    )
    assert rows == [{"name": c["name"]} for c in MAIN_CUSTOMERS]
    rows = as_json(
        wap(
            home,
            "query",
            BRANCH,
            "SELECT count(*) AS n FROM orders",
            "-t",
            "sales.orders",
            "--json",
        )
    )
    assert rows == [{"n": len(MAIN_ROWS) + len(BRANCH_ROWS)}]
    assert_one_line_error(
        wap(home, "query", "main", "SELECT 1", "--table", "sales.nope"),
        "no table sales.nope on main",
        TABLES_THERE,
    )


def test_table_names_the_short_name_and_the_sql_may_join_others(home):
    rows = as_json(
        wap(
            home,
            "query",
            BRANCH,
            f"SELECT o.order_id, c.customer_id FROM orders o LEFT JOIN sales.customers c "
            f'ON c.name = o."{NAME_COLUMN}" ORDER BY o.order_id',
            "--table",
            "sales.orders",
            "--json",
        )
    )
    assert rows == joined(MAIN_ROWS + BRANCH_ROWS)


@pytest.mark.parametrize(
    ("sql", "names"),
    [
        (
            "SELECT * FROM sales.orders o JOIN sales.customers c USING (id)",
            ["sales.customers", "sales.orders"],
        ),
        ('SELECT * FROM "Sales"."Orders"', ["sales.orders"]),
        ("WITH orders AS (SELECT 1) SELECT * FROM orders, sales.x", ["sales.x"]),
        (
            "SELECT * FROM a WHERE id IN (SELECT id FROM s.b) UNION SELECT * FROM (FROM s.c)",
            ["a", "s.b", "s.c"],
        ),
        ("DESCRIBE sales.orders", ["sales.orders"]),
        ("SELECT 1", []),
        ("SELECT * FROM read_csv('/etc/passwd')", []),  # a function: the sandbox refuses files
    ],
)
def test_duckdbs_parser_names_the_tables(sql, names):
    assert sorted(str(t) for t in sql_sandbox.referenced_tables(sql)) == names
