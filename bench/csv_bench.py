"""CSV ingest vs a plain Spark read of the same file + an Iceberg append (issue 26).

    python -m bench.csv_bench            # 1M rows, median of 3
    python -m bench.csv_bench --quick    # 5,000 rows, 1 repeat: a smoke test in seconds

The same orders-like rows (bigint, string, decimal(10,2), timestamp, boolean, date) as
CSV, gzip CSV and parquet. Every variant appends one file into an empty, pre-created
table of the same schema, all in one SparkSession with one Nessie server:
- baseline: `spark.read.schema(S).options(<the job's CSV options>).csv(file)` (for
            parquet `spark.read.parquet(file)`), then an Iceberg append to main, no audit;
- wap:      our job (`run_ingest`: vet, header, branch write counting parse errors,
            4 checks + parse_errors, report) + publish (the Nessie merge).
Issue 26's target: wap / baseline <= 1.15 for csv and csv.gz. CSV against parquet of the
same rows is printed for information. Results go to stdout and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import time
import uuid
from pathlib import Path

from bench.cli import Benchmark, Option
from bench.job_runs import Bench
from bench.scratch import Nessie, spark_and_catalog
from bench.timing import Sample, medians, met, paired_ratio, print_sample, rotated

BENCHMARK = Benchmark(
    "bench.csv_bench",
    "CSV ingest vs plain read + append (issue 26)",
    "5,000 rows, 1 repeat, no warm-up (smoke test)",
    {"rows": Option(1_000_000, 5_000), "repeats": Option(3, 1)},
)

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".bench" / "csv"
TARGET = 1.15
FORMATS = ("csv", "csv.gz", "parquet")
VARIANTS = ("baseline", "wap")
# The table (and the config's `schema:`), in the files' column order.
COLUMNS = (
    ("order_id", "bigint"),
    ("customer_id", "bigint"),
    ("customer", "string"),
    ("status", "string"),
    ("amount", "decimal(10,2)"),
    ("currency", "string"),
    ("ordered_at", "timestamp"),
    ("paid", "boolean"),
    ("ship_date", "date"),
)
STATUSES = ("new", "paid", "shipped", "delivered", "returned")
CURRENCIES = ("EUR", "USD", "GBP")
TABLE_CONFIG = (
    "schema_policy: additive\nschema:\n"
    + "".join(f"  - {{name: {name}, type: '{type_}'}}\n" for name, type_ in COLUMNS)
    + "checks:\n"
    "  - {kind: row_count, min: 1}\n"
    "  - {kind: not_null, column: order_id}\n"
    "  - {kind: range, column: amount, min: 0, max: 100000}\n"
    "  - {kind: range, column: ship_date, min: 2020-01-01, max: 2030-12-31}\n"
)


def generate(rows: int, under: Path = WORK) -> dict[str, Path]:
    """The same `rows` orders as CSV, gzip CSV and parquet; cached under `under`."""
    folder = under / f"{rows}"
    files = {
        "csv": folder / "orders.csv",
        "csv.gz": folder / "orders.csv.gz",
        "parquet": folder / "orders.parquet",
    }
    if all(path.exists() for path in files.values()):
        return files
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    table = _orders(rows)
    # Seconds only in the text: what an export writes, and what Spark's default parses.
    pacsv.write_csv(
        table.set_column(6, "ordered_at", table.column(6).cast("timestamp[s]").cast("string")),
        files["csv"],
        pacsv.WriteOptions(quoting_style="needed"),
    )
    with files["csv"].open("rb") as plain, gzip.open(files["csv.gz"], "wb", 6) as packed:
        shutil.copyfileobj(plain, packed, 1 << 20)
    # Several row groups, so Spark reads the parquet file with both cores.
    pq.write_table(table, files["parquet"], row_group_size=128 * 1024)
    return files


def _orders(rows: int):
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(26)
    customer_id = rng.integers(1, max(rows // 10, 2), rows)
    cents = rng.integers(100, 5_000_000, rows)
    # decimal128 values are 16-byte little-endian unscaled integers; all positive here.
    unscaled = np.zeros((rows, 2), dtype=np.int64)
    unscaled[:, 0] = cents
    amount = pa.Array.from_buffers(
        pa.decimal128(10, 2), rows, [None, pa.py_buffer(unscaled.tobytes())]
    )
    start = 1_735_689_600  # 2025-01-01T00:00:00Z
    ordered_s = start + rng.integers(0, 365 * 86400, rows)
    names = pa.array([f"customer {i}" for i in range(max(rows // 10, 2))])
    return pa.table(
        {
            "order_id": pa.array(np.arange(1, rows + 1, dtype=np.int64)),
            "customer_id": pa.array(customer_id),
            "customer": names.take(pa.array(customer_id - 1)),
            "status": pa.array(STATUSES).take(pa.array(rng.integers(0, len(STATUSES), rows))),
            "amount": amount,
            "currency": pa.array(CURRENCIES).take(pa.array(rng.integers(0, 3, rows))),
            "ordered_at": pa.array(ordered_s * 1_000_000, pa.timestamp("us", tz="UTC")),
            "paid": pa.array(rng.random(rows) < 0.8),
            "ship_date": pa.array(
                (ordered_s // 86400 + rng.integers(0, 10, rows)).astype(np.int32), pa.date32()
            ),
        }
    )


def baseline_csv_options() -> dict[str, str]:
    """The options `spark_jobs.text_sources._read_csv` reads a CSV with under the default
    `csv:` config, less the corrupt-record column (the job's parse-error accounting, which
    is part of what the bench measures)."""
    from contracts.table_config import CsvOptions, ParseOptions
    from spark_jobs.text_sources import csv_read_options

    return {
        **csv_read_options(CsvOptions(), ParseOptions()),
        "enforceSchema": "true",
        "mode": "PERMISSIVE",
    }


class OrdersBench(Bench):
    """Bench's session, CPU clock and Nessie calls; tables of the orders schema (`COLUMNS`),
    ingested under `table_config` (a subclass's table config text)."""

    table_config: str

    def __init__(self, spark, nessie: Nessie, work: Path, rows: int):
        super().__init__(spark, nessie, work)
        self.rows = rows
        self.config = work / "orders.yaml"
        self.config.write_text(self.table_config)

    def _fresh_table(self, source: Path) -> str:
        name = f"orders_{uuid.uuid4().hex[:8]}"  # new in every run, session and catalog
        columns = ", ".join(f"`{name}` {type_}" for name, type_ in COLUMNS)
        return self._create_table(name, columns)


class CsvBench(OrdersBench):
    """The plain read + append (`baseline`) and our job (`wap`) of one file."""

    table_config = TABLE_CONFIG

    def baseline(self, source: Path) -> Sample:
        from pyspark.sql import types as T

        table = self._fresh_table(source)
        schema = T._parse_datatype_string(", ".join(f"{n}: {t}" for n, t in COLUMNS))
        start = self._start()
        if source.name.endswith(".parquet"):
            frame = self.spark.read.parquet(source.as_uri())
        else:
            frame = (
                self.spark.read.schema(schema)
                .options(**baseline_csv_options())
                .csv(source.as_uri())
            )
        writing = time.perf_counter()
        frame.writeTo(f"lake.bench.{table}").append()
        end = time.perf_counter()
        written = self.spark.sql(
            f"SELECT summary['added-records'] FROM lake.bench.{table}.snapshots"
        ).first()[0]
        if int(written) != self.rows:
            raise RuntimeError(f"baseline wrote {written} rows of {self.rows}")
        return self._sample(
            end - start, {"read_s": writing - start, "append_call_s": end - writing}
        )

    def wap(self, source: Path) -> Sample:
        report, start, job_done, end = self._ingest(source, self.config)
        if report["outcome"] != "passed" or report["rows_written"] != self.rows:
            raise RuntimeError(
                f"bench run {report['outcome']} with {report['rows_written']} "
                f"rows of {self.rows}: {report['reason']}"
            )
        parse = [c for c in report["checks"] if c["kind"] == "parse_errors"]
        settled = [c["settled_by"] for c in report["checks"]]
        parts = {k: float(v) for k, v in report["timings"].items() if isinstance(v, (int, float))}
        parts.update(
            {
                "job_s": job_done - start,
                "publish_s": end - job_done,
                "parse_checked": float(bool(parse)),
                "by_metrics": settled.count("metrics"),
                "by_write": settled.count("write"),
                "by_scan": settled.count("scan"),
            }
        )
        return self._sample(end - start, parts)


def run(rows: int, repeats: int, warm: bool) -> tuple[list[dict], dict[str, int]]:
    """`measure` in a SparkSession and Nessie server of its own, stopped afterwards."""
    with spark_and_catalog("csv-bench-", "csv-bench") as (spark, nessie, tmp):
        warm_files = generate(5_000) if warm else None
        return measure(spark, nessie, tmp, generate(rows), rows, repeats, warm_files)


def measure(
    spark,
    nessie: Nessie,
    work: Path,
    files: dict[str, Path],
    rows: int,
    repeats: int,
    warm_files: dict[str, Path] | None = None,
) -> tuple[list[dict], dict[str, int]]:
    """Every format x variant on `files` (`rows` rows each), `repeats` times (variant
    order alternated); per format the medians and the median of paired ratios, and the
    file sizes, publishing through `nessie`. `warm_files` (5,000 rows): JIT, catalog and
    reader warm-up, not measured."""
    if warm_files is not None:
        warmer = CsvBench(spark, nessie, work, 5_000)
        for fmt in FORMATS:
            for variant in VARIANTS:
                getattr(warmer, variant)(warm_files[fmt])
    bench = CsvBench(spark, nessie, work, rows)
    samples = {fmt: {v: [] for v in VARIANTS} for fmt in FORMATS}
    for repeat in range(repeats):
        for fmt in FORMATS:
            for variant in rotated(VARIANTS, repeat):
                sample = getattr(bench, variant)(files[fmt])
                samples[fmt][variant].append(sample)
                print_sample(repeat, f"{fmt} {variant}", sample)
    results = []
    for fmt in FORMATS:
        row = {
            "format": fmt,
            **{v: medians(samples[fmt][v]) for v in VARIANTS},
            "paired": paired_ratio(samples[fmt]["wap"], samples[fmt]["baseline"]),
        }
        results.append(row)
        print(
            f"  measured {fmt}: baseline {row['baseline']['total_s']:.2f}s "
            f"({row['baseline']['cpu_s']:.1f} cpu-s), wap {row['wap']['total_s']:.2f}s "
            f"({row['wap']['cpu_s']:.1f} cpu-s)",
            flush=True,
        )
    return results, {fmt: path.stat().st_size for fmt, path in files.items()}


def render(results: list[dict], sizes: dict[str, int], rows: int, repeats: int) -> str:
    """The markdown tables (also printed)."""
    by = {row["format"]: row for row in results}
    lines = [
        f"{rows:,} rows; files: csv {sizes['csv'] / 2**20:.1f} MiB, csv.gz "
        f"{sizes['csv.gz'] / 2**20:.1f} MiB, parquet {sizes['parquet'] / 2**20:.1f} MiB.",
        "",
        "| source | baseline s | wap s | wap / baseline | median of paired ratios "
        "| baseline cpu-s | wap cpu-s | cpu wap / baseline | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for fmt in FORMATS:
        row = by[fmt]
        base, wap = row["baseline"], row["wap"]
        ratio, cpu = wap["total_s"] / base["total_s"], wap["cpu_s"] / base["cpu_s"]
        verdict = (
            f"wall {met(ratio, TARGET)}, cpu {met(cpu, TARGET)}"
            if fmt != "parquet"
            else "(information)"
        )
        lines.append(
            f"| {fmt} | {base['total_s']:.2f} | {wap['total_s']:.2f} | "
            f"**{ratio:.2f}** | {row['paired']:.2f} | {base['cpu_s']:.1f} | "
            f"{wap['cpu_s']:.1f} | {cpu:.2f} | "
            f"<= {TARGET} {verdict} |"
        )
    lines += [
        "",
        "CSV against parquet of the same rows (information):",
        "",
        "| | baseline | wap |",
        "|---|---|---|",
    ]
    for fmt in ("csv", "csv.gz"):
        lines.append(
            f"| {fmt} / parquet | "
            + " | ".join(
                f"{by[fmt][v]['total_s'] / by['parquet'][v]['total_s']:.2f}" for v in VARIANTS
            )
            + " |"
        )
    lines += [
        "",
        "Where the wap run's time goes (medians, seconds; the job's report "
        "`timings`, publish is the Nessie merge):",
        "",
        "| source | vet | footer/header | plan | prepare | append | observe wait | "
        "hash | audit | publish | baseline: append | checks by metrics / write / scan |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fmt in FORMATS:
        w = by[fmt]["wap"]
        lines.append(
            f"| {fmt} | "
            + " | ".join(
                f"{w.get(k, 0.0):.2f}"
                for k in (
                    "vet_s",
                    "footer_s",
                    "plan_s",
                    "prepare_s",
                    "append_s",
                    "observe_wait_s",
                    "hash_s",
                    "audit_s",
                    "publish_s",
                )
            )
            + f" | {by[fmt]['baseline']['append_call_s']:.2f} | {w['by_metrics']:.0f} / "
            f"{w['by_write']:.0f} / {w['by_scan']:.0f} |"
        )
    lines += [
        "",
        f"Median of {repeats}, variant order alternated per repeat; one local "
        "SparkSession (local[2], 4g driver) and one Nessie server for all variants; "
        "each run appends one file to an empty pre-created table. The baseline reads "
        "with the job's CSV options (header, multiLine, RFC 4180 quoting, PERMISSIVE; "
        "without the corrupt-record column); multiLine and gzip make a CSV one task "
        "either way. The wap checks: row_count, not_null on the key, two ranges, and "
        "parse_errors (counted during the write). CPU seconds are the Spark JVM's "
        "and this process's: on a shared machine wall time swings with other load, "
        "CPU time much less, so the target is judged on both.",
    ]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The tables of a run at the sizes of `args`."""
    results, sizes = run(args.rows, args.repeats, warm=not args.quick)
    return render(results, sizes, args.rows, args.repeats)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write them to docs/benchmarks.md."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
