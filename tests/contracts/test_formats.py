"""Which format a source file is read as, and whether its first bytes agree
(contracts/formats.py: one rule for the trigger, `wap ingest` and the job)."""

from __future__ import annotations

import gzip

import pytest

from contracts.formats import (
    CSV,
    JSONL,
    PARQUET,
    SNIFF_BYTES,
    SourceFormat,
    content_problem,
    format_of,
    unsupported_format_text,
)

PARQUET_BYTES = b"PAR1" + b"\x00" * 8 + b"PAR1"


def _gz(data: bytes, compresslevel: int = 9) -> bytes:
    # No timestamp in the header: the same bytes (and test ids) in every worker.
    return gzip.compress(data, compresslevel=compresslevel, mtime=0)


@pytest.mark.parametrize(
    ("name", "configured", "expected"),
    [
        ("a.parquet", None, SourceFormat(PARQUET)),
        ("A.PARQUET", None, SourceFormat(PARQUET)),
        ("a.csv", None, SourceFormat(CSV)),
        ("a.CSV.GZ", None, SourceFormat(CSV, gzip=True)),
        ("a.jsonl", None, SourceFormat(JSONL)),
        ("a.ndjson", None, SourceFormat(JSONL)),
        ("a.jsonl.gz", None, SourceFormat(JSONL, gzip=True)),
        ("a.ndjson.gz", None, SourceFormat(JSONL, gzip=True)),
        # The config wins over the extension, and a .gz name is still decompressed.
        ("a.txt", "csv", SourceFormat(CSV)),
        ("export.dat.gz", "jsonl", SourceFormat(JSONL, gzip=True)),
        ("a.csv", "jsonl", SourceFormat(JSONL)),
        # Parquet compresses its own pages: a .gz name does not make it gzip.
        ("a.parquet.gz", "parquet", SourceFormat(PARQUET, gzip=False)),
    ],
)
def test_format_of_takes_the_config_then_the_extension(name, configured, expected):
    assert format_of(name, configured) == expected


@pytest.mark.parametrize("name", ["a.txt", "a.json", "a.parquet.gz", "a.gz", "csv", "a.csv.zip"])
def test_format_of_is_none_when_neither_says(name):
    assert format_of(name) is None


def test_the_unsupported_text_names_every_extension_and_the_config_key():
    text = unsupported_format_text("a.txt")
    for extension in (
        ".parquet",
        ".csv",
        ".jsonl",
        ".ndjson",
        ".csv.gz",
        ".jsonl.gz",
        ".ndjson.gz",
    ):
        assert extension in text
    assert "'a.txt'" in text and "format:" in text


def _problem(name: str, data: bytes, configured: str | None = None) -> str | None:
    fmt = format_of(name, configured)
    assert fmt is not None
    return content_problem(name, fmt, data[:SNIFF_BYTES], data[-4:], len(data))


@pytest.mark.parametrize(
    ("name", "data", "configured"),
    [
        ("a.parquet", PARQUET_BYTES, None),
        ("a.csv", b"id,amount\n1,2.5\n", None),
        ("a.csv", b"\xef\xbb\xbfid,amount\n1,2.5\n", None),  # Excel's UTF-8 BOM
        ("a.csv", "id,name\n1,Zoë\n".encode("latin-1"), None),
        ("a.csv", b"", None),  # empty: the trigger's own check says so first
        ("a.jsonl", b'{"id": 1}\n{"id": 2}\n', None),
        ("a.jsonl", b'\xef\xbb\xbf  \n{"id": 1}\n', None),
        ("a.csv.gz", _gz(b"id\n1\n"), None),
        ("a.jsonl.gz", _gz(b'{"id": 1}\n'), None),
        ("a.txt", b"id;amount\n1;2\n", "csv"),
    ],
)
def test_matching_bytes_pass(name, data, configured):
    assert _problem(name, data, configured) is None


def test_a_text_file_larger_than_the_sniff_is_judged_by_its_head():
    big = b'{"id": 1}\n' * (SNIFF_BYTES // 5)
    assert _problem("a.jsonl", big) is None
    # A gzip head cut off mid-stream decompresses as far as it goes.
    packed = _gz(bytes(range(32, 127)) * 2000, compresslevel=0)
    assert len(packed) > SNIFF_BYTES
    assert _problem("a.csv.gz", packed) is None


@pytest.mark.parametrize(
    ("name", "data", "fragments"),
    [
        ("a.parquet", b"id,amount\n1,2.5\n", ["not a parquet file", "PAR1", "renamed"]),
        ("a.parquet", b"PAR1PAR1", ["too short"]),
        ("a.parquet", b"PAR1 and then not parquet", ["PAR1"]),
        ("a.csv", PARQUET_BYTES, ["not a csv file", "is a parquet file"]),
        ("a.jsonl", PARQUET_BYTES, ["not a jsonl file", "parquet"]),
        ("a.csv", b"id,amount\n\x00\x01\x02\n", ["not a csv file", "binary", "NUL"]),
        ("a.csv", _gz(b"id\n1\n"), ["gzip-compressed", "a.csv.gz"]),
        ("a.csv.gz", b"id,amount\n1,2\n", ["not a gzip file", "magic"]),
        ("a.csv.gz", b"\x1f\x8bnot deflate at all", ["not a gzip file", "decompress"]),
        ("a.csv.gz", _gz(PARQUET_BYTES), ["is a parquet file"]),
        ("a.jsonl", b'[{"id": 1}, {"id": 2}]', ["JSON array", "one JSON object per line"]),
        ("a.jsonl", b'\xef\xbb\xbf\n  [{"id": 1}]', ["JSON array"]),
        ("a.jsonl.gz", _gz(b'[{"id": 1}]'), ["JSON array"]),
        ("a.jsonl", b"id,amount\n1,2\n", ["not JSON Lines", "one JSON object"]),
    ],
)
def test_bytes_that_do_not_match_the_format_are_refused_with_what_to_do(name, data, fragments):
    problem = _problem(name, data)
    assert problem is not None
    for fragment in fragments:
        assert fragment in problem, problem
    assert name in problem
    # Every refusal says what to do about it.
    assert any(remedy in problem for remedy in REMEDIES), problem


REMEDIES = (
    "upload it again",
    "name it",
    "drop the .gz",
    "one JSON object",
    "export it as text",
    "compress it again",
)
