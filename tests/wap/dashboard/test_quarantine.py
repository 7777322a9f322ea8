"""A drop published with rows quarantined (issue 40) on the dashboard: the run lists count
them, the ingest page says so and shows a sample of them with their checks, and the table
page names its quarantine table (AppTest, no browser, no Spark)."""

from __future__ import annotations

from dataclasses import replace

from streamlit.testing.v1 import AppTest

from tests.fixtures.home_ingests import store_ingest
from tests.fixtures.quarantine import QUARANTINE_CHECK
from tests.fixtures.run_rows import run_row
from wap.dashboard import APP_PATH, shaping
from wap.runtime.home import ENV_HOME, WapHome

IID = "0c0c0c0c0c0c0c0c"
REPORT = {
    "report_version": 1,
    "ingest_id": IID,
    "table": "sales.orders",
    "branch": "wap_sales_orders_q",
    "outcome": "passed",
    "rows_written": 97,
    "quarantined_rows": 3,
    "checks": [QUARANTINE_CHECK],
}
RUN = run_row(
    IID, source="s3://src/sales/orders/a.csv", when="2026-11-27T09:00:00Z", rows_written=97
)


def test_the_run_list_counts_quarantined_rows_only_when_a_run_set_some_aside():
    clean = replace(RUN, ingest_id="1" * 16)

    assert "quarantined" not in shaping.run_rows([clean])[0]
    rows = shaping.run_rows([replace(RUN, quarantined_rows=3), clean])
    assert [row["quarantined"] for row in rows] == [3, 0]


def test_a_quarantine_checks_samples_are_titled_as_quarantined_rows():
    [(title, rows)] = shaping.sample_tables(REPORT)

    assert title == "Quarantined rows (set aside, not published): amount_range"
    assert rows == [{"order_id": "17", "amount": "-4.5"}]


def _home(tmp_path):
    home = WapHome(tmp_path / "wap-home").create()
    store_ingest(
        home,
        IID,
        REPORT,
        table="sales.orders",
        status="PUBLISHED",
        rows_written=97,
        quarantined_rows=3,
        created_at="2026-11-27T09:00:00Z",
        finished_at="2026-11-27T09:01:00Z",
    )
    return home.root


def test_the_ingest_page_warns_of_quarantined_rows_and_shows_a_sample(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_HOME, str(_home(tmp_path)))
    app = AppTest.from_file(str(APP_PATH), default_timeout=60).run()
    app.switch_page("views/ingest.py")
    app.query_params["id"] = IID
    app.run()

    assert not app.exception
    # Markdown is escaped on the page: compare the words.
    [warning] = [w.value.replace("\\", "") for w in app.warning]
    assert "PUBLISHED" in warning and "3 rows quarantined" in warning
    assert "sales.orders__quarantine" in warning
    assert any(m.label == "quarantined" and m.value == "3" for m in app.metric)
    subheaders = [s.value.replace("\\", "") for s in app.subheader]
    assert "Quarantined rows (set aside, not published): amount_range" in subheaders


def test_the_table_page_names_its_quarantine_table_beside_it(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_HOME, str(_home(tmp_path)))
    app = AppTest.from_file(str(APP_PATH), default_timeout=60).run()
    app.switch_page("views/table.py")
    app.query_params["name"] = "sales.orders"
    app.run()

    assert not app.exception
    text = "\n".join(c.value.replace("\\", "") for c in [*app.caption, *app.markdown])
    assert "Quarantine table: sales.orders__quarantine" in text
    assert "3 rows set aside by 1 ingest" in text


def test_the_overviews_run_list_has_the_quarantined_count(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_HOME, str(_home(tmp_path)))
    app = AppTest.from_file(str(APP_PATH), default_timeout=60).run()

    assert not app.exception
    runs = [frame.value for frame in app.dataframe if "quarantined" in frame.value.columns]
    assert [list(frame["quarantined"]) for frame in runs] == [[3]]
