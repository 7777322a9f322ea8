"""Hostile ledger text renders as literal text, secrets never show (AppTest, no browser, no Spark).

The home is written by hand (`write_ledger_items`, as `wap` persists it), so the whole
path runs: restore into moto, `list_runs`, shaping, the page.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.fixtures.home_ingests import store_ingest
from tests.fixtures.ledger_items import DISCARDED_BY_ALICE, ORDERS_RUN, ledger_item
from wap.dashboard import APP_PATH
from wap.runtime.home import ENV_HOME, WapHome
from wap.runtime.state_store import write_ledger_items

SECRET = "xoxb-1111-2222-topsecret"
HOSTILE = f"<img src=x onerror=alert(1)> **boom** [click](javascript:alert(2)) token={SECRET}"
REJECTED_ID, PUBLISHED_ID = "0a0a0a0a0a0a0a0a", "0b0b0b0b0b0b0b0b"


@pytest.fixture
def hostile_home(tmp_path):
    home = WapHome(tmp_path / "wap-home").create()
    items = [
        ledger_item(
            REJECTED_ID,
            **ORDERS_RUN,
            status="REJECTED",
            error=HOSTILE,
            source_uri="s3://wap-source/sales/orders/<b>x<i>.parquet",
        ),
        ledger_item(
            PUBLISHED_ID,
            table="sales.orders",
            status="PUBLISHED",
            created_at="2026-11-22T09:00:00Z",
            finished_at="2026-11-22T09:01:00Z",
        ),
    ]
    write_ledger_items(home, items)
    return home.root


def _app(home, monkeypatch) -> AppTest:
    monkeypatch.setenv(ENV_HOME, str(home))
    return AppTest.from_file(str(APP_PATH), default_timeout=60)


def _all_text(app: AppTest) -> str:
    kinds = ("markdown", "caption", "error", "warning", "info", "title", "subheader", "code")
    return "\n".join(str(e.value) for kind in kinds for e in getattr(app, kind))


def test_overview_escapes_ledger_text_and_masks_secrets(hostile_home, monkeypatch):
    app = _app(hostile_home, monkeypatch).run()

    assert not app.exception
    assert [m.value for m in app.metric] == ["1", "0", "1", "0", "0", "0"]
    [reason] = [c.value for c in app.caption if "onerror" in c.value]
    assert reason == (
        r"\<img src=x onerror=alert\(1\)\> \*\*boom\*\* "
        r"\[click\]\(javascript\:alert\(2\)\) token=\*\*\*"
    )
    assert SECRET not in _all_text(app)
    [link] = app.get("page_link")
    assert r"\<b\>x\<i\>\.parquet" in link.proto.label


def test_ingest_page_escapes_and_masks_too(hostile_home, monkeypatch):
    app = _app(hostile_home, monkeypatch).run()
    app.switch_page("views/ingest.py")
    app.query_params["id"] = REJECTED_ID
    app.run()

    assert not app.exception
    assert "REJECTED" in app.error[0].value
    assert r"\<img src=x onerror=alert\(1\)\>" in app.error[0].value
    assert SECRET not in _all_text(app)
    assert any(f"wap --home {hostile_home} discard {REJECTED_ID}" in c.value for c in app.code)
    assert not any("publish" in c.value for c in app.code)  # only AUDIT_FAILED is publishable


def test_ingest_page_without_id_offers_a_choice(hostile_home, monkeypatch):
    app = _app(hostile_home, monkeypatch).run()
    app.switch_page("views/ingest.py")
    app.run()

    assert not app.exception
    assert app.selectbox[0].options[0].startswith(REJECTED_ID)  # newest first


def _failed_batch_home(
    root, batch: str, part: str, batch_fields: dict, part_fields: dict
) -> WapHome:
    """A home whose ledger holds one all-or-nothing batch that failed its audit, with its
    one member `part`."""
    home = WapHome(root / "wap-home").create()
    stamps = {"created_at": "2026-11-22T10:00:00Z", "finished_at": "2026-11-22T10:01:00Z"}
    common = {"status": "AUDIT_FAILED", **stamps}
    write_ledger_items(
        home,
        [
            ledger_item(
                batch, kind="batch", members=[part], all_or_nothing=True, **batch_fields, **common
            ),
            ledger_item(part, batch_id=batch, **part_fields, **common),
        ],
    )
    return home


def test_a_failed_dataset_shows_its_batch_and_its_parts_point_at_it(tmp_path, monkeypatch):
    batch, part = "0c0c0c0c0c0c0c0c", "0d0d0d0d0d0d0d0d"
    home = _failed_batch_home(
        tmp_path,
        batch,
        part,
        {
            "table": "ds.orders",
            "dataset": "ds/orders/run-1/",
            "branch": "wap_ds_orders_x",
            "error": "1 of 1 files failed",
        },
        {
            "table": "ds.orders",
            "dataset": "ds/orders/run-1/",
            "source_uri": "s3://wap-source/ds/orders/run-1/part-0.parquet",
        },
    )
    app = _app(home.root, monkeypatch).run()

    assert not app.exception
    assert "Batches" in [s.value for s in app.subheader]
    assert any(batch in frame.value.to_csv() for frame in app.dataframe)

    app.switch_page("views/ingest.py")
    app.query_params["id"] = part
    app.run()
    assert not app.exception
    assert [c.value for c in app.code] == [f"wap --home {home.root} show {batch}"]


def _ingest_page(home, monkeypatch, ingest_id: str) -> AppTest:
    app = _app(home, monkeypatch).run()
    app.switch_page("views/ingest.py")
    app.query_params["id"] = ingest_id
    return app.run()


def test_a_schema_rejected_ingest_shows_what_was_refused_not_a_match(tmp_path, monkeypatch):
    home = WapHome(tmp_path / "wap-home").create()
    iid = "0e0e0e0e0e0e0e0e"
    refused = "schema policy 'strict' rejects the file: new column discount (double)"
    report = {
        "report_version": 1,
        "ingest_id": iid,
        "table": "sales.orders",
        "branch": "wap_sales_orders_x",
        "outcome": "rejected",
        "rows_written": 0,
        "schema_changes": [],
        "checks": [],
        "reason": refused,
        "reason_code": "schema_policy",
    }
    store_ingest(
        home,
        iid,
        report,
        **ORDERS_RUN,
        status="REJECTED",
        error=refused,
        reason_code="schema_policy",
    )

    app = _ingest_page(home.root, monkeypatch, iid)

    assert not app.exception
    text = _all_text(app)
    assert "matched the table's schema" not in text
    assert any(
        "Refused by the table's schema policy" in c.value and "discount" in c.value
        for c in app.caption
    )


def test_a_rejected_ingest_without_a_report_claims_no_schema_match(hostile_home, monkeypatch):
    app = _ingest_page(hostile_home, monkeypatch, REJECTED_ID)

    assert not app.exception
    assert "matched the table's schema" not in _all_text(app)


def test_a_discarded_ingest_still_says_why_it_failed_and_who_discarded_it(tmp_path, monkeypatch):
    home = WapHome(tmp_path / "wap-home").create()
    iid = "0f0f0f0f0f0f0f0f"
    write_ledger_items(
        home,
        [
            ledger_item(
                iid,
                **ORDERS_RUN,
                **DISCARDED_BY_ALICE,
                branch="wap_sales_orders_f",
                branch_deleted_at="2026-11-22T11:00:00Z",
            )
        ],
    )

    app = _ingest_page(home.root, monkeypatch, iid)

    assert not app.exception
    text = _all_text(app)
    assert "DISCARDED" in text
    assert r"amount\_range \(failed, 3 violation\(s\)\)" in text  # escaped Markdown
    assert "AUDIT\\_FAILED" in text
    assert "discarded by alice\\: wrong export" in text


def test_the_table_page_shows_files_reclaimable_bytes_and_the_last_compaction(
    tmp_path, monkeypatch
):
    """The latest garbage collection's summary (where `wap gc` and the stack's maintenance
    run keep it) and a compaction run in the ledger."""
    home = WapHome(tmp_path / "wap-home").create()
    iid = "0c0c0c0c0c0c0c0c"
    write_ledger_items(
        home,
        [
            ledger_item(
                iid,
                **ORDERS_RUN,
                status="AUDIT_FAILED",
                source_uri="maintenance:compaction",
                error="compaction changed the table's content: row count 10 != 9",
            )
        ],
    )
    summary = home.objects / "wap-artifacts" / "reports" / "maintenance" / "gc-latest.json"
    summary.parent.mkdir(parents=True)
    summary.write_text(
        json.dumps(
            {
                "summary_version": 1,
                "collected_at": "2026-11-22T03:00:00+00:00",
                "deleted": False,
                "reclaimable_bytes": 3 * 1024 * 1024,
                "tables": {
                    "sales.orders": {
                        "data_files": 12,
                        "data_bytes": 12 * 2048,
                        "average_file_bytes": 2048,
                        "reclaimable_files": 5,
                        "reclaimable_bytes": 3 * 1024 * 1024,
                        "deleted_bytes": 0,
                    }
                },
            }
        )
    )
    app = _app(home.root, monkeypatch)
    app.switch_page("views/table.py")
    app.query_params["name"] = "sales.orders"

    app.run()

    assert not app.exception
    shown = {m.label: m.value for m in app.metric}
    assert shown["data files on main"] == "12"
    assert shown["average file size"] == "2.0 KiB"
    assert shown["reclaimable (last GC)"] == "3.0 MiB"
    assert shown["last compaction"] == "AUDIT_FAILED"
    assert r"garbage collected 2026\-11\-22 03\:00 UTC" in _all_text(app)  # escaped Markdown


def test_a_multi_table_dataset_is_one_run_naming_every_table(tmp_path, monkeypatch):
    batch, part = "0f0f0f0f0f0f0f0f", "1a1a1a1a1a1a1a1a"
    home = _failed_batch_home(
        tmp_path,
        batch,
        part,
        {
            "table": "shop.order_items",
            "tables": ["shop.order_items", "shop.orders"],
            "dataset_name": "shop",
            "branch": "wap_dataset_shop_x",
            "error": "order_items_order_id_foreign_key failed",
        },
        {
            "table": "shop.orders",
            "source_uri": "s3://wap-source/_datasets/shop/d1/orders/o.parquet",
        },
    )
    app = _app(home.root, monkeypatch).run()
    assert not app.exception
    frames = [frame.value.to_csv() for frame in app.dataframe]
    assert any("shop.order_items, shop.orders" in frame for frame in frames), _all_text(app)

    page = _ingest_page(home.root, monkeypatch, batch)
    assert not page.exception
    assert "Rows per table (2 tables, published together)" in [s.value for s in page.subheader]
    tables = "\n".join(str(t.value) for t in page.table).replace("\\", "")  # md-escaped
    assert "shop.order_items" in tables and "shop.orders" in tables


def test_the_overview_shows_freshness_per_table_late_first(hostile_home, tmp_path, monkeypatch):
    """Issue 42: tables whose config expects drops, late ones first, with the alert's line;
    the REJECTED drop after sales.orders' last publish does not count."""
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "sales.orders.yaml").write_text("expect: {every: 1d}\n")
    (tables / "sales.customers.yaml").write_text("expect: {every: 1d}\n")
    monkeypatch.setenv("WAP_TABLES_DIR", str(tables))

    app = _app(hostile_home, monkeypatch).run()

    assert not app.exception
    assert "Freshness" in [s.value for s in app.subheader]
    [frame] = [d.value for d in app.dataframe if "arrival" in d.value.columns]
    assert list(frame["table"]) == ["sales.customers", "sales.orders"]
    assert list(frame["arrival"]) == ["LATE", "LATE"]
    assert list(frame["last published"]) == ["never", "2026-11-22T09:01:00Z"]
    errors = [e.value.replace("\\", "") for e in app.error]  # markdown-escaped
    assert any("sales.orders: nothing published since 2026-11-22 09:01" in e for e in errors)
