"""A multi-table dataset with the real PySpark job (issue 27): while it publishes, a reader
polling main never sees one table's new rows without the other's (both read at the same
commit hash). (A broken foreign key with the real job: tests/spark_jobs/test_dataset_job.py.)"""

from __future__ import annotations

import io
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingestion.nessie import NessieClient
from lakeview.iceberg import open_table
from local.aws.emr_serverless import spark_job
from tests.fixtures.catalog_auth import harness_client
from tests.fixtures.local_stack import drop_dataset_files, wait_for_batch

pytestmark = pytest.mark.slow

DATASET = """tables: [rt.orders, rt.order_items]
checks:
  - {kind: foreign_key, table: rt.order_items, column: order_id,
     references: rt.orders.order_id}
"""


def parquet(columns: dict) -> bytes:
    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


def orders(ids: list[int]) -> bytes:
    return parquet(
        {"order_id": pa.array(ids, pa.int64()), "customer": pa.array([f"c{i}" for i in ids])}
    )


def items(order_ids: list[int]) -> bytes:
    return parquet(
        {
            "order_id": pa.array(order_ids, pa.int64()),
            "sku": pa.array([f"s{n}" for n in range(len(order_ids))]),
        }
    )


class MainReader(threading.Thread):
    """Polls main; at each new commit reads both tables' row counts at that very hash."""

    def __init__(self, nessie: NessieClient, tables: tuple[str, str]):
        super().__init__(daemon=True)
        self.nessie, self.tables = nessie, tables
        self.seen: dict[str, tuple[int, int]] = {}
        self.stop = threading.Event()

    def counts_at(self, commit: str) -> tuple[int, int]:
        found = {c.key: c for c in self.nessie.contents_at("main", commit)}
        return tuple(  # type: ignore[return-value]
            open_table(found[t].metadata_location).scan().to_arrow().num_rows if t in found else 0
            for t in self.tables
        )

    def run(self) -> None:
        while not self.stop.is_set():
            head = self.nessie.main_hash()
            if head not in self.seen:
                self.seen[head] = self.counts_at(head)
            time.sleep(0.05)  # 20 reads a second: the local Nessie shares the cores


def test_readers_of_main_see_every_table_of_a_dataset_at_once(
    make_stack, lake, nessie, tmp_path, slack
):
    (tmp_path / "datasets").mkdir()
    (tmp_path / "datasets" / "orders_with_items.yaml").write_text(DATASET)
    stack = make_stack(job=spark_job(lake), tables_dir=tmp_path, poll_interval_seconds=1)
    client = harness_client(nessie)

    reader = MainReader(client, ("rt.orders", "rt.order_items"))
    reader.start()
    log_before = [c.hash for c in client.commit_log("main")]
    second = drop_dataset_files(
        stack,
        "orders_with_items",
        "day-1",
        {
            "rt.orders": {"o.parquet": orders([1, 2, 3])},
            "rt.order_items": {"i-0.parquet": items([1, 1, 2]), "i-1.parquet": items([3, 3])},
        },
    )
    dataset = wait_for_batch(stack, second, timeout=180)
    time.sleep(0.2)
    reader.stop.set()
    reader.join(30)

    assert dataset.status == "PUBLISHED", stack.describe()
    assert set(reader.seen.values()) == {(0, 0), (3, 5)}, reader.seen  # never half of it
    log_after = [c.hash for c in client.commit_log("main")]
    assert log_after[1:] == log_before  # one commit on main for both tables
