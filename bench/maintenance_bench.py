"""Maintenance on a lake the real flow wrote: compaction and garbage collection.

`python -m bench.maintenance_bench [--drops 200 --rows 1000 --failed 50]`; `--quick` for a
smoke run. On one fresh local stack (real handlers, state machine, Spark job, Nessie):

1. `--drops` ingests of `--rows` rows into one table with `batch: {max_files: 1}` (one
   run, one data file each), then `wap maintain` (compaction as WAP): data files on main
   before and after, against the target (the table's bytes / target size + one per
   partition), and a full scan (pyiceberg, median of 3) before against after.
2. `--failed` ingests that fail their audit, their branches discarded, then `wap gc
   --delete` (grace 0, default retention): bytes reclaimed against the bytes those ingests
   wrote, and bytes deleted that a live reference reaches (a mark with a ten-year
   retention, taken before the collection).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.cli import Benchmark, Option
from bench.scratch import local_lake, wait_final
from contracts.lifecycle import Status

BENCHMARK = Benchmark(
    "bench.maintenance_bench",
    "Maintenance: compaction and garbage collection",
    "8 drops, 3 failed (smoke test)",
    {
        "drops": Option(200, 8),
        "rows": Option(1000),
        "failed": Option(50, 3),
        "timeout": Option(3600.0),
    },
)

TABLE = "bench.drops"
CONFIG = """
batch: {max_files: 1}
checks:
  - {kind: range, name: amount_positive, column: amount, min: 0}
"""


def parquet_bytes(first_id: int, rows: int, amount: float) -> bytes:
    table = pa.table(
        {
            "order_id": pa.array(range(first_id, first_id + rows), pa.int64()),
            "amount": pa.array([amount] * rows, pa.float64()),
            "note": pa.array([f"order {i}" for i in range(rows)], pa.string()),
        }
    )
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def drop_all(backend: Any, bodies: list[bytes], prefix: str, timeout: float) -> list[Any]:
    """Upload every file at once; their records once all are final."""
    from wap.ops.operations import upload_for_ingest

    ids = [
        upload_for_ingest(backend, f"bench/drops/{prefix}-{index:05d}.parquet", body)
        for index, body in enumerate(bodies)
    ]
    records = wait_final(backend, ids, timeout, poll=0.5, what=f"the {prefix} drops")
    backend.settle(timeout)
    return records


def main_files(backend: Any) -> tuple[int, int, str]:
    """(data files, their bytes, metadata location) of the table on main."""
    from lakeview.iceberg import open_table

    location = backend.nessie.metadata_location("main", TABLE)
    table = open_table(location)
    tasks = list(table.scan().plan_files())
    return len(tasks), sum(t.file.file_size_in_bytes for t in tasks), location


def scan_seconds(location: str, repeats: int = 3) -> tuple[float, int]:
    """Median seconds of a full scan to Arrow (pyiceberg), and the rows it read."""
    from lakeview.iceberg import open_table, read_rows

    times, rows = [], 0
    for _ in range(repeats):
        started = time.perf_counter()
        rows = read_rows(open_table(location)).num_rows
        times.append(time.perf_counter() - started)
    return statistics.median(times), rows


def warehouse_files(root: Path) -> dict[str, int]:
    from ingestion.maintenance.gc import normalize

    return {normalize(str(p)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def run(drops: int, rows: int, failed: int, timeout: float) -> dict[str, Any]:
    from contracts.table_config import MaintenanceOptions
    from ingestion.maintenance.gc import GcOptions
    from wap.ops import operations as ops
    from wap.ops.compaction import compact_on
    from wap.ops.maintenance import collect_garbage

    out: dict[str, Any] = {"drops": drops, "rows": rows, "failed": failed}
    with local_lake("wap-maintenance-bench-", {TABLE: CONFIG}) as backend:
        warehouse = Path(backend.stack.home.warehouse)
        started = time.perf_counter()
        records = drop_all(
            backend, [parquet_bytes(i * rows, rows, 1.0) for i in range(drops)], "good", timeout
        )
        out["ingest_s"] = time.perf_counter() - started
        out["published"] = sum(r.status == Status.PUBLISHED for r in records)
        files, size, location = main_files(backend)
        out.update(files_before=files, bytes_before=size)
        out["scan_before_s"], out["scan_rows_before"] = scan_seconds(location)
        options = MaintenanceOptions()
        started = time.perf_counter()
        done = compact_on(backend, TABLE, options)
        out["compaction_s"] = time.perf_counter() - started
        out["compaction_status"] = done.status
        files, size, location = main_files(backend)
        out.update(
            files_after=files,
            bytes_after=size,
            target_files=-(-out["bytes_before"] // options.target_file_size) + 1,
        )
        out["scan_after_s"], out["scan_rows_after"] = scan_seconds(location)

        before = warehouse_files(warehouse)
        bad = drop_all(
            backend,
            [parquet_bytes(10**9 + i * rows, rows, -1.0) for i in range(failed)],
            "bad",
            timeout,
        )
        out["audit_failed"] = sum(r.status == Status.AUDIT_FAILED for r in bad)
        written = {p: s for p, s in warehouse_files(warehouse).items() if p not in before}
        out["failed_bytes_written"] = sum(written.values())
        for record in bad:
            ops.discard(backend, record.ingest_id, actor="bench", reason="benchmark")
        live = collect_garbage(
            backend, GcOptions(retention=timedelta(days=3650), grace=timedelta(0))
        )
        reachable = set(warehouse_files(warehouse)) - {f.path for f in live.garbage}
        started = time.perf_counter()
        report = collect_garbage(backend, GcOptions(grace=timedelta(0), delete=True))
        out["gc_s"] = time.perf_counter() - started
        deleted = {f.path: f.size for f in report.garbage}
        out["gc_deleted_bytes"] = sum(deleted.values())
        out["gc_reclaimed_of_failed"] = sum(s for p, s in deleted.items() if p in written)
        out["gc_deleted_reachable_bytes"] = sum(s for p, s in deleted.items() if p in reachable)
        out["gc_missing_after"] = len(
            collect_garbage(
                backend, GcOptions(retention=timedelta(days=3650), grace=timedelta(0))
            ).missing
        )
        return out


def render(m: dict[str, Any]) -> str:
    """The markdown tables of one run."""
    mib = 1024 * 1024
    return "\n".join(
        [
            f"{m['drops']} ingests of {m['rows']:,} rows (`max_files: 1`), then `wap maintain` "
            f"(target file size 128 MiB, min 5 files); {m['published']} published in "
            f"{m['ingest_s']:.0f} s; compaction {m['compaction_status']} in "
            f"{m['compaction_s']:.1f} s.",
            "",
            "| | data files on main | bytes | full scan s (pyiceberg, median of 3) | rows |",
            "| --- | ---: | ---: | ---: | ---: |",
            f"| before | {m['files_before']} | {m['bytes_before']:,} | {m['scan_before_s']:.3f} | "
            f"{m['scan_rows_before']:,} |",
            f"| after | {m['files_after']} | {m['bytes_after']:,} | {m['scan_after_s']:.3f} | "
            f"{m['scan_rows_after']:,} |",
            f"| ratio | {m['files_before'] / max(m['files_after'], 1):.0f}x fewer (target: at "
            f"most {m['target_files']}) | | {m['scan_before_s'] / m['scan_after_s']:.1f}x faster "
            "(target: 3x) | |",
            "",
            f"{m['failed']} ingests that fail their audit ({m['audit_failed']} AUDIT_FAILED), "
            f"their branches discarded, then `wap gc --delete` (grace 0, retention 7 d) in "
            f"{m['gc_s']:.1f} s:",
            "",
            "| bytes the failed ingests wrote | reclaimed of those | ratio (target: all) | "
            "deleted in all | deleted that a live reference reaches (target: 0) | marked files "
            "missing after |",
            "| ---: | ---: | ---: | ---: | ---: | ---: |",
            f"| {m['failed_bytes_written']:,} ({m['failed_bytes_written'] / mib:.2f} MiB) | "
            f"{m['gc_reclaimed_of_failed']:,} | "
            f"{m['gc_reclaimed_of_failed'] / max(m['failed_bytes_written'], 1):.2f} | "
            f"{m['gc_deleted_bytes']:,} | {m['gc_deleted_reachable_bytes']:,} | "
            f"{m['gc_missing_after']} |",
        ]
    )


def markdown(args: argparse.Namespace) -> str:
    """The tables of a run at the sizes of `args`."""
    return render(run(args.drops, args.rows, args.failed, args.timeout))


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the tables."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
