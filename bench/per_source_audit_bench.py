"""What per-file verdicts in a batch cost: the audit's one aggregation pass, grouped by source.

    python -m bench.per_source_audit_bench            # SF 0.1 in 100 files, median of 3
    python -m bench.per_source_audit_bench --quick    # SF 0.01 in 10 files, 1 repeat, no warm-up

The batches issue (#18) wants a burst of files audited in one job with a verdict per file.
On the dirty TPC-H lineitem (the wap_job bench's 10 checks, 5 failing), split into N
parquet files, each repeat times, in rotated order:
- one pass:  the audit's aggregation over all rows (`count_aggregates`), as today (baseline);
- grouped:   the same aggregates grouped by `input_file_name()`: a verdict per file;
- per file:  one aggregation per file, as one job run per file would do (Spark's fixed
             cost per query included, not EMR's per-run start).
It prints each as a multiple of the one pass.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cli import Benchmark, Option
from bench.scratch import bench_spark
from bench.timing import rotated

BENCHMARK = Benchmark(
    "bench.per_source_audit_bench",
    "Per-file verdicts: the audit pass grouped by source file",
    "SF 0.01, 10 files, 1 repeat, no warm-up",
    {"scale": Option(0.1, 0.01), "files": Option(100, 10), "repeats": Option(3, 1)},
)

STEPS = ("one pass", "grouped", "per file")


def split(source: Path, into: Path, files: int) -> list[Path]:
    """`source` cut into `files` parquet files of consecutive rows."""
    import pyarrow.parquet as pq

    table = pq.read_table(source)
    into.mkdir(parents=True, exist_ok=True)
    size = -(-table.num_rows // files)
    paths = []
    for index in range(files):
        path = into / f"part-{index:05d}.parquet"
        pq.write_table(table.slice(index * size, size), path)
        paths.append(path)
    return paths


def run(
    scale: float, files: int, repeats: int, *, warm_up: bool = True
) -> tuple[dict[str, float], int, int]:
    """Median seconds per step, the rows and the files the grouped pass gave verdicts for.
    `warm_up`: run each step once, unmeasured, first."""
    tmp = Path(tempfile.mkdtemp(prefix="per-source-audit-"))
    try:
        with bench_spark((tmp / "warehouse").as_uri(), None, "per-source-audit-bench") as spark:
            return _measure(spark, scale, files, repeats, tmp, warm_up=warm_up)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(
    spark: Any, scale: float, files: int, repeats: int, tmp: Path, *, warm_up: bool
) -> tuple[dict[str, float], int, int]:
    import yaml
    from pyspark.sql import functions as F

    from bench.lineitem import TABLE_CONFIG, generate
    from contracts.table_config import parse_table_config_text
    from spark_jobs.audit import count_aggregates
    from spark_jobs.checks import compile_checks

    _, dirty = generate(scale)
    paths = split(dirty, tmp / "parts", files)
    rows = spark.read.parquet(*[p.as_uri() for p in paths])
    config = parse_table_config_text(TABLE_CONFIG, yaml=yaml)
    checks = compile_checks(spark, config, rows.schema)
    aggregates = count_aggregates(checks, list(range(len(checks))))

    def one_pass() -> int:
        return int(rows.agg(*aggregates).first()[0])

    def grouped() -> int:
        return len(rows.groupBy(F.input_file_name().alias("_source")).agg(*aggregates).collect())

    def per_file() -> int:
        return sum(int(spark.read.parquet(p.as_uri()).agg(*aggregates).first()[0]) for p in paths)

    parts: dict[str, Callable[[], int]] = {
        "one pass": one_pass,
        "grouped": grouped,
        "per file": per_file,
    }
    for step in parts.values() if warm_up else ():  # JIT warm-up, not measured
        step()
    total, verdicts = one_pass(), grouped()
    times: dict[str, list[float]] = {name: [] for name in STEPS}
    for repeat in range(repeats):
        for name in rotated(STEPS, repeat):
            start = time.perf_counter()
            parts[name]()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(v) for name, v in times.items()}, total, verdicts


def render(medians: dict[str, float], rows: int, files: int, verdicts: int) -> str:
    """The markdown table: seconds and the multiple of the one pass."""
    base = medians["one pass"]
    lines = [
        f"{rows:,} rows in {files} files; the grouped pass gave {verdicts} verdicts.",
        "",
        "| audit aggregation | median s | x one pass |",
        "| --- | ---: | ---: |",
    ]
    lines += [f"| {name} | {medians[name]:.2f} | {medians[name] / base:.1f} |" for name in STEPS]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The table of a run at the sizes of `args`."""
    medians, rows, verdicts = run(args.scale, args.files, args.repeats, warm_up=not args.quick)
    return render(medians, rows, args.files, verdicts)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
