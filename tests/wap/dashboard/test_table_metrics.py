"""The table page's metric history: main's `<ns>.<table>__audit_metrics` read with
pyiceberg (no JVM), the failed drops' reports from the ledger, and the metrics table never
listed as a data table. The lake is seeded without Spark (tests/fixtures/lake_seed.py:
FAILED_ID is sales.orders' AUDIT_FAILED ingest with a report of BRANCH_ROWS rows)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from contracts.table_config import default_config
from tests.fixtures.lake_seed import BRANCH_ROWS, FAILED_ID, seed_home
from tests.fixtures.metrics_seed import metric, seed_metrics
from wap.dashboard import APP_PATH, source
from wap.dashboard.metric_charts import FAILED, PUBLISHED, metric_charts
from wap.ops.backends import Target
from wap.runtime.embedded_stack import ENV_TABLES_DIR
from wap.runtime.home import ENV_HOME

START = datetime(2026, 11, 10, 6, 0, tzinfo=UTC)
COUNTS = [2.0, 2.0, 3.0, 2.0, 2.0]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = seed_home(tmp_path_factory.mktemp("metrics") / "home").root
    rows = [metric(f"{i:016x}", START + timedelta(days=i), v) for i, v in enumerate(COUNTS)]
    rows += [
        metric("0000000000000004", START + timedelta(days=4), 0.0, metric="null_fraction",
               column="amount"),
        metric("0000000000000004", START + timedelta(days=4), 2.0, scope="file",
               source="s3://wap-source/sales/orders/batch-1.parquet"),
        metric("0000000000000004", START + timedelta(days=4), 0.0, metric="check",
               check_name="amount_range"),
    ]  # fmt: skip
    seed_metrics(root, "sales.orders", rows)
    return root


@pytest.fixture(scope="module")
def target(home) -> Target:
    return Target(home=str(home))


def test_the_table_page_reads_mains_published_metrics_and_the_failed_drops_reports(target):
    page = source.load_table(target, "sales.orders")

    assert page.metrics_error is None
    assert sorted((r["metric"], r["column_name"], r["value"]) for r in page.metric_rows) == sorted(
        [("row_count", None, v) for v in COUNTS] + [("null_fraction", "amount", 0.0)]
    )  # table scope only, no check values
    assert list(page.failed_reports) == [FAILED_ID]  # the other failed ingest has no report

    [chart] = metric_charts(default_config(), page.metric_rows, page.failed_reports)
    assert [r["value"] for r in chart.rows if r["drop"] == PUBLISHED] == COUNTS
    [failed] = [r for r in chart.rows if r["drop"] == FAILED]
    assert (failed["ingest_id"], failed["value"]) == (FAILED_ID, float(len(BRANCH_ROWS)))


def test_a_table_without_a_metrics_table_has_no_metric_rows(target):
    page = source.load_table(target, "sales.customers")
    assert (page.metric_rows, page.metrics_error) == ([], None)


def test_the_metrics_table_is_not_listed_as_a_data_table(target, tmp_path, monkeypatch):
    # A config file named like it (say, written by hand) does not make it a data table.
    (tmp_path / "sales.orders__audit_metrics.yaml").write_text("checks: []\n")
    (tmp_path / "sales.orders.yaml").write_text("checks: []\n")
    monkeypatch.setenv(ENV_TABLES_DIR, str(tmp_path))

    assert source.list_tables(target) == ["sales.customers", "sales.orders"]


MONITORED = """\
checks:
  - {kind: anomaly, name: rows_normal, metric: row_count, min_history: 2}
  - {kind: anomaly, name: amount_nulls, metric: null_fraction, column: amount}
"""


def test_the_table_page_charts_each_monitored_metric_with_its_failed_drops(
    home, tmp_path, monkeypatch
):
    (tmp_path / "sales.orders.yaml").write_text(MONITORED)
    monkeypatch.setenv(ENV_TABLES_DIR, str(tmp_path))
    monkeypatch.setenv(ENV_HOME, str(home))
    app = AppTest.from_file(str(APP_PATH), default_timeout=60)
    app.switch_page("views/table.py")
    app.query_params["name"] = "sales.orders"

    app.run()

    assert not app.exception
    assert "Monitored metrics" in [s.value for s in app.subheader]
    assert [m.value for m in app.markdown if m.value.startswith("**")] == [
        r"**row\_count \(anomaly check rows\_normal\)**",
        r"**null\_fraction\(amount\) \(anomaly check amount\_nulls\)**",
    ]
    charts = [_chart_data(e.proto) for e in app.main if getattr(e, "type", "") == "vega_lite_chart"]
    layered = [c for c in charts if "layer" in c[0]]  # the first is rows on main
    assert [c[0]["layer"][0]["encoding"]["x"]["title"] for c in layered] == ["recorded (UTC)"] * 2
    row_count_points = max(layered[0][1], key=len)  # every drop, published and failed
    assert sorted((p["drop"], p["value"]) for p in row_count_points) == sorted(
        [("published", v) for v in COUNTS] + [("failed", float(len(BRANCH_ROWS)))]
    )
    [failed] = [p for p in row_count_points if p["drop"] == "failed"]
    assert failed["ingest_id"] == FAILED_ID


def _chart_data(proto) -> tuple[dict, list[list[dict]]]:
    """A chart's Vega-Lite spec and its datasets' rows (Arrow IPC in the proto)."""
    spec = json.loads(proto.spec)
    return spec, [pa.ipc.open_stream(d.data.data).read_all().to_pylist() for d in proto.datasets]
