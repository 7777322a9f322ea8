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


def test_a_batch_of_500_files_names_each_rows_file_and_line_in_one_lookup(spark, tmp_path):
    # batching's most files per run: a CASE WHEN per file nested 500 deep overflowed the
    # JVM's stack planning the table's write (the kept rows are shaped inside it).
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from spark_jobs.hadoop_fs import path_key
    from spark_jobs.quarantine import Split
    from spark_jobs.schema_policy import SchemaPlan
    from spark_jobs.text_sources import data_schema
    from spark_jobs.writer import CatalogTable
    from tests.fixtures.spark_files import write_parquet

    source = write_parquet(tmp_path / "a.parquet", {"id": [1, 2], "amount": [1.0, -2.0]})
    frame = spark.read.parquet(source)
    files = {f"/in/{n}.parquet": f"s3://in/{n}.parquet" for n in range(499)}
    split = Split(
        table=CatalogTable("lake", "x", "t__quarantine"),
        ingest_id="i",
        checks=[("amount_range", F.col("amount") < 0)],
        origins={**files, path_key(source): "s3://in/a.parquet"},
        lines={**dict.fromkeys(files, 1), path_key(source): 2},
    )
    split.capture = True
    target = data_schema(frame)
    flagged = split.flag(frame, SchemaPlan(target=target).projection(target))

    split.published(flagged, Observation("many"), target).write.format("noop").mode(
        "overwrite"
    ).save()
    [row] = split.quarantined(flagged, target).collect()

    assert (row["_wap_source_file"], row["_wap_source_row"], row["_wap_source_line"]) == (
        "s3://in/a.parquet",
        1,
        3,
    )
