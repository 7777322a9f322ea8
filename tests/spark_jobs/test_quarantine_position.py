"""Issue 40: each quarantined row's position in its source file (`_wap_source_row`)."""

from __future__ import annotations

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


def test_a_csv_row_set_aside_has_no_row_index(lake, nessie, ingest, tmp_path):
    # Spark's text readers do not know a row's line (a split starts mid-file); the line
    # of a row that did not parse is in the report's parse_errors samples.
    config = CONFIG.replace(
        "checks:",
        "schema:\n  - {name: order_id, type: bigint}\n  - {name: amount, type: double}\nchecks:",
    )
    text = "order_id,amount\n1,1.5\n2,-4\n3,2.0\n"
    args = ingest("sales.qposc", [write_file(tmp_path, "o.csv", text)], config)

    report = run_ingest(lake, args)

    assert report["outcome"] == "passed", report["reason"]
    [row] = read_on_ref(lake, nessie, args.branch, "sales.qposc__quarantine").collect()
    assert (row.order_id, row._wap_source_row) == (2, None)
