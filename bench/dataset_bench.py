"""A two-table dataset against the same two tables ingested one after the other, through
the real local flow (issue 27; docs/datasets.md).

Orders (100k rows) and their items (300k rows, every item naming an order): once as two
single-table ingests, one after the other, and once as one multi-table dataset with a
`foreign_key` and a `row_count_relation` between them, on the same embedded stack in the
same run. It prints job runs, merges into main and wall time, and the dataset's wall time
against the larger single-table ingest (target: one run, one merge, at most 1.3x).

`python -m bench.dataset_bench [--orders 100000 --items-per-order 3 --repeats 3]`;
`--quick` for a smoke run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bench.cli import Benchmark, Option
from bench.cpu import cores, tree_cpu_seconds
from bench.scratch import job_timings, local_lake, wait_final

BENCHMARK = Benchmark(
    "bench.dataset_bench",
    "A two-table dataset against the two tables ingested one after the other (real local flow)",
    "1,000 orders, one round",
    {
        "orders": Option(100_000, 1000),
        "items_per_order": Option(3),
        "repeats": Option(3, 1),
        "timeout": Option(1800.0),
    },
)

DATASET = """tables: [{ns}.orders, {ns}.order_items]
checks:
  - {{kind: foreign_key, table: {ns}.order_items, column: order_id,
     references: {ns}.orders.order_id}}
  - {{kind: row_count_relation, name: items_at_least_orders, expression: order_items >= orders}}
"""


@dataclass(frozen=True)
class Measured:
    seconds: float  # wall: upload to final status, through the whole local flow
    job_runs: int
    merges: int
    statuses: tuple[str, ...]
    job_seconds: float = 0.0  # the job's own total (its report's `total_s`)
    timings: dict | None = None  # the job's report timings
    cpu_seconds: float = 0.0  # CPU this process and the JVM used, upload to final status


def write_files(folder: Path, orders: int, per_order: int) -> tuple[Path, Path]:
    """orders.parquet and items.parquet (every item names an order) in `folder`."""
    ids = pa.array(range(orders), pa.int64())
    pq.write_table(
        pa.table(
            {
                "order_id": ids,
                "customer": pa.array([i % 997 for i in range(orders)], pa.int64()),
                "amount": pa.array([float(i % 500) for i in range(orders)]),
            }
        ),
        folder / "orders.parquet",
    )
    item_ids = pa.array([i // per_order for i in range(orders * per_order)], pa.int64())
    pq.write_table(
        pa.table(
            {
                "order_id": item_ids,
                "sku": pa.array([f"sku-{i % 1000}" for i in range(orders * per_order)]),
                "quantity": pa.array([1 + i % 5 for i in range(orders * per_order)], pa.int64()),
            }
        ),
        folder / "items.parquet",
    )
    return folder / "orders.parquet", folder / "items.parquet"


def _job_runs(backend: Any, ingest_id: str) -> int:
    """EMR job runs started for an ingest (their names carry its id)."""
    emr = backend.stack.aws.client("emr-serverless")
    listed = emr.list_job_runs(applicationId=backend.stack.aws.application_id)["jobRuns"]
    return sum(f"-{ingest_id}-" in run["name"] for run in listed)


def _main_commits(backend: Any) -> int:
    return sum(1 for _ in backend.nessie.commit_log("main"))


def _measured(
    backend: Any, record: Any, seconds: float, cpu: float, commits_before: int
) -> Measured:
    """An ingest's measure once final: its wall and CPU seconds (`seconds`, `cpu`), the job
    runs and merges into main it took, and its job's own timings."""
    timings = job_timings(backend, record)
    return Measured(
        seconds,
        _job_runs(backend, record.ingest_id),
        _main_commits(backend) - commits_before,
        (record.status,),
        float(timings.get("total_s", 0.0)),
        timings,
        cpu,
    )


def one_after_the_other(
    backend: Any, ns: str, files: tuple[Path, Path], timeout: float
) -> tuple[Measured, Measured]:
    """Each table alone, the second uploaded once the first is final."""
    from wap.ops.operations import upload_for_ingest

    measured = []
    for table, path in zip(("orders", "order_items"), files, strict=True):
        before, cpu, started = _main_commits(backend), tree_cpu_seconds(), time.perf_counter()
        key = f"{ns}/{table}/{path.name}"
        [record] = wait_final(
            backend,
            [upload_for_ingest(backend, key, path.read_bytes())],
            timeout,
            poll=0.1,
            what=key,
        )
        seconds, cpu = time.perf_counter() - started, tree_cpu_seconds() - cpu
        measured.append(_measured(backend, record, seconds, cpu, before))
    return measured[0], measured[1]


def as_dataset(backend: Any, ns: str, files: tuple[Path, Path], timeout: float) -> Measured:
    """Both tables as one multi-table dataset (drop, manifest, one run, one merge)."""
    from wap.ops.datasets import DatasetDrop, drop_dataset

    drop = DatasetDrop(
        f"{ns}_shop",
        files[0].parent,
        {
            f"{ns}.orders": [("orders/orders.parquet", files[0])],
            f"{ns}.order_items": [("items/items.parquet", files[1])],
        },
    )
    before, cpu, started = _main_commits(backend), tree_cpu_seconds(), time.perf_counter()
    dropped = drop_dataset(backend, drop)
    [record] = wait_final(backend, [dropped.ingest_id], timeout, poll=0.1, what=dropped.key)
    seconds, cpu = time.perf_counter() - started, tree_cpu_seconds() - cpu
    return _measured(backend, record, seconds, cpu, before)


def run(orders: int, per_order: int, repeats: int, timeout: float) -> list[dict[str, Any]]:
    """`repeats` rounds of (orders alone, items alone, both as a dataset), fresh tables each."""
    rounds = []
    numbers = range(repeats + 1)  # round 0 warms up the JVM and Spark's plans
    datasets = {f"datasets/ds{n}_shop": DATASET.format(ns=f"ds{n}") for n in numbers}
    with tempfile.TemporaryDirectory() as data:
        files = write_files(Path(data), orders, per_order)
        with local_lake("wap-dataset-bench-", datasets) as backend:
            for number in numbers:
                first, second = one_after_the_other(backend, f"seq{number}", files, timeout)
                together = as_dataset(backend, f"ds{number}", files, timeout)
                if number:
                    rounds.append({"orders": first, "items": second, "dataset": together})
    return rounds


def render(rounds: list[dict[str, Any]], orders: int, per_order: int) -> str:
    """Medians over the rounds, and the ratios the issue sets targets for (paired: each
    round's dataset against the same round's single-table ingests)."""

    def median(key: str, field: str = "seconds") -> float:
        return statistics.median(getattr(r[key], field) for r in rounds)

    def ratio(field: str, against) -> float:
        return statistics.median(getattr(r["dataset"], field) / against(r, field) for r in rounds)

    def larger(r: dict[str, Any], field: str) -> float:
        return max(getattr(r["orders"], field), getattr(r["items"], field))

    def both(r: dict[str, Any], field: str) -> float:
        return getattr(r["orders"], field) + getattr(r["items"], field)

    def ratio_of_floor() -> float:
        return statistics.median(
            r["dataset"].cpu_seconds / cores() / larger(r, "seconds") for r in rounds
        )

    last = rounds[-1]
    rows = [
        (
            label,
            last[key].job_runs,
            last[key].merges,
            median(key),
            median(key, "job_seconds"),
            median(key, "cpu_seconds"),
            last[key].statuses[0],
        )
        for label, key in (("orders alone", "orders"), ("items alone", "items"))
    ]
    lines = [
        f"{orders:,} orders and {orders * per_order:,} items (a foreign key and a row-count "
        f"relation between them), median of {len(rounds)} round(s), same stack:",
        "",
        "| what | job runs | merges into main | wall s | job s | cpu s | outcome |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
        *(
            f"| {label} | {runs} | {merges} | {wall:.2f} | {job:.2f} | {cpu:.2f} | {status} |"
            for label, runs, merges, wall, job, cpu, status in rows
        ),
        f"| both, one after the other | {last['orders'].job_runs + last['items'].job_runs} | "
        f"{last['orders'].merges + last['items'].merges} | "
        f"{statistics.median(both(r, 'seconds') for r in rounds):.2f} | "
        f"{statistics.median(both(r, 'job_seconds') for r in rounds):.2f} | "
        f"{statistics.median(both(r, 'cpu_seconds') for r in rounds):.2f} | |",
        f"| **one dataset of both** | {last['dataset'].job_runs} | {last['dataset'].merges} | "
        f"{median('dataset'):.2f} | {median('dataset', 'job_seconds'):.2f} | "
        f"{median('dataset', 'cpu_seconds'):.2f} | {last['dataset'].statuses[0]} |",
        "",
        f"dataset / larger single-table ingest: wall **{ratio('seconds', larger):.2f}x**, "
        f"job **{ratio('job_seconds', larger):.2f}x** (target <= 1.3x); dataset / both one "
        f"after the other: wall {ratio('seconds', both):.2f}x, job "
        f"{ratio('job_seconds', both):.2f}x",
        "",
        "Where the dataset's job time goes (medians): its tables written and audited side "
        f"by side {statistics.median(r['dataset'].timings.get('tables_s', 0) for r in rounds):.2f}"
        " s (the larger table alone: "
        f"{statistics.median(larger(r, 'job_seconds') for r in rounds):.2f} s), then the "
        "checks between them "
        f"{statistics.median(r['dataset'].timings.get('relations_s', 0) for r in rounds):.2f} s.",
        "",
        # cpu s: this process (stack, Lambdas, Nessie) and the JVM, upload to final status.
        f"CPU bound on this machine's {cores()} cores: the dataset used "
        f"{median('dataset', 'cpu_seconds'):.2f} CPU s, so its wall time cannot be below "
        f"{median('dataset', 'cpu_seconds') / cores():.2f} s, "
        f"{ratio_of_floor():.2f}x the larger single-table ingest's wall time.",
    ]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The table of a run at the sizes of `args`."""
    rounds = run(args.orders, args.items_per_order, args.repeats, args.timeout)
    return render(rounds, args.orders, args.items_per_order)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
