"""A text file's bytes are the file's fault (issue 38): a gzip stream that ends early or
fails its check, and text that is not valid in its declared encoding, reject the ingest
in one run with a reason that says what and where; never `error` retried three times,
never published with the bytes replaced. Real Spark, through the job."""

from __future__ import annotations

import gzip
import json

import pytest

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import write_file

SCHEMA = """schema:
  - {name: order_id, type: bigint}
  - {name: customer, type: string}
  - {name: amount, type: 'decimal(10,2)'}
"""
CSV_ROWS = "order_id,customer,amount\n" + "".join(
    f"{i},customer number {i} of many,{i % 97}.25\n" for i in range(1, 20001)
)
JSONL_ROWS = "".join(
    json.dumps({"order_id": i, "customer": f"customer {i}", "amount": i % 97}) + "\n"
    for i in range(1, 20001)
)


def _rejected(report: dict) -> str:
    assert (report["outcome"], report["reason_code"]) == ("rejected", "unreadable_input"), (
        report["outcome"],
        report["reason_code"],
        report["reason"],
    )
    assert report["snapshot_id"] is None or report["outcome"] == "rejected"
    return report["reason"]


@pytest.mark.parametrize(
    ("name", "rows"),
    [("orders.csv.gz", CSV_ROWS), ("orders.jsonl.gz", JSONL_ROWS)],
    ids=["csv", "jsonl"],
)
def test_a_gzip_cut_in_the_middle_is_rejected_saying_where(ingest_file, name, rows):
    whole = gzip.compress(rows.encode())
    cut = whole[: len(whole) // 2]  # an interrupted upload
    report = ingest_file("damaged.cut", name, cut, config=SCHEMA)

    reason = _rejected(report)
    assert name in reason and "gzip stream ends early" in reason
    assert f"after {len(cut)} bytes" in reason


def test_a_gzip_missing_only_its_trailer_is_rejected(ingest_file):
    whole = gzip.compress(CSV_ROWS.encode())
    report = ingest_file("damaged.trailer", "orders.csv.gz", whole[:-8], config=SCHEMA)

    reason = _rejected(report)
    assert "gzip stream ends early" in reason and "trailer" in reason


def test_a_gzip_whose_check_fails_is_rejected(ingest_file):
    whole = bytearray(gzip.compress(CSV_ROWS.encode()))
    whole[-8] ^= 0xFF  # the CRC-32 of the data no longer matches
    report = ingest_file("damaged.crc", "orders.csv.gz", bytes(whole), config=SCHEMA)

    reason = _rejected(report)
    assert "orders.csv.gz" in reason and "gzip" in reason


@pytest.mark.parametrize(
    ("name", "compress"), [("names.csv", False), ("names.csv.gz", True)], ids=["csv", "csv-gzip"]
)
def test_csv_not_valid_in_its_declared_encoding_is_rejected_naming_the_line(
    ingest_file, name, compress
):
    data = b"order_id,customer,amount\n1,ann,1.00\n2,b\xff\xfeb,2.00\n3,cy,3.00\n"
    report = ingest_file(
        "damaged.encoding",
        name,
        gzip.compress(data) if compress else data,
        config=SCHEMA + "csv: {encoding: utf-8}\n",
    )

    reason = _rejected(report)
    assert name in reason and "utf-8" in reason.lower()
    assert "line 3" in reason and "byte 0xff" in reason


@pytest.mark.parametrize(
    ("name", "compress"),
    [("names.jsonl", False), ("names.jsonl.gz", True)],
    ids=["jsonl", "jsonl-gzip"],
)
def test_json_lines_not_valid_utf8_are_never_published_altered(ingest_file, name, compress):
    data = (
        b'{"order_id": 1, "customer": "ann", "amount": 1}\n'
        b'{"order_id": 2, "customer": "b\xff\xfeb", "amount": 2}\n'
    )
    report = ingest_file(
        "damaged.jsonenc", name, gzip.compress(data) if compress else data, config=SCHEMA
    )

    if report["outcome"] == "rejected":
        assert "line 2" in report["reason"] and "utf-8" in report["reason"].lower()
    else:  # counted as the unparsable row it is, the rest written
        parse = next(c for c in report["checks"] if c["kind"] == "parse_errors")
        assert (report["outcome"], parse["violations"]) == ("failed", 1), report
        assert [s["line"] for s in parse["samples"]] == [2]


def test_a_sound_gzip_csv_is_written(ingest_file):
    report = ingest_file(
        "damaged.sound", "orders.csv.gz", gzip.compress(CSV_ROWS.encode()), config=SCHEMA
    )

    assert (report["outcome"], report["rows_written"]) == ("passed", 20000), report["reason"]


def test_in_a_batch_a_cut_gzip_is_rejected_alone(lake, ingest, tmp_path):
    whole = gzip.compress(CSV_ROWS.encode())
    sources = [
        write_file(tmp_path, "good.csv", b"order_id,customer,amount\n1,ann,1.00\n"),
        write_file(tmp_path, "cut.csv.gz", whole[: len(whole) // 2]),
    ]
    report = run_ingest(lake, ingest("damaged.batch", sources, config=SCHEMA))

    verdicts = {v["uri"].rsplit("/", 1)[-1]: v for v in report["sources"]}
    assert verdicts["cut.csv.gz"]["status"] == "rejected", verdicts
    assert "gzip stream ends early" in verdicts["cut.csv.gz"]["reason"]
    assert (verdicts["good.csv"]["status"], report["rows_written"]) == ("passed", 1), report


# --- a repeated run (its report lost) reuses the branch snapshot: the same verdict -------


def test_a_repeated_run_rejects_bytes_invalid_in_utf8_again(lake, ingest, tmp_path):
    data = b"order_id,customer,amount\n1,ann,1.00\n2,b\xff\xfeb,2.00\n3,cy,3.00\n"
    args = ingest(
        "damaged.again",
        [write_file(tmp_path, "names.csv", data)],
        config=SCHEMA + "csv: {encoding: utf-8}\n",
    )
    first = run_ingest(lake, args)  # its rows are on the branch; say its report was lost

    second = run_ingest(lake, args)

    assert second["reused_snapshot"] or second["snapshot_id"] is None, second
    assert _rejected(second) == _rejected(first)


def test_a_repeated_batch_rejects_its_cut_gzip_alone_again(lake, ingest, tmp_path):
    whole = gzip.compress(CSV_ROWS.encode())
    sources = [
        write_file(tmp_path, "good.csv", b"order_id,customer,amount\n1,ann,1.00\n"),
        write_file(tmp_path, "cut.csv.gz", whole[: len(whole) // 2]),
    ]
    args = ingest("damaged.batchagain", sources, config=SCHEMA)
    first = run_ingest(lake, args)

    second = run_ingest(lake, args)

    assert second["reused_snapshot"], second
    assert (second["outcome"], second["rows_written"]) == (first["outcome"], 1), second
    assert second["sources"] == first["sources"]
