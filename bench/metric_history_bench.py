"""What the metric history costs (issue 39, docs/metric-history.md).

    python -m bench.metric_history_bench            # SF 1 job, median of 5; 10 vs 1,000 drops
    python -m bench.metric_history_bench --quick    # SF 0.01, 1 repeat; 10 vs 20 drops

1. The job: the WAP job on TPC-H lineitem (parquet, the 10 checks of
   bench.wap_job_bench) with the metric history on (the audit records its profile and
   reads main's history) and three anomaly checks (row count, the null fraction of
   l_partkey, the mean of l_quantity), against the same job with
   `spark.wap.audit.metric-history=false` and no anomaly checks. Each run appends into a
   fresh table (and publishes it); the table's metrics table on main holds 10 published
   drops, so the anomaly checks are judged against a real band. Target: at most 1.05x.
2. The history read: `spark_jobs.history.read_history` for a window of 10 (the checks of
   part 1), on a metrics table of 1,000 published drops against one of 10. The drops
   are committed by the job's own commit code, as published drops leave them: one
   Iceberg merge append (one snapshot, one file of about 80 rows: a lineitem profile)
   each. Target: at most 1.1x.

Variants alternate within each repeat and ratios come from the same run.
"""

from __future__ import annotations

import datetime as dt
import os
import statistics
import time
from pathlib import Path

from bench.cli import BenchParser, Option
from bench.doc import publish
from bench.job_runs import Bench
from bench.lineitem import TABLE_CONFIG, generate
from bench.scratch import spark_and_catalog
from bench.timing import rotated
from contracts.metric_history import METRICS_TABLE_SUFFIX

JOB_TARGET, READ_TARGET = 1.05, 1.1
ANOMALY_CHECKS = (
    "  - {kind: anomaly, name: rows_as_usual, metric: row_count, window: 10}\n"
    "  - {kind: anomaly, name: partkey_nulls_as_usual, metric: null_fraction, "
    "column: l_partkey, window: 10}\n"
    "  - {kind: anomaly, name: quantity_mean_as_usual, metric: mean, column: l_quantity, "
    "window: 10}\n"
)
READS_PER_SAMPLE = 5
HISTORY_DROPS = 10  # published drops in the history of each job run's table
NUMERIC = ("l_orderkey", "l_partkey", "l_suppkey", "l_linenumber")
DECIMALS = ("l_quantity", "l_extendedprice", "l_discount", "l_tax")
STRINGS = (
    "l_returnflag",
    "l_linestatus",
    "l_shipdate",
    "l_commitdate",
    "l_receiptdate",
    "l_shipinstruct",
    "l_shipmode",
    "l_comment",
)


class HistoryBench(Bench):
    """The job with and without the metric history, in one SparkSession."""

    def job(self, source: Path, history: bool, usual: dict[tuple, float]) -> tuple[float, float]:
        """Wall and CPU seconds of one run (branch, job, publish) into a fresh table; with
        `history`, its metrics table on main first gets `HISTORY_DROPS` drops near `usual`."""
        from spark_jobs import wap_job
        from spark_jobs.wap_job import METRIC_HISTORY_CONF

        table = self._fresh_table(source)
        if history:
            seed_history(self.spark, f"lake.bench.{table}__audit_metrics", usual)
        self.spark.conf.set(METRIC_HISTORY_CONF, "true" if history else "false")
        config = self.work / f"{table}.yaml"
        config.write_text(TABLE_CONFIG + (ANOMALY_CHECKS if history else ""))
        # The CPU seconds of the data write itself (the same work on both sides, and most
        # of the run's): what the run spends outside it is what the history adds to.
        write_cpu = []
        append = wap_job.append

        def timed_append(*args, **kwargs):
            start = self.cpu()
            try:
                return append(*args, **kwargs)
            finally:
                write_cpu.append(self.cpu() - start)

        wap_job.append = timed_append
        try:
            report, start, job_done, end = self._ingest(source, config, table)  # published
        finally:
            wap_job.append = append
        cpu = self.cpu() - self._cpu_start
        self.spark.conf.unset(METRIC_HISTORY_CONF)
        if report["outcome"] != "passed":
            raise RuntimeError(f"bench run {report['outcome']}: {report.get('reason')}")
        if history:
            anomalies = [c for c in report["checks"] if c["kind"] == "anomaly"]
            assert [c["status"] for c in anomalies] == ["passed"] * 3, anomalies
        self.last_timings = {
            **report["timings"],
            "job_s": job_done - start,
            "publish_s": end - job_done,
            "write_cpu": sum(write_cpu),
            "outside_cpu": cpu - sum(write_cpu),
        }
        return end - start, cpu


def usual_values(source: Path) -> dict[tuple, float]:
    """The three monitored metrics of `source` (what its history should look like)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(source, columns=["l_partkey", "l_quantity"])
    return {
        ("row_count", None): float(table.num_rows),
        ("null_fraction", "l_partkey"): table.column("l_partkey").null_count / table.num_rows,
        ("mean", "l_quantity"): pc.mean(table.column("l_quantity").cast("float64")).as_py(),
    }


def seed_history(spark, name: str, usual: dict[tuple, float]) -> None:
    """`HISTORY_DROPS` published drops of the monitored metrics, within 0.5% of usual,
    each committed by the job's own metrics commit (see `build_history`)."""
    from spark_jobs.history import record_metrics
    from spark_jobs.writer import CatalogTable

    catalog, namespace, table = name.split(".")
    ref = CatalogTable(catalog, namespace, table.removesuffix(METRICS_TABLE_SUFFIX))
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    for drop in range(HISTORY_DROPS):
        ingest = f"past{drop}"
        rows = [
            (
                ingest,
                now - dt.timedelta(days=HISTORY_DROPS - drop),
                "table",
                None,
                column,
                metric,
                None,
                value * (1 + 0.001 * (drop % 5 - 2)),
            )
            for (metric, column), value in usual.items()
        ]
        record_metrics(spark, ref, ingest, rows)


def run_job(scale: float, repeats: int, spark, nessie, tmp: Path, warm_up: bool = True) -> dict:
    """Medians of the job without and with the metric history, and per-repeat ratios."""
    bench = HistoryBench(spark, nessie, tmp)
    clean, _ = generate(scale)
    warm, _ = generate(0.01)
    for history in (False, True) if warm_up else ():  # JIT and catalog warm-up
        bench.job(warm, history, usual_values(warm))
    usual = usual_values(clean)
    load = os.getloadavg()
    samples: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    parts: dict[bool, list[dict]] = {False: [], True: []}
    for repeat in range(repeats):
        for history in rotated((False, True), repeat):
            wall, cpu_s = bench.job(clean, history, usual)
            samples[history].append(wall)
            cpu[history].append(cpu_s)
            parts[history].append(bench.last_timings)
            side = "with" if history else "without"
            print(f"  repeat {repeat} {side}: {wall:.2f} s, {cpu_s:.1f} cpu-s", flush=True)
    base, ours = statistics.median(samples[False]), statistics.median(samples[True])
    ratios = [w / o for w, o in zip(samples[True], samples[False], strict=True)]
    cpu_ratios = [w / o for w, o in zip(cpu[True], cpu[False], strict=True)]
    return {
        "scale": scale,
        "load": load,
        "without_s": base,
        "with_s": ours,
        "ratio": ours / base,
        "paired_ratio": statistics.median(ratios),
        "without_cpu": statistics.median(cpu[False]),
        "with_cpu": statistics.median(cpu[True]),
        "paired_cpu_ratio": statistics.median(cpu_ratios),
        # Per repeat, what the history adds outside the data write (the same work on both
        # sides and most of the run's time, whose swing would drown the difference).
        "paired_outside_cpu": statistics.median(
            w["outside_cpu"] - o["outside_cpu"]
            for w, o in zip(parts[True], parts[False], strict=True)
        ),
        "paired_outside_s": statistics.median(
            (w["job_s"] - w["append_s"]) - (o["job_s"] - o["append_s"])
            for w, o in zip(parts[True], parts[False], strict=True)
        ),
        "parts": {history: _median_parts(parts[history]) for history in (False, True)},
    }


def _median_parts(runs: list[dict]) -> dict[str, float]:
    """The median of each timed phase over runs (a phase a run lacks counts 0)."""
    keys = sorted({key for run in runs for key in run if key.endswith(("_s", "_cpu"))})
    return {key: statistics.median(run.get(key, 0.0) for run in runs) for key in keys}


def profile_rows(drop: int, when: dt.datetime) -> list[tuple]:
    """The rows one audit of lineitem records (its profile, 13 checks, one file)."""
    ingest = f"drop{drop:05d}"
    rows = [(ingest, when, "table", None, None, "row_count", None, 10_000.0 + drop % 7)]
    for column in NUMERIC + DECIMALS + STRINGS:
        rows.append((ingest, when, "table", None, column, "null_fraction", None, 0.0))
        rows.append((ingest, when, "table", None, column, "distinct_count", None, 900.0))
        if column not in STRINGS:
            for metric in ("min", "max", "mean", "stddev"):
                rows.append((ingest, when, "table", None, column, metric, None, 25.0))
    rows += [(ingest, when, "table", None, None, "check", f"c{i}", 0.0) for i in range(13)]
    rows.append((ingest, when, "file", f"s3://in/{ingest}.parquet", None, "row_count", None, 1e4))
    return rows


def build_history(spark, name: str, drops: int) -> None:
    """A metrics table of `drops` published drops, committed by the job's own code: the
    first drop by `record_metrics` (which creates the table as a job does), each later
    one by the commit it makes (`commit_metric_rows`: one parquet file, one Iceberg merge
    append), so the table's snapshots and manifests are what published drops leave
    (merge appends merge the table's manifests from 100 on). Only the job's check for a
    re-run's earlier commit is left out: it walks the whole history once per drop."""
    from spark_jobs.history import commit_metric_rows, record_metrics
    from spark_jobs.metrics import load_iceberg_table
    from spark_jobs.writer import CatalogTable

    catalog, namespace, data_table = name.split(".")
    data_table = data_table.removesuffix(METRICS_TABLE_SUFFIX)
    start = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    first = profile_rows(0, start)
    record_metrics(spark, CatalogTable(catalog, namespace, data_table), "drop00000", first)
    table = load_iceberg_table(spark, name)
    for drop in range(1, drops):
        rows = profile_rows(drop, start + dt.timedelta(hours=drop))
        commit_metric_rows(spark, table, f"drop{drop:05d}", rows)
    spark.sql(f"REFRESH TABLE {name}")


def run_read(drop_counts: tuple[int, int], repeats: int, spark) -> dict:
    """Medians of read_history (window 10, the job's three series) on each history."""
    from spark_jobs.history import read_history
    from spark_jobs.writer import CatalogTable

    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
    wanted = {
        ("row_count", None): 10,
        ("null_fraction", "l_partkey"): 10,
        ("mean", "l_quantity"): 10,
    }
    refs = {}
    for drops in drop_counts:
        name = f"h{drops}"
        started = time.perf_counter()
        build_history(spark, f"lake.bench.{name}{METRICS_TABLE_SUFFIX}", drops)
        print(f"  built {drops} drops in {time.perf_counter() - started:.0f}s", flush=True)
        refs[drops] = CatalogTable("lake", "bench", name)
    # A job loads the metrics table from the catalog; the tables built above are cached
    # in this session with the state of their 1,000 commits: drop them, read as a job does.
    spark._jsparkSession.sessionState().catalogManager().reset()
    for drops, ref in refs.items():  # warm-up; and the read must find the window
        history = read_history(spark, ref, wanted)
        assert all(len(points) == 10 for points in history.values()), history
        newest = max(p.recorded_at for p in history[("row_count", None)])
        assert newest.replace(tzinfo=None) == dt.datetime(2024, 1, 1) + dt.timedelta(
            hours=drops - 1
        ), newest
    # Each sample is READS_PER_SAMPLE reads in a row: CPU seconds (the Spark JVM's and
    # this process's, which contention on a shared machine distorts far less than wall
    # time) are counted in clock ticks of 10 ms, a tenth of one read.
    meter = Bench(spark, None, Path("."))
    samples: dict[int, list[float]] = {drops: [] for drops in drop_counts}
    cpu: dict[int, list[float]] = {drops: [] for drops in drop_counts}
    for repeat in range(repeats):
        for drops in rotated(drop_counts, repeat):
            start, start_cpu = time.perf_counter(), meter.cpu()
            for _ in range(READS_PER_SAMPLE):
                read_history(spark, refs[drops], wanted)
            samples[drops].append((time.perf_counter() - start) / READS_PER_SAMPLE)
            cpu[drops].append((meter.cpu() - start_cpu) / READS_PER_SAMPLE)
    small, big = (statistics.median(samples[d]) for d in drop_counts)
    small_cpu, big_cpu = (statistics.median(cpu[d]) for d in drop_counts)
    return {
        "drops": drop_counts,
        "load": os.getloadavg(),
        "small_s": small,
        "big_s": big,
        "ratio": big / small,
        "small_cpu": small_cpu,
        "big_cpu": big_cpu,
        "cpu_ratio": big_cpu / small_cpu,
    }


# The phases the job's report times (report["timings"]), as the parts table shows them.
PHASES = (
    ("read_s", "prepare (vet, footer, plan)"),
    ("history_read_s", "reading the history (its own thread, from prepare on)"),
    ("history_wait_s", "waiting for the history read"),
    ("append_s", "the data write and commit"),
    ("audit_metrics_s", "audit: file metrics"),
    ("audit_scan_s", "audit: the aggregation pass"),
    ("audit_s", "audit in all"),
    ("record_metrics_s", "the metrics commit (and the branch hash read again)"),
    ("job_s", "the job"),
    ("publish_s", "publish (Nessie merge)"),
    ("write_cpu", "CPU s of the data write (Spark JVM + Python)"),
    ("outside_cpu", "CPU s of the rest of the run (the same, outside the data write)"),
)


def render(job: dict, read: dict, repeats: int) -> str:
    """The markdown (also printed)."""
    small, big = read["drops"]
    verdict = {True: "within", False: "ABOVE"}
    cpu_ratio = job["with_cpu"] / job["without_cpu"]
    load = ", ".join(f"{value:.1f}" for value in job["load"])
    read_load = ", ".join(f"{value:.1f}" for value in read["load"])
    return "\n".join(
        [
            "| measure | baseline s | with history s | ratio | target |",
            "|---|---|---|---|---|",
            f"| job, SF {job['scale']:g} parquet: metric history + 3 anomaly checks vs "
            f"`spark.wap.audit.metric-history=false` | {job['without_s']:.2f} | "
            f"{job['with_s']:.2f} | {job['ratio']:.3f} (paired {job['paired_ratio']:.3f}) | "
            f"{JOB_TARGET} ({verdict[job['ratio'] <= JOB_TARGET]}; wall time swings with "
            "the machine's load) |",
            f"| the same job runs in CPU seconds (Spark JVM + Python) | "
            f"{job['without_cpu']:.1f} | {job['with_cpu']:.1f} | {cpu_ratio:.3f} (paired "
            f"{job['paired_cpu_ratio']:.3f}) | {JOB_TARGET} ({verdict[cpu_ratio <= JOB_TARGET]}) |",
            f"| `read_history`, window 10: {big:,} published drops vs {small:,} | "
            f"{read['small_s']:.3f} | {read['big_s']:.3f} | {read['ratio']:.2f} | "
            f"{READ_TARGET} ({verdict[read['ratio'] <= READ_TARGET]}) |",
            f"| the same read in CPU seconds (Spark JVM + Python) | "
            f"{read['small_cpu']:.3f} | {read['big_cpu']:.3f} | {read['cpu_ratio']:.2f} | "
            f"{READ_TARGET} ({verdict[read['cpu_ratio'] <= READ_TARGET]}) |",
            "",
            f"Medians of {repeats} (paired: the median of per-repeat ratios); load average "
            f"(1, 5, 15 min) {load} when the job runs started, {read_load} after the "
            f"reads (each read sample: {READS_PER_SAMPLE} reads in a row). Each job run "
            "appends into a "
            f"fresh table whose metrics table holds {HISTORY_DROPS} published drops; one "
            "local SparkSession (local[2], 4g driver) and one Nessie server for both. The "
            "history tables are built by the job's own commit code, as published drops "
            "leave them: one merge append (one snapshot, one file of a lineitem profile, "
            "79 rows) per drop.",
            "",
            "Outside the data write (the same work on both sides, and most of the run), "
            f"the history adds {job['paired_outside_s']:.2f} s of wall time and "
            f"{job['paired_outside_cpu']:.2f} CPU s (medians of per-repeat differences): "
            f"{job['paired_outside_s'] / job['without_s']:.1%} of the baseline's wall "
            f"time and {job['paired_outside_cpu'] / job['without_cpu']:.1%} of its CPU.",
            "",
            "The job's phases (medians, seconds; the report's timings):",
            "",
            render_parts(job),
        ]
    )


def render_parts(job: dict) -> str:
    """Each timed phase's median, without and with the history (seconds)."""
    without, with_ = job["parts"][False], job["parts"][True]
    lines = ["| phase | without s | with history s | difference s |", "|---|---|---|---|"]
    for key, label in PHASES:
        a, b = without.get(key, 0.0), with_.get(key, 0.0)
        lines.append(f"| {label} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both parts, print the table, write it to docs/benchmarks.md."""
    parser = BenchParser(
        "bench.metric_history_bench",
        "SF 0.01, 1 repeat, 10 vs 20 drops",
        scale=Option(1.0, 0.01),
        repeats=Option(5, 1),
        drops=Option(1000, 20),
    )
    parser.add_argument("--skip-job", action="store_true", help="the history read only")
    parser.add_argument("--skip-read", action="store_true", help="the job only (no doc)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with spark_and_catalog("mh-bench-", "mh-bench") as (spark, nessie, tmp):
        if not args.skip_read:
            read_repeats = 1 if args.quick else max(args.repeats, 5)
            read = run_read((10, args.drops), read_repeats, spark)
            print(f"  read: {read}", flush=True)
        if args.skip_job:
            return 0
        job = run_job(args.scale, args.repeats, spark, nessie, tmp, warm_up=not args.quick)
        print(f"  job: {job}", flush=True)
        if args.skip_read:
            print(render_parts(job))
            return 0
    publish(
        args,
        argv,
        module="bench.metric_history_bench",
        section="metric_history_bench",
        title="Metric history: the job with it vs without; reading 1,000 drops vs 10",
        text=render(job, read, args.repeats),
        started=started,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
