"""A failed anomaly check explains itself on the ingest page: the measured value, the band
and where it came from, in the checks table's `message` column (AppTest, no Spark)."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from wap.dashboard import APP_PATH
from wap.runtime.home import ENV_HOME, WapHome
from wap.runtime.state_store import write_ledger_items

IID = "0a1b2c3d4e5f6a7b"
EXPLAINED = "row_count 500; expected 9,700 to 10,300 from the last 10 published drops"


def test_the_checks_table_shows_an_anomaly_checks_message(tmp_path, monkeypatch):
    home = WapHome(tmp_path / "wap-home").create()
    key = f"reports/sales.orders/{IID}/attempt-1/report.json"
    report = {
        "report_version": 1,
        "ingest_id": IID,
        "table": "sales.orders",
        "branch": "wap_sales_orders_a",
        "outcome": "failed",
        "rows_written": 500,
        "reason": "1 error-severity check(s) did not pass: row_count_anomaly",
        "checks": [
            {
                "name": "row_count_anomaly",
                "kind": "anomaly",
                "severity": "error",
                "status": "failed",
                "violations": 1,
                "observed": 500,
                "threshold": {
                    "low": 9_700.0,
                    "high": 10_300.0,
                    "centre": 10_000.0,
                    "method": "mean_std",
                    "drops": 10,
                    "seasonality": None,
                },
                "settled_by": "metrics",
                "message": EXPLAINED,
            }
        ],
    }
    path = home.objects / "wap-artifacts" / key
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(report))
    write_ledger_items(
        home,
        [
            {
                "pk": f"ingest#{IID}",
                "kind": "ingest",
                "ingest_id": IID,
                "table": "sales.orders",
                "status": "AUDIT_FAILED",
                "error": report["reason"],
                "report_uri": f"s3://wap-artifacts/{key}",
                "created_at": "2026-11-22T10:00:00Z",
                "finished_at": "2026-11-22T10:01:00Z",
            }
        ],
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
