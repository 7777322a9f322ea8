"""`wap query` reads a table's metrics table (`<ns>.<table>__audit_metrics`) like any
table: qualified or bare, joined with its data table. The lake is seeded without Spark
(tests/fixtures/lake_seed.py, tests/fixtures/metrics_seed.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.fixtures.lake_seed import MAIN_ROWS, PUBLISHED_ID, seed_home
from tests.fixtures.metrics_seed import metric, seed_metrics
from tests.fixtures.wap_cli import run_wap

START = datetime(2026, 11, 20, 6, 0, tzinfo=UTC)
EARLIER = "0000000000000001"


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = seed_home(tmp_path_factory.mktemp("query_metrics") / "home").root
    seed_metrics(
        root,
        "sales.orders",
        [
            metric(EARLIER, START, 5.0),
            metric(PUBLISHED_ID, START + timedelta(days=1), float(len(MAIN_ROWS))),
            metric(PUBLISHED_ID, START + timedelta(days=1), 0.0, metric="null_fraction",
                   column="amount"),
            metric(PUBLISHED_ID, START + timedelta(days=1), 0.0, metric="check",
                   check_name="amount_range"),
        ],
    )  # fmt: skip
    return root


def query(home, sql: str) -> list[dict]:
    result = run_wap("--home", str(home), "query", "main", sql, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_metrics_table_is_queried_like_any_table(home):
    rows = query(
        home,
        "SELECT ingest_id, recorded_at, metric, value FROM sales.orders__audit_metrics "
        "WHERE scope = 'table' AND metric = 'row_count' ORDER BY recorded_at",
    )
    assert [(r["ingest_id"], r["value"]) for r in rows] == [
        (EARLIER, 5.0),
        (PUBLISHED_ID, float(len(MAIN_ROWS))),
    ]
    assert rows[0]["recorded_at"].startswith("2026-11-20")


def test_its_bare_name_and_a_join_with_its_data_table(home):
    rows = query(
        home,
        "SELECT m.metric, m.value, (SELECT count(*) FROM orders) AS rows_now "
        "FROM orders__audit_metrics m WHERE m.ingest_id = '" + PUBLISHED_ID + "' "
        "AND m.metric <> 'check' ORDER BY m.metric",
    )
    assert rows == [
        {"metric": "null_fraction", "value": 0.0, "rows_now": len(MAIN_ROWS)},
        {"metric": "row_count", "value": float(len(MAIN_ROWS)), "rows_now": len(MAIN_ROWS)},
    ]
