"""The metrics table beside each data table (docs/metric-history.md): the audit's
metrics are appended to it on the ingest's branch (so the merge that publishes the data
publishes them), and the checks that learn from history read main's copy of it.

One table per data table (`<ns>.<table>__audit_metrics`): the data table's lock already
serializes its writers, so its history is a straight line of the drops main published.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from contracts.metric_history import (
    CHECK,
    METRICS_TABLE_COLUMNS,
    METRICS_TABLE_SUFFIX,
    SCOPE_FILE,
    SCOPE_TABLE,
    as_number,
)
from contracts.properties import INGEST_ID_PROPERTY
from contracts.report import CheckResult
from spark_jobs.errors import as_job_error, describe
from spark_jobs.profile import Measured
from spark_jobs.writer import CatalogTable, create_namespace, find_ingest_snapshot, load_table

SPARK_TYPES = {"string": T.StringType(), "timestamp": T.TimestampType(), "double": T.DoubleType()}
METRICS_SCHEMA = T.StructType(
    [
        T.StructField(name, SPARK_TYPES[kind], nullable)
        for name, kind, nullable in METRICS_TABLE_COLUMNS
    ]
)
# (metric, column) of a history series: the table's row count is (row_count, None).
Series = tuple[str, "str | None"]


@dataclass(frozen=True)
class Point:
    """One published value of a metric."""

    recorded_at: dt.datetime
    value: float


def metrics_ref(ref: CatalogTable) -> CatalogTable:
    """The metrics table of `ref`, in the same catalog and namespace."""
    return CatalogTable(ref.catalog, ref.namespace, ref.table + METRICS_TABLE_SUFFIX)


def read_history(
    spark: SparkSession, main_table: CatalogTable, wanted: dict[Series, int]
) -> dict[Series, list[Point]]:
    """The latest `wanted[series]` published values of each series (oldest first), from
    main's metrics table in one read of only the files of the drops the largest window
    needs; a series without history maps to [].

    The driver reads them through Iceberg's Java API (a few dozen rows of a few small
    files): a Spark query of them cost five times the CPU, for planning and a job
    (docs/benchmarks.md, "Metric history")."""
    history: dict[Series, list[Point]] = {series: [] for series in wanted}
    if not wanted:
        return history
    table = metrics_ref(main_table)
    try:
        metrics = load_table(spark, table)
        if metrics is None or metrics.currentSnapshot() is None:
            return history
        rows = _read_rows(spark, metrics, _window_start(metrics, max(wanted.values())), wanted)
    except Exception as exc:
        # Without its history the audit cannot judge: the run is an error, retried.
        raise as_job_error(exc, f"reading the metric history failed: {describe(exc)}") from exc
    newest_first: dict[Series, list] = {series: [] for series in wanted}
    for row in sorted(rows, key=lambda row: row["recorded_at"], reverse=True):
        series = (row["metric"], row["column_name"])
        if series in newest_first and len(newest_first[series]) < wanted[series]:
            newest_first[series].append(row)
    for series, kept in newest_first.items():
        history[series] = [
            Point(row["recorded_at"], float(row["value"]))
            for row in reversed(kept)
            if row["value"] is not None
        ]
    return history


class HistoryRead:
    """`read_history` in a background thread, started as soon as the run knows what its
    checks watch: the read does not depend on the write, and its waits (the catalog, the
    metadata and files it reads) overlap the vetting of the sources and the write.
    `result()` waits for it; a run that ends otherwise calls `wait()`, so no read of the
    run outlives it."""

    def __init__(self, spark: SparkSession, main_table: CatalogTable, wanted: dict[Series, int]):
        #: The series read, and how many of their latest values.
        self.wanted = wanted
        #: How long the read took, in its own thread, and how long the run waited for it.
        self.seconds = self.waited = 0.0
        self._future: Future | None = None
        self._done: dict[Series, list[Point]] | None = None
        if not wanted:  # nothing to read: no thread
            self._done = read_history(spark, main_table, wanted)
            return
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wap-history")
        try:
            self._future = pool.submit(self._read, spark, main_table, wanted)
        finally:
            pool.shutdown(wait=False)

    def _read(self, spark, main_table, wanted) -> dict[Series, list[Point]]:
        start = time.perf_counter()
        try:
            return read_history(spark, main_table, wanted)
        finally:
            self.seconds = time.perf_counter() - start

    def result(self) -> dict[Series, list[Point]]:
        """The history (as `read_history` returns it); raises what the read raised."""
        if self._done is None:
            start = time.perf_counter()
            try:
                self._done = self._future.result()
            finally:
                self.waited += time.perf_counter() - start
        return self._done

    def wait(self) -> None:
        """Block until the read is over, whatever its outcome."""
        if self._future is not None:
            self._future.exception()


def _window_start(metrics, drops: int) -> int | None:
    """The snapshot after which the latest `drops` published drops were appended, None
    to read the whole table. Main's metrics table is a straight line of appends, one per
    published drop (the data table's lock serializes its writers), so the window is the
    files the newest `drops` snapshots added (an incremental read of them, planned from
    their manifests alone). Any other history (a compaction, expired snapshots) is read
    whole."""
    snapshot = metrics.currentSnapshot()
    for _ in range(drops):
        if snapshot.operation() != "append":
            return None
        parent = snapshot.parentId()
        if parent is None:  # the table's whole history is within the window
            return None
        snapshot = metrics.snapshot(parent)
        if snapshot is None:  # expired: what lies before it cannot be read incrementally
            return None
    return snapshot.snapshotId()


def _read_rows(
    spark: SparkSession, metrics, start: int | None, wanted: dict[Series, int]
) -> list[dict]:
    """Table-scope rows of the wanted series (`recorded_at`, `metric`, `column_name`,
    `value`) appended after snapshot `start` (None: all), each cut to its window by the
    caller."""
    iceberg = spark._jvm.org.apache.iceberg
    scan = (
        iceberg.data.IcebergGenerics.read(metrics)
        .select(["recorded_at", "metric", "column_name", "value"])
        .where(_wanted(iceberg.expressions.Expressions, wanted))
    )
    if start is not None:
        scan = scan.appendsBetween(start, metrics.currentSnapshot().snapshotId())
    # recorded_at as Spark would return it: a TIMESTAMP in the driver's local time.
    util = iceberg.util.DateTimeUtil
    if metrics.schema().findField("recorded_at").type().shouldAdjustToUTC():
        micros_of, spark_type = util.microsFromTimestamptz, T.TimestampType()
    else:
        micros_of, spark_type = util.microsFromTimestamp, T.TimestampNTZType()
    records = scan.build()
    rows = []
    try:
        found = records.iterator()
        try:
            while found.hasNext():
                record = found.next()
                rows.append(
                    {
                        "recorded_at": spark_type.fromInternal(
                            micros_of(record.getField("recorded_at"))
                        ),
                        "metric": record.getField("metric"),
                        "column_name": record.getField("column_name"),
                        "value": record.getField("value"),
                    }
                )
        finally:
            found.close()
    finally:
        records.close()
    return rows


def _wanted(expressions, wanted: dict[Series, int]):
    """Iceberg's filter of table-scope rows of the wanted series (files whose column
    metrics rule them out are skipped, the rest filtered row by row)."""
    both, either = getattr(expressions, "and"), getattr(expressions, "or")  # Python keywords
    selected = None
    for metric, column in wanted:
        same_column = (
            expressions.isNull("column_name")
            if column is None
            else expressions.equal("column_name", column)
        )
        condition = both(expressions.equal("metric", metric), same_column)
        selected = condition if selected is None else either(selected, condition)
    return both(expressions.equal("scope", SCOPE_TABLE), selected)


def metric_rows(
    ingest_id: str,
    recorded_at: dt.datetime,
    measured: Iterable[Measured],
    checks: Iterable[CheckResult],
    files: dict[str, int | None],
) -> list[tuple]:
    """The rows one audit records: the profile, each check's measured value, and each
    source file's row count (`files`: the source's uri -> its rows)."""
    rows = [
        (ingest_id, recorded_at, SCOPE_TABLE, None, m.column, m.metric, None, m.value)
        for m in measured
    ]
    for check in checks:
        value = as_number(check.observed)
        if value is not None:
            rows.append((ingest_id, recorded_at, SCOPE_TABLE, None, None, CHECK, check.name, value))
    for uri, count in files.items():
        if count is not None:
            rows.append(
                (ingest_id, recorded_at, SCOPE_FILE, uri, None, "row_count", None, float(count))
            )
    return rows


def record_metrics(
    spark: SparkSession, branch_table: CatalogTable, ingest_id: str, rows: list[tuple]
) -> bool:
    """Append `rows` to the metrics table on the run's branch (creating it there), once
    per ingest: a re-run finds its earlier snapshot and appends nothing. Returns whether
    it appended.

    The rows (a few dozen) are written by the driver through Iceberg's Java API, one
    parquet file and one append commit: a Spark write of them would plan and run a job
    (and a Python worker to unpickle the rows) for the same file, about three times the
    cost (docs/benchmarks.md, "Metric history")."""
    table = metrics_ref(branch_table)
    try:
        existing = load_table(spark, table)
        if existing is not None and find_ingest_snapshot(existing, ingest_id) is not None:
            return False
        if existing is None:
            create_namespace(spark, table)
            columns = ", ".join(
                f"`{name}` {kind}{'' if nullable else ' NOT NULL'}"
                for name, kind, nullable in METRICS_TABLE_COLUMNS
            )
            spark.sql(
                f"CREATE TABLE IF NOT EXISTS {table.sql} ({columns}) USING iceberg "
                "TBLPROPERTIES ('format-version'='2')"
            )
            existing = load_table(spark, table)
        commit_metric_rows(spark, existing, ingest_id, rows)
        return True
    except Exception as exc:
        raise as_job_error(exc, f"recording the audit's metrics failed: {describe(exc)}") from exc


def commit_metric_rows(spark: SparkSession, table, ingest_id: str, rows: list[tuple]) -> None:
    """One data file of `rows` (tuples in METRICS_TABLE_COLUMNS order) and one append
    of it to the Java Iceberg `table`, its snapshot marked with `ingest_id`."""
    iceberg = spark._jvm.org.apache.iceberg
    parquet = iceberg.FileFormat.PARQUET
    schema = table.schema()
    factory = iceberg.data.GenericAppenderFactory(schema, table.spec()).setAll(table.properties())
    output = iceberg.io.OutputFileFactory.builderFor(table, 0, 0).format(parquet).build()
    writer = factory.newDataWriter(output.newOutputFile(), parquet, None)
    template = iceberg.data.GenericRecord.create(schema)
    kinds = [(name, kind) for name, kind, _ in METRICS_TABLE_COLUMNS]
    moments = {}  # the Java value of each timestamp (one per audit)
    try:
        for row in rows:
            record = template.copy()
            # Not zip(strict=True): EMR runs Python 3.9 (a row has every column).
            for (name, kind), value in zip(kinds, row):  # noqa: B905
                if value is None:
                    continue
                if kind == "timestamp":
                    if value not in moments:
                        moments[value] = _java_timestamp(iceberg, schema.findField(name), value)
                    value = moments[value]
                elif kind == "double":
                    value = float(value)  # py4j would pass an int as a Java Integer
                record.setField(name, value)
            writer.write(record)
    finally:
        writer.close()
    table.newAppend().appendFile(writer.toDataFile()).set(INGEST_ID_PROPERTY, ingest_id).commit()


def _java_timestamp(iceberg, field, value: dt.datetime):
    """`value` as the Java value Iceberg's writer takes for `field`: the instant Spark
    would store (a naive value is the driver's local time, as in `createDataFrame`), an
    OffsetDateTime for a timestamp with zone, else a LocalDateTime in UTC."""
    micros = T.TimestampType().toInternal(value)
    if field.type().shouldAdjustToUTC():
        return iceberg.util.DateTimeUtil.timestamptzFromMicros(micros)
    return iceberg.util.DateTimeUtil.timestampFromMicros(micros)
