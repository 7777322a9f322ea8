"""Issue 40: each quarantined row's position in its source file (`_wap_source_row`)."""

from __future__ import annotations

import gzip

import pyarrow as pa
import pyarrow.parquet as pq

from spark_jobs.wap_job import run_ingest
from tests.fixtures.spark_files import read_on_ref, write_file

CONFIG = """
quarantine: {max_rows: 10}
checks:
  - {kind: range, name: amount_range, column: amount, min: 0, on_fail: quarantine}
"""


def test_a_parquet_row_set_aside_carries_its_index_in_its_file(lake, nessie, ingest, tmp_path):
    # 12 rows in row groups of 5: the index counts across row groups, from 0.
    amounts = [1.0, 2.0, -1.0, 4.0, 5.0, 6.0, -7.0, 8.0, 9.0, 10.0, 11.0, -12.0]
    rows = pa.table({"order_id": pa.array(range(12), pa.int64()), "amount": amounts})
    path = tmp_path / "o.parquet"
    pq.write_table(rows, path, row_group_size=5)
    args = ingest("sales.qposp", [path.as_uri()], CONFIG)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    quarantine = read_on_ref(lake, nessie, args.branch, "sales.qposp__quarantine").collect()
    assert {row.order_id: row._wap_source_row for row in quarantine} == {2: 2, 6: 6, 11: 11}


TEXT_CONFIG = CONFIG.replace(
    "checks:",
    "schema:\n  - {name: order_id, type: bigint}\n  - {name: amount, type: double}\nchecks:",
)


def _positions(lake, nessie, branch: str, table: str) -> dict[tuple[str, int], tuple]:
    rows = read_on_ref(lake, nessie, branch, f"{table}__quarantine").collect()
    return {
        (row._wap_source_file.rsplit("/", 1)[-1], row.order_id): (
            row._wap_source_row,
            row._wap_source_line,
        )
        for row in rows
    }


def test_a_text_row_set_aside_carries_its_row_and_line(lake, nessie, ingest, tmp_path):
    # CSV (the header is line 1), gzip'd CSV and JSON Lines in one drop, the first pass
    # read in splits of a few bytes: the positions are still each row's in its file.
    csv_text = "order_id,amount\n1,1.5\n2,-4\n3,2.0\n4,5\n5,-1\n"
    jsonl_text = '{"order_id": 11, "amount": -1}\n{"order_id": 12, "amount": 1}\n' * 2
    sources = [
        write_file(tmp_path, "o.csv", csv_text),
        write_file(tmp_path, "o.csv.gz", gzip.compress(csv_text.encode())),
        write_file(tmp_path, "o.jsonl", jsonl_text.replace("11", "13", 1).replace("12", "14", 1)),
    ]
    args = ingest("sales.qposc", sources, TEXT_CONFIG)
    split_bytes = lake.conf.get("spark.sql.files.maxPartitionBytes")
    lake.conf.set("spark.sql.files.maxPartitionBytes", "16")
    try:
        report = run_ingest(lake, args)
    finally:
        lake.conf.set("spark.sql.files.maxPartitionBytes", split_bytes)

    assert report["outcome"] == "passed", report["reason"]
    assert _positions(lake, nessie, args.branch, "sales.qposc") == {
        ("o.csv", 2): (1, 3),
        ("o.csv", 5): (4, 6),
        ("o.csv.gz", 2): (1, 3),
        ("o.csv.gz", 5): (4, 6),
        ("o.jsonl", 13): (0, 1),
        ("o.jsonl", 11): (2, 3),
    }
