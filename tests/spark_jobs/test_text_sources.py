"""CSV and JSON Lines sources through the real job (issue 26): typed by the declared or
the table's schema, every row that does not parse counted, kept with its file, line and
text, and failing `parse_errors` (default: none allowed) before anything reaches main."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_parquet

ORDERS = """schema:
  - {name: order_id, type: bigint}
  - {name: customer, type: string}
  - {name: amount, type: 'decimal(10,2)'}
  - {name: ordered_at, type: timestamp}
  - {name: paid, type: boolean}
"""
CLEAN = (
    "order_id,customer,amount,ordered_at,paid\n"
    "1,ann,10.50,2026-11-01 10:00:00,true\n"
    "2,bob,3.00,2026-11-02 11:30:00,false\n"
    "3,cy,7.25,2026-11-03 09:15:00,true\n"
)


def _write(tmp_path, name: str, data: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path.as_uri()


def _parse_check(report: dict) -> dict:
    return next(c for c in report["checks"] if c["kind"] == "parse_errors")


def _rows(lake, nessie, args, table: str) -> list[tuple]:
    frame = read_on_ref(lake, nessie, args.branch, table)
    return sorted(tuple(row) for row in frame.select("order_id", "customer", "amount").collect())


@pytest.mark.parametrize(
    ("name", "data", "options"),
    [
        ("orders.csv", CLEAN, ""),
        ("semicolon.csv", CLEAN.replace(",", ";"), "csv: {delimiter: ';'}\n"),
        ("bom.csv", b"\xef\xbb\xbf" + CLEAN.encode(), ""),
        ("orders.csv.gz", gzip.compress(CLEAN.encode()), ""),
        (
            "latin1.csv",
            CLEAN.replace("ann", "andr\xe9").encode("latin-1"),
            "csv: {encoding: latin-1}\n",
        ),
        ("no_header.csv", CLEAN.split("\n", 1)[1], "csv: {header: false}\n"),
    ],
    ids=["header", "semicolon", "bom", "gzip", "latin-1", "no-header"],
)
def test_a_clean_csv_is_written_with_the_declared_types(
    lake, nessie, ingest, tmp_path, name, data, options
):
    args = ingest("text.clean", [_write(tmp_path, name, data)], config=ORDERS + options)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert report["rows_written"] == 3
    assert _parse_check(report)["violations"] == 0
    assert report["table_schema"][:3] == [
        {"name": "order_id", "type": "bigint"},
        {"name": "customer", "type": "string"},
        {"name": "amount", "type": "decimal(10,2)"},
    ]
    rows = _rows(lake, nessie, args, "text.clean")
    assert rows[0][0] == 1 and str(rows[0][2]) == "10.50"
    assert rows[0][1] in ("ann", "andr\xe9")


def test_quoted_values_may_hold_delimiters_quotes_and_line_breaks(lake, nessie, ingest, tmp_path):
    data = (
        "order_id,customer,amount,ordered_at,paid\n"
        '1,"Smith, ""Ann""\nsecond line",1.00,2026-11-01 10:00:00,true\n'
        "2,bob,2.00,2026-11-01 10:00:00,false\n"
    )
    args = ingest("text.quoted", [_write(tmp_path, "q.csv", data)], config=ORDERS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert _rows(lake, nessie, args, "text.quoted")[0][1] == 'Smith, "Ann"\nsecond line'


def test_three_malformed_lines_fail_parse_errors_naming_each_line(
    lake, nessie, nessie_api, ingest, tmp_path
):
    data = (
        "order_id,customer,amount,ordered_at,paid\n"  # line 1
        "1,ann,10.50,2026-11-01 10:00:00,true\n"  # 2
        "2,bob\n"  # 3: too few fields
        "3,cy,7.25,2026-11-03 09:15:00,true\n"  # 4
        "x4,dee,1.00,2026-11-03 09:15:00,true\n"  # 5: not a bigint
        "5,eve,1.00,2026-11-03 09:15:00,maybe\n"  # 6: not a boolean
        "6,fay,2.00,2026-11-03 09:15:00,false\n"
    )  # 7
    before = nessie_api.ref("main")["hash"]
    args = ingest("text.ragged", [_write(tmp_path, "ragged.csv", data)], config=ORDERS)

    report = run_ingest(lake, args)

    assert report["outcome"] == "failed"
    check = _parse_check(report)
    assert check["status"] == "failed" and check["violations"] == 3
    assert [s["line"] for s in check["samples"]] == [3, 5, 6]
    assert check["samples"][0]["text"] == "2,bob"
    assert check["samples"][0]["file"].endswith("ragged.csv")
    assert "parse_errors" in report["reason"]
    assert report["rows_written"] == 3  # the parsed rows, on the branch only
    assert nessie_api.ref("main")["hash"] == before


def test_parse_errors_within_the_configured_max_pass(lake, ingest, tmp_path):
    data = CLEAN + "7,gus,not-a-number,2026-11-01 10:00:00,true\n"
    config = ORDERS + "checks:\n  - {kind: parse_errors, max: 1}\n"
    args = ingest("text.tolerated", [_write(tmp_path, "one_bad.csv", data)], config=config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    assert _parse_check(report)["violations"] == 1
    assert _parse_check(report)["samples"][0]["line"] == 5
    assert report["rows_written"] == 3


def test_a_header_only_csv_is_handled_like_an_empty_parquet_file(lake, ingest, tmp_path):
    config = ORDERS + "checks:\n  - {kind: row_count, min: 1}\n"
    empty = ingest(
        "text.empty", [_write(tmp_path, "h.csv", CLEAN.split("\n")[0] + "\n")], config=config
    )
    report = run_ingest(lake, empty)
    no_rows = pa.table({"order_id": pa.array([], pa.int64())})
    parquet = ingest(
        "text.empty_parquet", [write_parquet(tmp_path / "e.parquet", no_rows)], config=config
    )
    expected = run_ingest(lake, parquet)

    assert report["rows_written"] == expected["rows_written"] == 0
    assert report["outcome"] == expected["outcome"] == "failed"
    assert {c["name"]: c["status"] for c in report["checks"]}["row_count"] == "failed"


def test_json_lines_map_nested_objects_to_a_struct_column(lake, nessie, ingest, tmp_path):
    config = """schema:
  - {name: order_id, type: bigint}
  - {name: customer, type: 'struct<name: string, tier: int>'}
  - {name: amount, type: double}
"""
    lines = [
        {"order_id": 1, "customer": {"name": "ann", "tier": 2}, "amount": 1.5},
        {"order_id": 2, "customer": {"name": "bob", "tier": 1}, "amount": 2.5},
    ]
    text = "\n".join(json.dumps(line) for line in lines) + "\n\n"
    args = ingest("text.nested", [_write(tmp_path, "orders.jsonl", text)], config=config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    frame = read_on_ref(lake, nessie, args.branch, "text.nested")
    assert sorted(r["customer"]["tier"] for r in frame.collect()) == [1, 2]


def test_bad_json_lines_are_counted_with_their_line(lake, ingest, tmp_path):
    config = "schema:\n  - {name: order_id, type: bigint}\n  - {name: amount, type: double}\n"
    text = (
        '{"order_id": 1, "amount": 1.0}\n'
        '{"order_id": "two", "amount": 2.0}\n'  # 2: not a bigint
        '{"order_id": 3, "amount": 3.0\n'  # 3: invalid JSON
        '{"order_id": 4, "amout": 4.0}\n'  # 4: a key the schema lacks
        '{"order_id": 5, "amount": 5.0}\n'
    )
    report = run_ingest(
        lake,
        ingest(
            "text.badjson",
            [_write(tmp_path, "b.jsonl.gz", gzip.compress(text.encode()))],
            config=config,
        ),
    )

    check = _parse_check(report)
    assert report["outcome"] == "failed"
    assert [s["line"] for s in check["samples"]] == [2, 3, 4]
    assert report["rows_written"] == 2


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("array.jsonl", '[{"order_id": 1}, {"order_id": 2}]\n', "one JSON object per line"),
        ("renamed.csv", None, "is a parquet file"),
        ("binary.csv", b"order_id\n\x00\x01\x02\x03", "binary"),
        ("fake.csv.gz", CLEAN, "not a gzip file"),
    ],
    ids=["json-array", "parquet-named-csv", "binary-csv", "not-gzip"],
)
def test_a_file_whose_bytes_do_not_match_its_format_is_rejected(
    lake, ingest, tmp_path, name, data, expected
):
    if data is None:
        uri = write_parquet(tmp_path / "p.parquet", {"order_id": [1]})
        (tmp_path / name).write_bytes((tmp_path / "p.parquet").read_bytes())
        uri = (tmp_path / name).as_uri()
    else:
        uri = _write(tmp_path, name, data)

    report = run_ingest(lake, ingest("text.mismatch", [uri], config=ORDERS))

    assert report["outcome"] == "rejected"
    assert expected in report["reason"]


def test_text_into_a_table_without_a_schema_is_refused_saying_how_to_declare_one(
    lake, ingest, tmp_path
):
    report = run_ingest(lake, ingest("text.undeclared", [_write(tmp_path, "o.csv", CLEAN)]))

    assert report["outcome"] == "rejected"
    assert "schema:" in report["reason"] and "nothing is inferred" in report["reason"]


def test_a_header_naming_an_unknown_column_is_rejected_naming_it(lake, ingest, tmp_path):
    data = CLEAN.replace("customer", "cust0mer")
    report = run_ingest(
        lake, ingest("text.unknown", [_write(tmp_path, "o.csv", data)], config=ORDERS)
    )

    assert report["outcome"] == "rejected"
    assert "'cust0mer'" in report["reason"]


def test_a_burst_of_parquet_and_csv_files_judges_each_file(
    lake, nessie, nessie_api, ingest, tmp_path
):
    seed = ingest("text.burst", [_write(tmp_path, "seed.csv", CLEAN)], config=ORDERS)
    assert run_ingest(lake, seed)["outcome"] == "passed"
    nessie_api.merge(seed.branch)
    bad = CLEAN.replace("3,cy,7.25", "3,cy,seven")
    sources = [
        write_parquet(tmp_path / "p.parquet", {"order_id": [10, 11], "customer": ["x", "y"]}),
        _write(
            tmp_path,
            "good.csv",
            CLEAN.replace("1,ann", "21,ann").replace("2,bob", "22,bob").replace("3,cy", "23,cy"),
        ),
        _write(tmp_path, "bad.csv", bad),
    ]
    args = ingest("text.burst", sources, config=ORDERS)

    report = run_ingest(lake, args)

    verdicts = {v["uri"].rsplit("/", 1)[-1]: v for v in report["sources"]}
    assert verdicts["p.parquet"]["status"] == "passed"
    assert verdicts["good.csv"]["status"] == "passed"
    assert verdicts["bad.csv"]["status"] == "failed"
    assert verdicts["bad.csv"]["failed_checks"] == ["parse_errors"]
    assert _parse_check(report)["samples"][0]["file"].endswith("bad.csv")


def test_timestamps_dates_and_nulls_follow_the_parse_and_csv_options(
    lake, nessie, ingest, tmp_path
):
    config = """schema:
  - {name: order_id, type: bigint}
  - {name: ordered_at, type: timestamp}
  - {name: shipped_on, type: date}
  - {name: note, type: string}
csv: {null_value: NA}
parse: {timestamp_format: 'dd/MM/yyyy HH:mm', date_format: 'dd.MM.yyyy', time_zone: '+02:00'}
"""
    data = "order_id,ordered_at,shipped_on,note\n1,25/11/2026 10:30,26.11.2026,NA\n"
    args = ingest("text.formats", [_write(tmp_path, "f.csv", data)], config=config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    row = (
        read_on_ref(lake, nessie, args.branch, "text.formats")
        .selectExpr(
            "unix_timestamp(ordered_at) AS epoch", "CAST(shipped_on AS STRING) AS day", "note"
        )
        .first()
    )
    at = dt.datetime(2026, 11, 25, 8, 30, tzinfo=dt.UTC)  # 10:30 at +02:00
    assert (row["epoch"], row["day"], row["note"]) == (at.timestamp(), "2026-11-26", None)


def test_a_pattern_spark_cannot_use_is_a_config_error(lake, ingest, tmp_path):
    for bad in ("{timestamp_format: 'yyyy-MM-dd bb'}", "{time_zone: Mars/Olympus}"):
        config = ORDERS + f"parse: {bad}\n"
        report = run_ingest(
            lake, ingest("text.badpattern", [_write(tmp_path, "o.csv", CLEAN)], config=config)
        )

        assert report["outcome"] == "rejected"
        assert report["reason_code"] == "config_error", report["reason"]
        assert "parse: " in report["reason"]


def test_a_clean_csv_is_written_once_and_a_dirty_one_leaves_no_stray_files(
    lake, nessie, ingest, tmp_path, monkeypatch
):
    """Clean CSV is written without Spark's corrupt-record bookkeeping (FAILFAST, ~12% of
    the write's CPU: docs/benchmarks.md); a row that does not parse aborts that write,
    which leaves no data file behind, and the counting write follows."""
    import spark_jobs.writer as writer

    writes = []
    real = writer._write

    def spy(spark, ref, frame, *rest):
        writes.append("counting" if "__wap_parse_error" in frame.columns else "strict")
        return real(spark, ref, frame, *rest)

    monkeypatch.setattr(writer, "_write", spy)
    import spark_jobs.text_sources as text_sources

    headers = []
    read_header = text_sources._header
    monkeypatch.setattr(
        text_sources,
        "_header",
        lambda spark, uri, *rest: headers.append(uri) or read_header(spark, uri, *rest),
    )
    clean = ingest("text.once", [_write(tmp_path, "clean.csv", CLEAN)], config=ORDERS)
    assert run_ingest(lake, clean)["outcome"] == "passed"
    assert writes == ["strict"]
    assert len(headers) == 1  # planned, then written: its header read once

    writes.clear()
    dirty = ingest("text.twice", [_write(tmp_path, "dirty.csv", CLEAN + "9,zed\n")], config=ORDERS)
    report = run_ingest(lake, dirty)

    assert writes == ["strict", "counting"]
    assert _parse_check(report)["violations"] == 1 and report["rows_written"] == 3
    # Every data file of the table on disk holds rows of the committed write only.
    warehouse = Path(urlparse(lake.conf.get("spark.sql.catalog.lake.warehouse")).path)
    files = [
        p
        for p in warehouse.glob("text/twice*/data/**/*.parquet")
        if "__audit_metrics" not in str(p)  # the audit's metrics table beside it
    ]
    assert files and sum(pq.read_metadata(p).num_rows for p in files) == 3
