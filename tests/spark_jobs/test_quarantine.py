"""Quarantine per check (issue 40) through the real job: rows failing a check with
`on_fail: quarantine` go to `<table>__quarantine` on the ingest's branch with the checks
they failed, every other row to the table, each row on exactly one side; one merge
publishes both; above the table's gate nothing is published."""

from __future__ import annotations

import uuid
from dataclasses import replace

import pyarrow as pa

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_file, write_parquet

# 20 orders: 3 negative amounts (one of them also with an unknown status), one unknown
# status alone, and rows where the predicates are NULL (amount, status, discount null).
ORDERS = pa.table(
    {
        "order_id": pa.array(range(1, 21), pa.int64()),
        "status": ["NEW", "PAID"] * 7 + ["NEW", "LOST", None, "NEW", "PAID", "NEW"],
        "amount": [float(i) for i in range(1, 15)] + [-1.0, -2.0, None, 4.0, 5.0, -3.0],
        "discount": [0.0] * 16 + [None, None, 1.0, 0.0],
    }
)
# Rows 15, 16, 20: negative, so also below their discount; row 16 also LOST; row 17:
# every value NULL but the id; row 18: discount NULL, so `amount >= discount` is NULL
# (not a failure, as the audit counts it): both published.
RANGE, STATUS, DISCOUNT = "amount_range", "known_status", "discount_le_amount"
BAD = {15: [RANGE, DISCOUNT], 16: [RANGE, STATUS, DISCOUNT], 20: [RANGE, DISCOUNT]}
CONFIG = """
quarantine: {max_fraction: 0.5, max_rows: 10}
checks:
  - {kind: range, name: amount_range, column: amount, min: 0, on_fail: quarantine}
  - kind: accepted_values
    name: known_status
    column: status
    values: [NEW, PAID]
    on_fail: quarantine
  - {kind: expression, name: discount_le_amount, sql: "amount >= discount", on_fail: quarantine}
  - {kind: row_count, min: 1, max: 17}
"""


def _check(report: dict, name: str) -> dict:
    return next(check for check in report["checks"] if check["name"] == name)


def _ids(lake, nessie, ref: str, table: str) -> list[int]:
    frame = read_on_ref(lake, nessie, ref, table)
    return sorted(row.order_id for row in frame.select("order_id").collect())


def test_bad_rows_are_set_aside_and_the_good_ones_published_in_one_merge(
    lake, nessie, nessie_api, ingest, tmp_path, monkeypatch
):
    from spark_jobs.quarantine import Split

    def read_again(*_args):
        raise AssertionError("a small parquet drop's failing rows are kept by its write")

    monkeypatch.setattr(Split, "quarantined", read_again)  # not read a second time
    args = ingest("sales.qorders", [write_parquet(tmp_path / "o.parquet", ORDERS)], CONFIG)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert (report["rows_written"], report["quarantined_rows"]) == (17, 3)
    # Every row on exactly one side, the NULL-valued predicates included (rows 17, 18).
    published = _ids(lake, nessie, args.branch, "sales.qorders")
    quarantine = read_on_ref(lake, nessie, args.branch, "sales.qorders__quarantine").collect()
    assert published == [i for i in range(1, 21) if i not in BAD]
    assert {row.order_id: row._wap_failed_checks for row in quarantine} == BAD
    assert {row._wap_ingest_id for row in quarantine} == {args.ingest_id}
    assert all(row._wap_source_file.endswith("/o.parquet") for row in quarantine)
    assert all(row._wap_quarantined_at is not None for row in quarantine)
    range_check = _check(report, "amount_range")
    assert (range_check["status"], range_check["severity"], range_check["violations"]) == (
        "failed",
        "warn",
        3,
    )
    assert sorted(s["order_id"] for s in range_check["samples"]) == sorted(BAD)
    assert _check(report, "known_status")["violations"] == 1
    assert [s["status"] for s in _check(report, "known_status")["samples"]] == ["LOST"]
    assert _check(report, "discount_le_amount")["violations"] == 3
    # A table-level check judges only the rows that are published (17 of 20).
    assert _check(report, "row_count")["status"] == "passed"
    assert _check(report, "quarantine_gate")["status"] == "passed"

    nessie_api.merge(args.branch)  # the one merge the pipeline makes publishes both tables
    keys = nessie_api.table_keys("main")
    assert {"sales.qorders", "sales.qorders__quarantine"} <= keys
    assert _ids(lake, nessie, "main", "sales.qorders") == published
    assert _ids(lake, nessie, "main", "sales.qorders__quarantine") == sorted(BAD)


def test_over_the_gate_nothing_is_published(lake, nessie_api, ingest, tmp_path):
    config = CONFIG.replace("max_fraction: 0.5, max_rows: 10", "max_rows: 2")
    args = ingest("sales.qgate", [write_parquet(tmp_path / "o.parquet", ORDERS)], config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "failed"
    assert "quarantine_gate" in report["reason"]
    gate = _check(report, "quarantine_gate")
    assert (gate["status"], gate["violations"], gate["observed"]) == (
        "failed",
        3,
        {"rows": 3, "fraction": 0.15},
    )
    assert "sales.qgate" not in nessie_api.table_keys("main")


def test_a_csv_row_that_does_not_parse_is_quarantined_with_its_raw_line(
    lake, nessie, ingest, tmp_path
):
    config = """
schema:
  - {name: order_id, type: bigint}
  - {name: amount, type: double}
quarantine: {max_rows: 5}
checks:
  - {kind: parse_errors, on_fail: quarantine}
  - {kind: range, column: amount, min: 0, on_fail: quarantine}
"""
    text = "order_id,amount\n1,1.5\n2,not-a-number\n3,-4\n4,2.0\n"
    args = ingest("sales.qcsv", [write_file(tmp_path, "o.csv", text)], config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert (report["rows_written"], report["quarantined_rows"]) == (2, 2)
    assert _ids(lake, nessie, args.branch, "sales.qcsv") == [1, 4]
    rows = read_on_ref(lake, nessie, args.branch, "sales.qcsv__quarantine").collect()
    by_checks = {tuple(row._wap_failed_checks): row for row in rows}
    assert set(by_checks) == {("parse_errors",), ("amount_range",)}
    assert by_checks[("parse_errors",)]._wap_raw_text == "2,not-a-number"
    assert by_checks[("amount_range",)].order_id == 3
    assert by_checks[("amount_range",)]._wap_raw_text is None
    parse = _check(report, "parse_errors")
    assert (parse["status"], parse["severity"], parse["violations"]) == ("failed", "warn", 1)


def test_warn_publishes_the_failing_rows_and_records_the_failure(
    lake, nessie_api, ingest, tmp_path
):
    config = (
        "checks:\n  - {kind: range, name: amount_range, column: amount, min: 0, on_fail: warn}\n"
    )
    args = ingest("sales.qwarn", [write_parquet(tmp_path / "o.parquet", ORDERS)], config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert (report["rows_written"], report["quarantined_rows"]) == (20, 0)
    check = _check(report, "amount_range")
    assert (check["status"], check["severity"], check["violations"]) == ("failed", "warn", 3)
    # No quarantine table without a quarantine check.
    assert "sales.qwarn__quarantine" not in nessie_api.table_keys(args.branch)
    assert "sales.qwarn" in nessie_api.table_keys(args.branch)


def test_a_rerun_counts_the_rows_its_first_run_set_aside_and_adds_none(
    lake, nessie, ingest, tmp_path
):
    args = ingest("sales.qrerun", [write_parquet(tmp_path / "o.parquet", ORDERS)], CONFIG)
    first = run_ingest(lake, args)

    again = run_ingest(lake, args)  # a retried job run on the same branch

    assert again["reused_snapshot"] and again["outcome"] == "passed", again["reason"]
    assert (again["rows_written"], again["quarantined_rows"]) == (17, 3)
    assert _check(again, "amount_range")["violations"] == 3
    # Its samples too, read back from the quarantine table: `wap show` and the alert.
    assert _check(again, "amount_range")["samples"] == _check(first, "amount_range")["samples"]
    assert len(_check(again, "known_status")["samples"]) == 1
    assert first["quarantined_rows"] == 3
    assert _ids(lake, nessie, args.branch, "sales.qrerun__quarantine") == sorted(BAD)


def test_the_quarantine_table_gains_the_columns_its_table_gains(
    lake, nessie, nessie_api, ingest, tmp_path
):
    first = ingest("sales.qevolve", [write_parquet(tmp_path / "a.parquet", ORDERS)], CONFIG)
    assert run_ingest(lake, first)["outcome"] == "passed"
    nessie_api.merge(first.branch)
    wider = ORDERS.append_column("channel", pa.array(["web"] * 20))
    second = ingest("sales.qevolve", [write_parquet(tmp_path / "b.parquet", wider)], CONFIG)

    report = run_ingest(lake, second)

    assert report["outcome"] == "passed", report["reason"]
    rows = read_on_ref(lake, nessie, second.branch, "sales.qevolve__quarantine").collect()
    assert "channel" in rows[0].asDict()
    assert sorted((r._wap_ingest_id, r.order_id, r.channel) for r in rows) == sorted(
        [(first.ingest_id, i, None) for i in BAD] + [(second.ingest_id, i, "web") for i in BAD]
    )


def test_a_dataset_counts_the_rows_each_table_set_aside(lake, nessie, ingest, tmp_path):
    ns = f"qds{uuid.uuid4().hex[:6]}"
    configs = tmp_path / "configs"
    (configs / "datasets").mkdir(parents=True)
    (configs / "datasets" / "shop.yaml").write_text(
        f"tables: [{ns}.orders, {ns}.order_items]\n"
        "checks:\n"
        f"  - {{kind: foreign_key, table: {ns}.order_items, column: order_id,\n"
        f"     references: {ns}.orders.order_id}}\n"
    )
    (configs / f"{ns}.order_items.yaml").write_text(
        "quarantine: {max_rows: 5}\n"
        "checks:\n  - {kind: not_null, column: sku, on_fail: quarantine}\n"
    )
    orders = write_parquet(tmp_path / "orders.parquet", {"order_id": [1, 2]})
    items = write_parquet(
        tmp_path / "items.parquet", {"order_id": [1, 2, 2], "sku": ["a", None, "c"]}
    )
    args = replace(
        ingest(f"{ns}.order_items", [orders, items]),
        table_config_uri=configs.as_uri() + "/",
        dataset_config_uri=(configs / "datasets" / "shop.yaml").as_uri(),
        source_tables=(f"{ns}.orders", f"{ns}.order_items"),
        all_or_nothing=True,
    )

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["quarantined_rows"] == 1
    assert _ids(lake, nessie, args.branch, f"{ns}.order_items__quarantine") == [2]
    # Each table's entry counts its own (lineage outputs each quarantine table so).
    assert {t["table"]: t["quarantined_rows"] for t in report["tables"]} == {
        f"{ns}.orders": 0,
        f"{ns}.order_items": 1,
    }


def test_a_batch_publishes_every_file_whose_bad_rows_were_set_aside(lake, nessie, ingest, tmp_path):
    clean = write_parquet(tmp_path / "0-clean.parquet", ORDERS.slice(0, 10))
    dirty = write_parquet(tmp_path / "1-dirty.parquet", ORDERS.slice(10, 10))
    args = ingest("sales.qbatch", [clean, dirty], CONFIG)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert (report["rows_written"], report["quarantined_rows"]) == (17, 3)
    assert [s["status"] for s in report["sources"]] == ["passed", "passed"]
    # Each file's verdict counts its own rows set aside (its record's count), and its
    # rows are those published.
    assert [(s["rows"], s["quarantined_rows"]) for s in report["sources"]] == [(10, 0), (7, 3)]
    quarantine = read_on_ref(lake, nessie, args.branch, "sales.qbatch__quarantine").collect()
    assert {row.order_id: row._wap_source_file.rsplit("/", 1)[-1] for row in quarantine} == {
        i: "1-dirty.parquet" for i in BAD
    }


def test_a_drop_too_large_to_keep_its_failing_rows_reads_them_again(
    lake, nessie, ingest, tmp_path, monkeypatch
):
    # Above CAPTURE_MAX_BYTES the write does not keep the failing rows: a second read of
    # the sources finds them, with the same result.
    monkeypatch.setattr("spark_jobs.wap_job.CAPTURE_MAX_BYTES", -1)
    args = ingest("sales.qreread", [write_parquet(tmp_path / "o.parquet", ORDERS)], CONFIG)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert (report["rows_written"], report["quarantined_rows"]) == (17, 3)
    quarantine = read_on_ref(lake, nessie, args.branch, "sales.qreread__quarantine").collect()
    assert {row.order_id: row._wap_failed_checks for row in quarantine} == BAD
    assert _check(report, "known_status")["violations"] == 1
