"""A failed anomaly check explains itself on the ingest page: the measured value, the band
and where it came from, in the checks table's `message` column (AppTest, no Spark)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.fixtures.home_ingests import store_ingest
from tests.fixtures.ledger_items import ORDERS_RUN
from tests.fixtures.metrics_seed import anomaly_entry, failed_drop_report
from wap.dashboard import APP_PATH
from wap.runtime.home import ENV_HOME, WapHome

IID = "0a1b2c3d4e5f6a7b"
EXPLAINED = "row_count 500; expected 9,700 to 10,300 from the last 10 published drops"


def test_the_checks_table_shows_an_anomaly_checks_message(tmp_path, monkeypatch):
    home = WapHome(tmp_path / "wap-home").create()
    key = f"reports/sales.orders/{IID}/attempt-1/report.json"
    report = failed_drop_report(IID, [anomaly_entry(500)])
    store_ingest(
        home,
        IID,
        report,
        key,
        **ORDERS_RUN,
        status="AUDIT_FAILED",
        error=report["reason"],
    )
    monkeypatch.setenv(ENV_HOME, str(home.root))
    app = AppTest.from_file(str(APP_PATH), default_timeout=60).run()
    app.switch_page("views/ingest.py")
    app.query_params["id"] = IID

    app.run()

    assert not app.exception
    [checks] = [t.value for t in app.table if "check" in t.value.columns]
    # st.table renders Markdown, so each cell is escaped: compare the words.
    [row] = [{k: v.replace("\\", "") for k, v in r.items()} for r in checks.to_dict("records")]
    assert (row["check"], row["kind"], row["observed"]) == ("row_count_anomaly", "anomaly", "500")
    assert row["message"] == EXPLAINED
