"""A benchmark's runs of the WAP job in its own SparkSession, on its own Nessie: fresh
tables, one ingest and its publish, timed in wall and CPU seconds (`Bench`)."""

from __future__ import annotations

import resource
import time
import uuid
from pathlib import Path

from bench.cpu import process_cpu_seconds
from bench.scratch import Nessie
from bench.timing import Sample


class Bench:
    """One SparkSession, one Nessie server, fresh tables per run (a subclass runs the
    variants it compares)."""

    def __init__(self, spark, nessie: Nessie, work: Path):
        self.spark, self.nessie, self.work = spark, nessie, work
        self.count = 0
        self.jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        self._cpu_start = 0.0

    def cpu(self) -> float:
        """CPU seconds of the Spark JVM (driver + local executors) and this process
        (PySpark, the Nessie server threads): a measure of work that contention on a
        shared machine distorts far less than wall time."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return process_cpu_seconds(self.jvm_pid) + own.ru_utime + own.ru_stime

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
