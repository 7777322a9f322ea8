"""The file `wap replay` writes, per format: the table's columns only, an unparsed text
row as its raw text."""

from __future__ import annotations

import io
import json
from datetime import datetime
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from contracts.table_config import CsvOptions
from wap.ops.replay import file_bytes, replay_name

ROWS = pa.table(
    {
        "id": pa.array([1, None], pa.int64()),
        "amount": pa.array([Decimal("-1.50"), None], pa.decimal128(10, 2)),
        "at": [datetime(2026, 11, 25, 10, 0), None],
        "_wap_failed_checks": [["amount_range"], ["parse_errors"]],
        "_wap_source_file": ["s3://b/k/o.jsonl", "s3://b/k/o.jsonl"],
        "_wap_raw_text": [None, '{"id": "x"'],
        "_wap_source_row": pa.array([None, None], pa.int64()),
    }
)


def test_parquet_keeps_the_tables_columns_and_types():
    written = pq.read_table(io.BytesIO(file_bytes(ROWS.slice(0, 1), "parquet", CsvOptions())))
    assert written.column_names == ["id", "amount", "at"]
    assert written.schema.field("amount").type == pa.decimal128(10, 2)
    assert written.to_pylist()[0]["amount"] == Decimal("-1.50")


def test_json_lines_write_the_unparsed_row_as_it_came():
    lines = file_bytes(ROWS, "jsonl", CsvOptions()).decode().splitlines()
    assert json.loads(lines[0]) == {"id": 1, "amount": -1.5, "at": "2026-11-25T10:00:00"}
    assert lines[1] == '{"id": "x"'


def test_csv_uses_the_tables_dialect():
    text = file_bytes(ROWS, "csv", CsvOptions(delimiter="|", null_value="NA")).decode()
    assert text.splitlines() == ["id|amount|at", "1|-1.50|2026-11-25 10:00:00", '{"id": "x"']


def test_the_name_carries_table_ingest_and_check():
    assert replay_name("s.orders", "a" * 16, "amount_range", "csv") == (
        f"orders__replay_{'a' * 16}_amount_range.csv"
    )
