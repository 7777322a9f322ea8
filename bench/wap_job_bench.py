"""WAP job vs a plain Iceberg append vs the seed approach, on TPC-H lineitem.

    python -m bench.wap_job_bench            # SF 0.1 and SF 1, clean and dirty, median of 5
    python -m bench.wap_job_bench --quick    # SF 0.01, 1 repeat, no warm-up: a smoke test

Variants, all in one SparkSession with the same settings, each appending one file
into an empty, pre-created table:
- append: plain Iceberg append of the file to main (the baseline, the limit);
- wap:    our job (branch, write, 10 checks: metrics first, one aggregation pass,
          samples only on failure) + publish (Nessie merge) when the audit passed;
- seed:   branch, the same write, one `SELECT count(*) ... WHERE` per check, publish.
Overhead = variant time - append time. Results go to stdout and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from bench.cli import Benchmark, Option, comma_separated
from bench.scratch import Nessie, spark_and_catalog
from bench.timing import Sample, medians, rotated
from contracts.properties import INGEST_ID_PROPERTY

BENCHMARK = Benchmark(
    "bench.wap_job_bench",
    "WAP job vs plain append vs seed approach",
    "SF 0.01, 1 repeat, no warm-up (smoke test)",
    {
        "scales": Option(
            [0.1, 1.0],
            [0.01],
            help="comma-separated TPC-H scale factors",
            parse=comma_separated(float),
        ),
        "repeats": Option(5, 1),
    },
)

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".bench" / "wap_job"

# The 10 checks, as our table config and as the seed's per-check violation predicate.
CHECKS = [
    ("{kind: not_null, column: l_orderkey}", "l_orderkey IS NULL"),
    ("{kind: not_null, column: l_partkey}", "l_partkey IS NULL"),
    ("{kind: range, column: l_quantity, min: 1, max: 50}", "l_quantity < 1 OR l_quantity > 50"),
    ("{kind: range, column: l_discount, min: 0, max: 0.1}", "l_discount < 0 OR l_discount > 0.1"),
    ("{kind: range, column: l_tax, min: 0, max: 0.08}", "l_tax < 0 OR l_tax > 0.08"),
    (
        "{kind: range, column: l_shipdate, min: 1992-01-01, max: 1998-12-31}",
        "l_shipdate < DATE'1992-01-01' OR l_shipdate > DATE'1998-12-31'",
    ),
    (
        "{kind: accepted_values, column: l_returnflag, values: [A, N, R]}",
        "l_returnflag NOT IN ('A', 'N', 'R')",
    ),
    (
        "{kind: accepted_values, column: l_linestatus, values: [O, F]}",
        "l_linestatus NOT IN ('O', 'F')",
    ),
    (
        "{kind: accepted_values, column: l_shipmode, "
        "values: [AIR, 'REG AIR', RAIL, SHIP, TRUCK, MAIL, FOB]}",
        "l_shipmode NOT IN ('AIR', 'REG AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB')",
    ),
    (
        "{kind: expression, name: received_after_shipped, sql: 'l_receiptdate >= l_shipdate'}",
        "NOT (l_receiptdate >= l_shipdate)",
    ),
]
TABLE_CONFIG = "schema_policy: additive\nchecks:\n" + "".join(f"  - {c}\n" for c, _ in CHECKS)
# Dirty data: every n-th row breaks one check (spread over every row group, so no
# file can be skipped): 5 of the 10 checks fail.
INJECT = {
    "l_returnflag": 1000,
    "l_quantity": 997,
    "l_receiptdate": 1013,
    "l_partkey": 1499,
    "l_discount": 2003,
}


def generate(scale: float) -> tuple[Path, Path]:
    """lineitem at `scale` (tpchgen-cli) and a dirty copy; cached under .bench/."""
    folder = WORK / f"sf{scale:g}"
    clean, dirty = folder / "lineitem.parquet", folder / "lineitem_dirty.parquet"
    if not clean.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cli = Path(sys.executable).parent / "tpchgen-cli"
        subprocess.run(
            [
                str(cli),
                "parquet",
                "-s",
                f"{scale:g}",
                "--tables=lineitem",
                f"--output-dir={folder}",
            ],
            check=True,
            capture_output=True,
        )
    if not dirty.exists():
        _inject_violations(clean, dirty)
    return clean, dirty


def _inject_violations(clean: Path, dirty: Path) -> None:
    import datetime as dt
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pq.ParquetFile(clean)
    # Plain strings and nullable fields (the dirty file has nulls in l_partkey).
    schema = pa.schema(
        [
            pa.field(
                f.name, pa.string() if pa.types.is_string_view(f.type) else f.type, nullable=True
            )
            for f in source.schema_arrow
        ]
    )
    bad = {
        "l_returnflag": "X",
        "l_quantity": Decimal("0.00"),
        "l_partkey": None,
        "l_discount": Decimal("0.50"),
    }
    offset = 0
    with pq.ParquetWriter(dirty, schema) as writer:
        for group in range(source.num_row_groups):
            table = source.read_row_group(group).cast(schema)
            shipdate = table.column("l_shipdate")
            for name, every in INJECT.items():
                values = table.column(name).to_pylist()
                for i in range(-offset % every, table.num_rows, every):
                    values[i] = (
                        shipdate[i].as_py() - dt.timedelta(days=1)
                        if name == "l_receiptdate"
                        else bad[name]
                    )
                index = schema.get_field_index(name)
                table = table.set_column(
                    index, schema.field(index), pa.array(values, schema.field(index).type)
                )
            writer.write_table(table)
            offset += table.num_rows


class Bench:
    """One SparkSession, one Nessie server, fresh tables per run."""

    def __init__(self, spark, nessie: Nessie, work: Path):
        self.spark, self.nessie, self.work = spark, nessie, work
        self.count = 0
        self.jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        self._cpu_start = 0.0

    def cpu(self) -> float:
        """CPU seconds of the Spark JVM (driver + local executors) and this process
        (PySpark, the Nessie server threads): a measure of work that contention on a
        shared machine distorts far less than wall time."""
        ticks = os.sysconf("SC_CLK_TCK")
        fields = Path(f"/proc/{self.jvm_pid}/stat").read_text().rsplit(")", 1)[1].split()
        jvm = (int(fields[11]) + int(fields[12])) / ticks
        own = resource.getrusage(resource.RUSAGE_SELF)
        return jvm + own.ru_utime + own.ru_stime

    def _start(self) -> float:
        self._cpu_start = self.cpu()
        return time.perf_counter()

    def _sample(self, total_s: float, parts: dict | None = None) -> Sample:
        return Sample(total_s, parts or {}, self.cpu() - self._cpu_start)

    def _fresh_table(self, source: Path) -> str:
        self.count += 1
        name = f"li_{self.count}"
        schema = self.spark.read.parquet(source.as_uri()).schema
        columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in schema.fields)
        return self._create_table(name, columns)

    def _create_table(self, name: str, columns: str) -> str:
        """An empty Iceberg v2 table `lake.bench.<name>` of `columns` (DDL); its name."""
        self.spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.bench")
        self.spark.sql(
            f"CREATE TABLE lake.bench.{name} ({columns}) USING iceberg "
            "TBLPROPERTIES ('format-version' = '2')"
        )
        return name

    def _ingest(
        self, source: Path, config: Path, table: str | None = None
    ) -> tuple[dict, float, float, float]:
        """The WAP job on `source` into `table` (default: a fresh one), on a branch of its
        own, published when the audit passed: its report and the times it started, the
        job ended and the publish ended (`start` also starts the CPU clock)."""
        from spark_jobs.wap_job import JobArgs, run_ingest

        table = table or self._fresh_table(source)
        ingest_id = uuid.uuid4().hex[:16]
        branch = f"wap_bench_{table}_{ingest_id[:8]}"
        start = self._start()
        self.nessie.branch(branch)
        report = run_ingest(
            self.spark,
            JobArgs(
                sources=[source.as_uri()],
                table=f"bench.{table}",
                branch=branch,
                ingest_id=ingest_id,
                report_uri=(self.work / f"{ingest_id}.json").as_uri(),
                table_config_uri=config.as_uri(),
            ),
        )
        job_done = time.perf_counter()
        if report["outcome"] == "passed":
            self.nessie.publish(branch, report["branch_hash"])
        return report, start, job_done, time.perf_counter()

    def append(self, source: Path) -> Sample:
        table = self._fresh_table(source)
        start = self._start()
        frame = self.spark.read.parquet(source.as_uri())
        writing = time.perf_counter()
        frame.writeTo(f"lake.bench.{table}").append()
        end = time.perf_counter()
        return self._sample(end - start, {"append_call_s": end - writing})

    def wap(self, source: Path) -> Sample:
        config = self.work / "lineitem.yaml"
        config.write_text(TABLE_CONFIG)
        report, start, job_done, end = self._ingest(source, config)
        if report["outcome"] in ("rejected", "error"):
            raise RuntimeError(f"bench run {report['outcome']}: {report['reason']}")
        timings = report["timings"]
        settled = [c["settled_by"] for c in report["checks"]]
        parts = {
            "job_s": job_done - start,
            "publish_s": end - job_done,
            "read_s": timings["read_s"],
            "write_s": timings["write_s"],
            "append_call_s": timings["append_s"],
            "metrics_s": timings["audit_metrics_s"],
            "scan_s": timings.get("audit_scan_s", 0.0),
            "samples_s": timings.get("audit_samples_s", 0.0),
            "audit_s": timings["audit_s"],
            "by_metrics": settled.count("metrics"),
            "by_write": settled.count("write"),
            "by_scan": settled.count("scan"),
            "failed_checks": sum(c["status"] == "failed" for c in report["checks"]),
        }
        return self._sample(end - start, parts)

    def seed(self, source: Path) -> Sample:
        from spark_jobs.catalog import configure_run_catalog

        table = self._fresh_table(source)
        ingest_id = uuid.uuid4().hex[:16]
        branch = f"wap_seed_{table}_{ingest_id[:8]}"  # the rules let only wap_* be opened
        catalog = f"seed_{ingest_id[:8]}"
        start = self._start()
        self.nessie.branch(branch)
        configure_run_catalog(self.spark, "lake", catalog, branch)
        target = f"{catalog}.bench.{table}"
        frame = self.spark.read.parquet(source.as_uri())
        writing = time.perf_counter()
        frame.writeTo(target).option(f"snapshot-property.{INGEST_ID_PROPERTY}", ingest_id).append()
        written = time.perf_counter()
        violations = [
            self.spark.sql(f"SELECT count(*) FROM {target} WHERE {predicate}").first()[0]
            for _, predicate in CHECKS
        ]
        audited = time.perf_counter()
        if not any(violations):
            self.nessie.publish(branch, self.nessie.ref(branch)["hash"])
        end = time.perf_counter()
        return self._sample(
            end - start,
            {
                "write_s": written - start,
                "append_call_s": written - writing,
                "audit_s": audited - written,
                "publish_s": end - audited,
                "failed_checks": sum(1 for v in violations if v),
            },
        )


VARIANTS = ("append", "wap", "seed")


def run(scales: list[float], repeats: int, *, warm_up: bool = True) -> list[dict]:
    """Every scale x data x variant, `repeats` times (variant order rotated); medians.
    `warm_up`: run each variant once on SF 0.01 first, unmeasured (a smoke test's single
    repeat measures nothing anyway)."""
    with spark_and_catalog("wap-bench-", "wap-job-bench") as (spark, nessie, tmp):
        bench = Bench(spark, nessie, tmp)
        rows = []
        files = {scale: generate(scale) for scale in scales}
        if warm_up:  # JIT and catalog warm-up, not measured
            warm_clean, warm_dirty = generate(0.01)
            for variant in VARIANTS:
                getattr(bench, variant)(warm_clean)
                getattr(bench, variant)(warm_dirty)
        for scale in scales:
            for label, source in zip(("clean", "dirty"), files[scale], strict=True):
                samples: dict[str, list[Sample]] = {v: [] for v in VARIANTS}
                for repeat in range(repeats):
                    for variant in rotated(VARIANTS, repeat):
                        samples[variant].append(getattr(bench, variant)(source))
                rows.append(
                    {
                        "scale": scale,
                        "data": label,
                        **{v: medians(samples[v]) for v in VARIANTS},
                        "overhead": _paired_overheads(samples),
                    }
                )
                _print_row(rows[-1])
    return rows


def _paired_overheads(samples: dict[str, list[Sample]]) -> dict[str, float]:
    """Median over repeats of (variant - append) within the same repeat, wall and CPU.

    The runs of one repeat follow each other, so load that drifts over minutes
    cancels out; a difference of two separate medians would keep it.
    """
    paired = {}
    for variant in ("wap", "seed"):
        pairs = list(zip(samples[variant], samples["append"], strict=True))
        paired[variant] = statistics.median(v.total_s - a.total_s for v, a in pairs)
        paired[f"{variant}_cpu"] = statistics.median(v.cpu_s - a.cpu_s for v, a in pairs)
        # The same difference split at the Spark append call, the one step every variant
        # shares: outside it (planning, audit, publish) and inside it (the write itself,
        # where a 7-9 s run swings by a second from one repeat to the next).
        paired[f"{variant}_outside"] = statistics.median(
            _outside(v) - _outside(a) for v, a in pairs
        )
        paired[f"{variant}_call"] = statistics.median(
            v.parts["append_call_s"] - a.parts["append_call_s"] for v, a in pairs
        )
    return paired


def _outside(sample: Sample) -> float:
    return sample.total_s - sample.parts["append_call_s"]


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.2f}" if theirs > 0 else "n/a"


def _print_row(row: dict) -> None:
    print(
        f"  measured SF {row['scale']:g} {row['data']}: "
        + ", ".join(
            f"{v} {row[v]['total_s']:.2f}s ({row[v]['cpu_s']:.1f} cpu-s)" for v in VARIANTS
        ),
        flush=True,
    )


def _overhead_row(row: dict, measure: str, overhead: str, digits: int, *more: str) -> str:
    """A table row of one scale and data: each variant's median `measure` (`total_s` or
    `cpu_s`) and the paired overheads of wap and seed (`overhead`: the suffix of their
    keys), to `digits` decimals; the ratio of the two overheads; then `more` cells."""
    over_wap, over_seed = row["overhead"][f"wap{overhead}"], row["overhead"][f"seed{overhead}"]
    values = [*(row[v][measure] for v in VARIANTS), over_wap, over_seed]
    cells = [
        f"{row['scale']:g}",
        row["data"],
        *(f"{value:.{digits}f}" for value in values),
        _ratio(over_wap, over_seed),
        *more,
    ]
    return "| " + " | ".join(cells) + " |"


def render(rows: list[dict], repeats: int) -> str:
    """The markdown table (also printed)."""
    from spark_jobs.wap_job import DEFAULT_OBSERVE_MAX_BYTES, OBSERVE_MAX_BYTES_CONF

    lines = [
        "| SF | data | append s | wap s | seed s | wap overhead s | seed overhead s | "
        "wap/seed overhead | wap x append | seed x append |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        # Each variant's time as a multiple of the append's.
        times = [f"{row[v]['total_s'] / row['append']['total_s']:.2f}" for v in ("wap", "seed")]
        lines.append(_overhead_row(row, "total_s", "", 2, *times))
    lines += [
        "",
        "The same runs in CPU seconds (Spark JVM + Python process; on a shared machine "
        "wall time swings with other load, CPU time much less):",
        "",
        "| SF | data | append cpu | wap cpu | seed cpu | wap overhead | seed overhead | "
        "wap/seed overhead |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_overhead_row(row, "cpu_s", "_cpu", 1) for row in rows]
    lines += [
        "",
        "The wall-time overheads split at the Spark append call that every variant "
        "makes (medians of per-repeat differences to the append run): outside it, "
        "what each approach adds around the same write; inside it, how that variant's "
        "write compared with the plain append's (observing checks during small writes "
        "shows here, and so does the write's swing between runs; the job's call also "
        "reads back its snapshot, ~0.01 s):",
        "",
        "| SF | data | wap outside s | seed outside s | wap/seed outside | "
        "wap write - append write s | seed write - append write s |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        over = row["overhead"]
        lines.append(
            f"| {row['scale']:g} | {row['data']} | {over['wap_outside']:.2f} | "
            f"{over['seed_outside']:.2f} | "
            f"{_ratio(over['wap_outside'], over['seed_outside'])} | "
            f"{over['wap_call']:+.2f} | {over['seed_call']:+.2f} |"
        )
    lines += [
        "",
        "Where the time goes (medians, seconds):",
        "",
        "| SF | data | wap: prepare | wap: write+commit | wap: audit (metrics / scan / "
        "samples) | wap: publish | checks settled by metrics / write / scan, failed "
        "| seed: write | seed: 10 queries | seed: publish |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        w, s = row["wap"], row["seed"]
        lines.append(
            f"| {row['scale']:g} | {row['data']} | {w['read_s']:.2f} | "
            f"{w['write_s']:.2f} | {w['audit_s']:.2f} ({w['metrics_s']:.2f} / "
            f"{w['scan_s']:.2f} / {w['samples_s']:.2f}) | {w['publish_s']:.3f} | "
            f"{w['by_metrics']:.0f} / {w['by_write']:.0f} / {w['by_scan']:.0f}, "
            f"{w['failed_checks']:.0f} | {s['write_s']:.2f} | {s['audit_s']:.2f} | "
            f"{s['publish_s']:.3f} |"
        )
    lines += [
        "",
        f"Median of {repeats}; an overhead is the median of the per-repeat "
        "differences to the append run of the same repeat; one local SparkSession "
        "(local[2], 4g driver) and one "
        "Nessie server for all variants. Publish runs only when the audit passed "
        "(dirty data stays on its branch). `wap: prepare` is vetting the file, reading "
        "its footer, planning the schema and compiling the checks; `write+commit` is "
        "the append (observing the checks metrics never settle only for sources up "
        f"to {DEFAULT_OBSERVE_MAX_BYTES >> 20} MiB, `{OBSERVE_MAX_BYTES_CONF}`), the "
        "Iceberg commit to Nessie "
        "and the branch-hash read; the audit settles checks from file metrics "
        "(`metrics`), from the aggregates observed during the write (`write`) or from "
        "one aggregation pass (`scan`), then samples violating rows with one LIMITed "
        "query when something failed.",
    ]
    return "\n".join(lines)


def markdown(args: argparse.Namespace) -> str:
    """The tables of a run at the sizes of `args`."""
    return render(run(args.scales, args.repeats, warm_up=not args.quick), args.repeats)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the table, write it to docs/benchmarks.md."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
