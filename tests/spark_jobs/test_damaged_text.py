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


# --- a quoted value never closed takes in every line after it: the file's fault -----

READINGS = """schema:
  - {name: reading_id, type: bigint}
  - {name: sensor, type: string}
  - {name: value, type: double}
  - {name: note, type: string}
"""


def _readings(count: int, bad: int | None = None) -> str:
    notes = {bad: '"oops'}  # an opening quote, never closed
    rows = "".join(f"{i},s{i},{i}.5,{notes.get(i, 'ok')}\n" for i in range(1, count + 1))
    return "reading_id,sensor,value,note\n" + rows


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('a,b\n1,"x\n2,y\n', 2),  # last column, rest of the file taken in
        ('a,b\n1,"x,y\n', 2),  # on the last line, nothing after it
        ('a,b\n1,ok\n"2,y\n3,z', 3),
        ('a,b\r\n1,"ok ""quoted"" and\r\nbroken",x\r\n2,"oops\r\n3,z\r\n', 4),
    ],
)
def test_a_quote_never_closed_is_found_at_its_line(text, line):
    from contracts.table_config import CsvOptions
    from spark_jobs.text_sources import unclosed_quote_line

    whole = unclosed_quote_line([text], CsvOptions())
    by_char = unclosed_quote_line(list(text), CsvOptions())  # any chunking

    assert whole == by_char == line


@pytest.mark.parametrize(
    ("text", "options"),
    [
        ('a,b\n1,"Smith, ""Ann""\nsecond line"\n2,""\n3,""""\n', {}),
        ('a,b\n1,5" screen\n2,a"b"c\n', {}),  # a quote inside an unquoted value
        ('a,b\n1,"say \\"hi\\"\nthere"\n', {"escape": "\\"}),
        ("a;b\n1;'it''s\nfine'\n", {"quote": "'", "escape": "'", "delimiter": ";"}),
        ("", {}),
    ],
)
def test_quoted_values_closed_as_rfc_4180_says_are_sound(text, options):
    from contracts.table_config import CsvOptions
    from spark_jobs.text_sources import unclosed_quote_line

    assert unclosed_quote_line([text], CsvOptions(**options)) is None
    assert unclosed_quote_line(list(text), CsvOptions(**options)) is None


def test_a_quote_never_closed_in_the_last_column_rejects_the_file(ingest_file):
    report = ingest_file("damaged.quote", "readings.csv", _readings(40, bad=10), config=READINGS)

    reason = _rejected(report)
    assert reason.startswith("readings.csv: "), reason
    assert "line 11" in reason and "never closed" in reason


def test_in_a_batch_only_the_file_with_a_quote_never_closed_is_rejected(lake, ingest, tmp_path):
    legit = 'reading_id,sensor,value,note\n1,s1,1.5,"two\nlines, ""quoted"""\n2,s2,2.5,ok\n'
    sources = [
        write_file(tmp_path, "good.csv", legit),
        write_file(tmp_path, "bad.csv", _readings(5, bad=2)),
    ]
    report = run_ingest(lake, ingest("damaged.quotebatch", sources, config=READINGS))

    assert report["outcome"] == "rejected", report
    verdicts = {v["uri"].rsplit("/", 1)[-1]: v for v in report["sources"]}
    assert verdicts["bad.csv"]["status"] == "rejected", verdicts
    assert "line 3" in verdicts["bad.csv"]["reason"], verdicts
    assert "good.csv" not in verdicts or verdicts["good.csv"]["status"] != "rejected", verdicts


def test_a_repeated_run_rejects_a_quote_never_closed_again(lake, ingest, tmp_path):
    sources = [write_file(tmp_path, "readings.csv", _readings(5, bad=2))]
    args = ingest("damaged.quoteagain", sources, config=READINGS)
    first = run_ingest(lake, args)  # its rows are on the branch; say its report was lost

    second = run_ingest(lake, args)

    assert second["reused_snapshot"] or second["snapshot_id"] is None, second
    assert _rejected(second) == _rejected(first)
