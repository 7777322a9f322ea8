"""`wap query`: SQL over a table as of a failed branch, an ingest or main (DuckDB, no JVM).

The home is seeded without Spark (tests/lake_seed.py): main holds 2 orders and a customers
table; the failed ingest's open branch adds 3 orders, two with negative amounts. Expected
values come from those seeded rows, not from the code under test.
"""

from __future__ import annotations

import json
import shlex

import pytest

from tests.cli.conftest import assert_one_line_error, run_wap
from tests.lake_seed import (
    BRANCH,
    BRANCH_ROWS,
    DISCARDED_ID,
    FAILED_ID,
    MAIN_ROWS,
    NAME_COLUMN,
    PUBLISHED_ID,
    seed_home,
)

NEGATIVE = sorted((r["order_id"], r["amount"]) for r in BRANCH_ROWS if r["amount"] < 0)


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return seed_home(tmp_path_factory.mktemp("query") / "home").root


def wap(home, *args: str):
    return run_wap("--home", str(home), *args)


def as_json(result) -> list[dict]:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_failed_branch_holds_mains_rows_and_its_own(home):
    rows = as_json(
        wap(home, "query", BRANCH, "SELECT order_id, amount FROM sales.orders ORDER BY 1", "--json")
    )
    everything = MAIN_ROWS + BRANCH_ROWS
    assert [(r["order_id"], r["amount"]) for r in rows] == [
        (r["order_id"], r["amount"]) for r in everything
    ]


def test_main_does_not_see_the_branch(home):
    rows = as_json(
        wap(
            home,
            "query",
            "main",
            "SELECT count(*) AS n FROM orders",
            "-t",
            "sales.orders",
            "--json",
        )
    )
    assert rows == [{"n": len(MAIN_ROWS)}]


def test_an_ingest_id_reads_its_open_branch(home):
    result = wap(home, "query", FAILED_ID, "SELECT order_id, amount FROM orders WHERE amount < 0")
    assert result.exit_code == 0, result.output
    assert f"sales.orders on {BRANCH} (ingest {FAILED_ID})" in result.stdout
    for order_id, amount in NEGATIVE:
        line = next(ln for ln in result.stdout.splitlines() if f" {order_id} " in ln)
        assert str(amount) in line
    assert f"{len(NEGATIVE)} row(s)" in result.stdout


def test_a_published_ingest_reads_main_as_of_its_snapshot(home):
    rows = as_json(wap(home, "query", PUBLISHED_ID, "SELECT count(*) AS n FROM orders", "--json"))
    assert rows == [{"n": len(MAIN_ROWS)}]


def test_a_discarded_ingest_has_nothing_to_query(home):
    assert_one_line_error(wap(home, "query", DISCARDED_ID, "SELECT 1"), "DISCARDED", "query main")


def test_a_quoted_column_name(home):
    rows = as_json(
        wap(
            home,
            "query",
            BRANCH,
            f'SELECT "{NAME_COLUMN}" AS who FROM sales.orders WHERE order_id IN (4, 5) ORDER BY 1',
            "--json",
        )
    )
    expected = sorted(r[NAME_COLUMN] for r in BRANCH_ROWS if r["order_id"] in (4, 5))
    assert [r["who"] for r in rows] == expected


def test_bad_sql_is_one_line_and_exit_1(home):
    result = wap(home, "query", BRANCH, "SELEC order_id FROM orders")
    assert result.exit_code == 1
    assert_one_line_error(result, "SQL error", "SELEC")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["SELECT 1", "--table", "sales.nope"], ["no table sales.nope on", "sales.orders"]),
        (["SELECT * FROM sales.nope"], ["no table sales.nope on", "sales.orders"]),
        (["SELECT 1", "--table", "Sales;drop"], ["invalid table name"]),
    ],
)
def test_a_table_that_is_not_on_the_ref(home, args, fragments):
    result = wap(home, "query", BRANCH, *args)
    assert result.exit_code == 1
    assert_one_line_error(result, *fragments)


def test_several_tables_on_main_need_no_choice(home):
    # The SQL names the tables it reads (tests/cli/test_query_tables.py).
    assert as_json(wap(home, "query", "main", "SELECT 1 AS one", "--json")) == [{"one": 1}]
    # `orders` alone is the one table of that name.
    assert as_json(wap(home, "query", BRANCH, "SELECT count(*) AS n FROM orders", "--json")) == [
        {"n": len(MAIN_ROWS) + len(BRANCH_ROWS)}
    ]


@pytest.mark.parametrize("target", ["no_such_branch", "../../etc", "0123456789abcdef"])
def test_unknown_targets_are_one_line(home, target):
    assert_one_line_error(wap(home, "query", target, "SELECT 1"))


@pytest.mark.parametrize(
    "sql",
    [
        "CREATE TABLE stolen AS SELECT * FROM orders",
        "INSERT INTO orders VALUES (9, 9.0, 'x')",
        "DELETE FROM orders",
        "SELECT 1; DROP VIEW orders",
        "SET enable_external_access = true",
        "ATTACH '{dir}/other.db'",
        "INSTALL httpfs",
        "LOAD httpfs",
        "PRAGMA database_list",
        "COPY (SELECT * FROM orders) TO '{dir}/leak.csv'",
        "SELECT * FROM read_csv('{dir}/secret.csv')",
        "SELECT * FROM read_text('{dir}/secret.csv')",
        "SELECT * FROM '{dir}/secret.csv'",
        "SELECT * FROM glob('{dir}/*')",
    ],
)
def test_writes_and_local_files_are_refused(home, tmp_path, sql):
    (tmp_path / "secret.csv").write_text("password\nhunter2\n")
    result = wap(home, "query", BRANCH, sql.format(dir=tmp_path))
    assert_one_line_error(result)
    assert "hunter2" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["secret.csv"]


def test_rows_are_limited_by_default_and_csv_is_for_scripts(home):
    result = wap(
        home, "query", BRANCH, "SELECT order_id FROM orders ORDER BY 1", "--limit", "2", "--csv"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["order_id", "1", "2"]
    assert "first 2 rows" in result.stderr


def test_show_links_the_branch_and_suggests_a_query_per_failed_check(home):
    result = wap(home, "show", FAILED_ID)
    assert result.exit_code == 0, result.output
    assert f"http://127.0.0.1:19120/tree/{BRANCH}" in result.stdout
    assert f"http://127.0.0.1:19120/content/{BRANCH}/sales/orders" in result.stdout
    [line] = [ln for ln in result.stdout.splitlines() if ln.strip().startswith("amount_range:")]
    command = shlex.split(line.split(":", 1)[1])
    assert command[:5] == ["wap", "--home", str(home), "query", BRANCH]
    rows = as_json(wap(home, *command[3:], "--json"))
    assert sorted((r["order_id"], r["amount"]) for r in rows) == NEGATIVE


def test_the_links_follow_the_configured_port(home):
    result = run_wap("--home", str(home), "show", BRANCH, env={"WAP_CATALOG_PORT": "19555"})
    assert f"http://127.0.0.1:19555/tree/{BRANCH}" in result.stdout
    assert_one_line_error(
        run_wap("--home", str(home), "show", BRANCH, env={"WAP_CATALOG_PORT": "http"}),
        "WAP_CATALOG_PORT",
    )
