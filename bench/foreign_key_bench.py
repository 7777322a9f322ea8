"""What a dataset's `foreign_key` check costs as the parent table grows (issue 27).

A drop of 100k orders and 300k items (every item naming an order of the drop, and
`--old-keys` items naming orders already on main) is checked against a parent that
already holds `--parents` orders, two ways in the same run on the same Spark session:
the whole parent on the branch anti-joined (how the check worked before: a scan of every
parent row per drop), and `spark_jobs.relations` (the parent's new rows first, then only
the keys still missing among its earlier rows). Plain parquet frames stand in for the
tables; Iceberg would also skip data files by key range for small lookups.

`python -m bench.foreign_key_bench [--parents 2000000,8000000 --repeats 5]`; `--quick`.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from bench.cli import Benchmark, Option, comma_separated

BENCHMARK = Benchmark(
    "bench.foreign_key_bench",
    "A dataset's foreign key as the parent table grows",
    "20,000 parents, one round",
    {
        "parents": Option([2_000_000, 8_000_000], [20_000], parse=comma_separated(int)),
        "old_keys": Option(100),
        "repeats": Option(5, 1),
    },
)

CONFIG = """tables: [s.orders, s.order_items]
checks: [{kind: foreign_key, table: s.order_items, column: order_id,
          references: s.orders.order_id}]
"""


def _write(folder: Path, parents: int, orders: int, per_order: int, old_keys: int) -> None:
    earlier = folder / "earlier"
    earlier.mkdir()
    step = max(1, parents // 16)  # 16 files, each a key range, as appends leave them
    for start in range(0, parents, step):
        pq.write_table(
            pa.table({"order_id": pa.array(range(start, min(start + step, parents)), pa.int64())}),
            earlier / f"part-{start:012d}.parquet",
        )
    pq.write_table(
        pa.table({"order_id": pa.array(range(parents, parents + orders), pa.int64())}),
        folder / "orders.parquet",
    )
    items = [parents + i // per_order for i in range(orders * per_order)]
    items[:old_keys] = [i * max(1, parents // max(1, old_keys)) for i in range(old_keys)]
    pq.write_table(pa.table({"order_id": pa.array(items, pa.int64())}), folder / "items.parquet")


def run(parents_list: list[int], repeats: int, old_keys: int) -> list[tuple[int, float, float]]:
    """(parents, seconds of the whole-parent anti-join, seconds of the check), medians."""
    from contracts.dataset_config import parse_dataset_config
    from local.spark import build_local_spark

    config = parse_dataset_config(yaml.safe_load(CONFIG), "shop")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        spark = build_local_spark(
            (Path(tmp) / "warehouse").as_uri(), "http://127.0.0.1:9/api/v2", app_name="wap-fk-bench"
        )
        try:
            for parents in parents_list:
                folder = Path(tmp) / f"p{parents}"
                folder.mkdir()
                _write(folder, parents, 100_000, 3, old_keys)
                rows.append((parents, *_measure(spark, config, folder, repeats)))
        finally:
            spark.stop()
    return rows


def _measure(spark, config, folder: Path, repeats: int) -> tuple[float, float]:
    """Median seconds of (the whole parent anti-joined, the check) over `repeats` rounds."""
    from spark_jobs.relations import evaluate_relations

    earlier = spark.read.parquet(str(folder / "earlier"))
    new_orders = spark.read.parquet(str(folder / "orders.parquet"))
    items = spark.read.parquet(str(folder / "items.parquet"))

    def whole_parent() -> int:
        return items.join(earlier.unionByName(new_orders), "order_id", "left_anti").count()

    def check() -> int:
        [result] = evaluate_relations(
            spark,
            config,
            {"s.order_items": items, "s.orders": new_orders},
            {"s.orders": earlier},
            {"s.orders": 100_000, "s.order_items": 1},
        )
        return result.violations

    timed: dict[str, list[float]] = {"old": [], "new": []}
    for number in range(repeats + 1):  # the first round warms up
        for name, fn in (("old", whole_parent), ("new", check)):
            started = time.perf_counter()
            if fn() != 0:
                raise RuntimeError(f"{name}: orphans found where every key has a parent")
            if number:
                timed[name].append(time.perf_counter() - started)
    return statistics.median(timed["old"]), statistics.median(timed["new"])


def render(rows: list[tuple[int, float, float]], old_keys: int) -> str:
    """The table: seconds each way and their ratio per parent size."""
    lines = [
        f"A drop of 100,000 orders and 300,000 items ({old_keys} of them naming orders "
        "already on main), its foreign key checked against a parent of N earlier rows:",
        "",
        "| earlier parent rows | whole parent anti-joined s | check s | check / whole parent |",
        "| ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {parents:,} | {old:.2f} | {new:.2f} | **{new / old:.2f}x** |"
        for parents, old, new in rows
    ]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The table of a run at the sizes of `args`."""
    return render(run(args.parents, args.repeats, args.old_keys), args.old_keys)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
