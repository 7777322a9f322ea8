"""A drop with a few bad rows quarantined vs the same rows all clean (issue 40).

    python -m bench.quarantine_bench            # 1,000,000 rows, median of 3
    python -m bench.quarantine_bench --quick    # 2,000 rows, 1 repeat: a smoke test

The same orders-like rows as bench.csv_bench, as one parquet file, ingested by our job
(`run_ingest`: branch write, checks, report) and published (the Nessie merge) into an
empty table whose config quarantines on two checks (a range on `amount`, accepted values
of `status`) under a gate, beside row_count and not_null:
- clean: every row passes; nothing is set aside (the quarantine table is created, empty);
- dirty: 0.1% of the rows have a negative amount and an unknown status, so fail both
         quarantine checks: they go to the quarantine table, the rest to the table.
Issue 40's target: dirty / clean <= 1.15, wall and CPU, in one run (variant order
alternated per repeat). Results go to stdout and docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.cli import Benchmark, Option
from bench.csv_bench import STATUSES, OrdersBench, _orders
from bench.scratch import spark_and_catalog
from bench.timing import Sample, medians, met, paired_ratio, print_sample, rotated

BENCHMARK = Benchmark(
    "bench.quarantine_bench",
    "Quarantine: 0.1% bad rows set aside vs all clean (issue 40)",
    "2,000 rows, 1 repeat, no warm-up (smoke)",
    {"rows": Option(1_000_000, 2_000), "repeats": Option(3, 1)},
)

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".bench" / "quarantine"
TARGET = 1.15
BAD_FRACTION = 0.001
VARIANTS = ("clean", "dirty")
TABLE_CONFIG = (
    "quarantine: {max_fraction: 0.01}\n"
    "checks:\n"
    "  - {kind: row_count, min: 1}\n"
    "  - {kind: not_null, column: order_id}\n"
    "  - {kind: range, name: amount_range, column: amount, min: 0, max: 100000,\n"
    "     on_fail: quarantine}\n"
    "  - {kind: accepted_values, name: known_status, column: status,\n"
    f"     values: [{', '.join(STATUSES)}], on_fail: quarantine}}\n"
)
# The report's timings shown, in order (seconds; `quarantine_s` is within `append_s`).
TIMINGS = ("prepare_s", "append_s", "quarantine_s", "hash_s", "audit_s", "publish_s")
# The CPU seconds shown apart: the whole run's, and those of setting the rows aside.
CPU = ("cpu_s", "quarantine_cpu_s")


def generate(rows: int, under: Path = WORK) -> dict[str, Path]:
    """The clean orders and a copy with every 1/BAD_FRACTION-th row bad on both
    quarantine checks, as parquet; cached under `under`."""
    folder = under / f"{rows}"
    files = {"clean": folder / "clean.parquet", "dirty": folder / "dirty.parquet"}
    if all(path.exists() for path in files.values()):
        return files
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    table = _orders(rows)
    step = round(1 / BAD_FRACTION)
    bad = pa.array(np.arange(rows) % step == step // 2)
    dirty = table.set_column(
        table.schema.get_field_index("amount"),
        "amount",
        pc.if_else(bad, pc.negate(table.column("amount")), table.column("amount")),
    )
    dirty = dirty.set_column(
        dirty.schema.get_field_index("status"),
        "status",
        pc.if_else(bad, pa.scalar("lost"), dirty.column("status")),
    )
    for name, data in (("clean", table), ("dirty", dirty)):
        pq.write_table(data, files[name], row_group_size=128 * 1024)
    return files


def bad_rows(rows: int) -> int:
    """How many rows of `generate(rows)`'s dirty file fail."""
    step = round(1 / BAD_FRACTION)
    return sum(1 for _ in range(step // 2, rows, step))


class QuarantineBench(OrdersBench):
    """One ingest + publish of the clean or the dirty file, under `TABLE_CONFIG`."""

    table_config = TABLE_CONFIG

    def run(self, variant: str, source: Path) -> Sample:
        """One ingest + publish of `source`; checks it set aside what it should. The CPU
        seconds of setting the rows aside (`Split.set_aside`, after the table's write)
        are measured apart (`quarantine_cpu_s`)."""
        from spark_jobs.quarantine import Split

        spent = [0.0]
        original = Split.set_aside

        def timed(split, *args, **kwargs):
            before = self.cpu()
            try:
                return original(split, *args, **kwargs)
            finally:
                spent[0] += self.cpu() - before

        Split.set_aside = timed
        try:
            report, start, job_done, end = self._ingest(source, self.config)
        finally:
            Split.set_aside = original
        expected = bad_rows(self.rows) if variant == "dirty" else 0
        if report["outcome"] != "passed" or report["quarantined_rows"] != expected:
            raise RuntimeError(
                f"bench run {report['outcome']} with {report['quarantined_rows']} rows "
                f"quarantined, expected {expected}: {report['reason']}"
            )
        if report["rows_written"] != self.rows - expected:
            raise RuntimeError(f"wrote {report['rows_written']} rows of {self.rows - expected}")
        parts = {k: float(v) for k, v in report["timings"].items() if isinstance(v, (int, float))}
        parts.update(
            {"job_s": job_done - start, "publish_s": end - job_done, "quarantine_cpu_s": spent[0]}
        )
        return self._sample(end - start, parts)


def run(rows: int, repeats: int, warm: bool) -> list[dict]:
    """Both variants on `generate(rows)`'s files, `repeats` times (order alternated), in a
    SparkSession and Nessie server of its own (stopped afterwards): each variant's medians,
    and the medians of the paired dirty / clean ratios (wall and CPU). `warm`: each
    variant first on 2,000 rows, then once at full size, not measured."""
    with spark_and_catalog("quarantine-bench-", "quarantine-bench") as (spark, nessie, work):
        files = generate(rows)
        bench = QuarantineBench(spark, nessie, work, rows)
        if warm:
            warm_files = generate(2_000)
            warmer = QuarantineBench(spark, nessie, work, 2_000)
            for variant in VARIANTS:
                warmer.run(variant, warm_files[variant])
            # The JIT keeps compiling over the first full-size runs: one of each, not measured.
            for variant in VARIANTS:
                bench.run(variant, files[variant])
        samples: dict[str, list[Sample]] = {v: [] for v in VARIANTS}
        for repeat in range(repeats):
            for variant in rotated(VARIANTS, repeat):
                sample = bench.run(variant, files[variant])
                samples[variant].append(sample)
                print_sample(repeat, variant, sample)
    return [
        {
            **{v: medians(samples[v]) for v in VARIANTS},
            "paired_wall": paired_ratio(samples["dirty"], samples["clean"]),
            "paired_cpu": paired_ratio(samples["dirty"], samples["clean"], "cpu_s"),
        }
    ]


def render(results: list[dict], rows: int, repeats: int, load: str) -> str:
    """The markdown tables (also printed)."""
    [row] = results
    clean, dirty = row["clean"], row["dirty"]
    wall, cpu = row["paired_wall"], row["paired_cpu"]
    lines = [
        f"{rows:,} rows in one parquet file; dirty: {bad_rows(rows):,} of them "
        f"({BAD_FRACTION:.1%}) fail both quarantine checks.",
        "",
        "| | clean s | dirty s | dirty / clean (paired median) | clean cpu-s | dirty cpu-s "
        "| cpu dirty / clean (paired median) | target |",
        "|---|---|---|---|---|---|---|---|",
        f"| ingest + publish | {clean['total_s']:.2f} | {dirty['total_s']:.2f} | "
        f"**{wall:.2f}** | {clean['cpu_s']:.1f} | {dirty['cpu_s']:.1f} | **{cpu:.2f}** | "
        f"<= {TARGET}: wall {met(wall, TARGET)}, cpu {met(cpu, TARGET)} |",
        "",
        "Where the time goes (medians, seconds; the job's report `timings`, "
        "`quarantine_s` being the part of `append_s` after the table's write that sets "
        "the rows aside; publish is the Nessie merge):",
        "",
        "| variant | "
        + " | ".join(k.removesuffix("_s") for k in TIMINGS)
        + " | cpu-s | of which setting aside, cpu-s |",
        "|---|" + "---|" * (len(TIMINGS) + len(CPU)),
    ]
    for variant in VARIANTS:
        lines.append(
            f"| {variant} | "
            + " | ".join(f"{row[variant].get(k, 0.0):.2f}" for k in (*TIMINGS, *CPU))
            + " |"
        )
    lines += [
        "",
        f"Median of {repeats}, variant order alternated per repeat; one local SparkSession "
        "(local[2], 4g driver) and one Nessie server; each run appends one file to an "
        "empty pre-created table. CPU seconds are the Spark JVM's and this process's. "
        f"Load on the machine while it ran: {load}.",
    ]
    return "\n".join(lines)


def _load() -> str:
    import os

    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} (1 min), {five:.1f} (5 min) on {os.cpu_count()} cores"


def markdown(args: argparse.Namespace) -> str:
    """The tables of a run at the sizes of `args`."""
    results = run(args.rows, args.repeats, warm=not args.quick)
    return render(results, args.rows, args.repeats, _load())


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the tables, write them to docs/benchmarks.md."""
    return BENCHMARK.main(argv, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
