"""The metrics table beside each data table (docs/metric-history.md): the audit's
metrics are appended to it on the ingest's branch (so the merge that publishes the data
publishes them), and the checks that learn from history read main's copy of it.

One table per data table (`<ns>.<table>__audit_metrics`): the data table's lock already
serializes its writers, so its history is a straight line of the drops main published.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.utils import AnalysisException

from contracts.metric_history import (
    CHECK,
    METRICS_TABLE_COLUMNS,
    METRICS_TABLE_SUFFIX,
    SCOPE_FILE,
    SCOPE_TABLE,
    as_number,
)
from contracts.properties import INGEST_ID_PROPERTY, METRICS_FILE_PROPERTY
from contracts.report import CheckResult
from spark_jobs.errors import as_job_error, describe
from spark_jobs.metrics import load_iceberg_table
from spark_jobs.profile import Measured
from spark_jobs.writer import CatalogTable, create_namespace, find_ingest_snapshot

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
    (docs/benchmarks.md, "Metric history"). The window's files are the ones its
    snapshots name (`wap.metrics-file`): the table's manifests, which merge appends
    gather into one listing every drop, are not read."""
    history: dict[Series, list[Point]] = {series: [] for series in wanted}
    if not wanted:
        return history
    try:
        metrics = _load_metrics(spark, metrics_ref(main_table))
        if metrics is None or metrics.currentSnapshot() is None:
            return history
        drops = max(wanted.values())
        files = _window_files(metrics, drops)
        if files is not None:
            rows = _read_files(spark, metrics, files)
        else:
            rows = _read_rows(spark, metrics, _window_start(metrics, drops), wanted)
    except Exception as exc:
        # Without its history the audit cannot judge: the run is an error, retried.
        raise as_job_error(exc, f"reading the metric history failed: {describe(exc)}") from exc
    newest_first: dict[Series, list] = {series: [] for series in wanted}
    for row in sorted(rows, key=lambda row: row["recorded_at"], reverse=True):
        series = (row["metric"], row["column_name"])
        if row["scope"] != SCOPE_TABLE:
            continue
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


def _load_metrics(spark: SparkSession, ref: CatalogTable):
    """The Java Iceberg metrics table, None when it does not exist: one load of its
    metadata where `load_table` makes two (the catalog's existence check loads it too,
    and the metadata lists every published drop's snapshot). Only a failed load asks
    the catalog whether the table exists, as `load_table` does."""
    try:
        return load_iceberg_table(spark, ref.sql)
    except AnalysisException:
        if not spark.catalog.tableExists(ref.sql):
            return None
        raise


class _WindowWalk:
    """The latest `drops` snapshots of a metrics table, newest first, walked from its
    current one by parent ids while they are appends: the line of published drops that
    `_window_files` and `_window_start` read. Once iterated, `end` says why the walk
    ended: FULL, `drops` appends walked (`before` is the snapshot before them); CUT, the
    same but the snapshot before them is no longer in the metadata (`KEPT_DROPS`); BEGINS,
    the table's history begins within the window; BROKEN, a snapshot is not an append
    or has expired (a compaction, a delete, metadata that no longer lists it)."""

    FULL, CUT, BEGINS, BROKEN = "full", "cut", "begins", "broken"

    def __init__(self, metrics, drops: int):
        self._metrics = metrics
        self._drops = drops
        self.end: str | None = None
        self.before = None

    def __iter__(self):
        snapshot = self._metrics.currentSnapshot()
        for walked in range(1, self._drops + 1):
            if snapshot.operation() != "append":
                self.end = self.BROKEN
                return
            yield snapshot
            parent = snapshot.parentId()
            if parent is None:
                self.end = self.BEGINS
                return
            snapshot = self._metrics.snapshot(parent)
            if snapshot is None:  # expired, or dropped from the metadata
                self.end = self.CUT if walked == self._drops else self.BROKEN
                return
        self.end, self.before = self.FULL, snapshot


def _window_files(metrics, drops: int) -> list[tuple[str, int]] | None:
    """(location, size) of the data file each of the latest `drops` snapshots added,
    newest first, when each is an append of `commit_metric_rows` (which names its one
    file in the snapshot's summary); None when one is not (drops recorded before the
    summary named the file, a compaction, a delete) or one within the window is no
    longer in the metadata (its file is not named here), and the caller plans the read
    from the manifests. The snapshot before the window need not be there."""
    walk = _WindowWalk(metrics, drops)
    files = []
    for snapshot in walk:
        summary = snapshot.summary()
        location = summary.get(METRICS_FILE_PROPERTY)
        if location is None or summary.get("added-data-files") != "1":
            return None
        files.append((location, int(summary.get("added-files-size"))))
    # BEGINS: the table's whole history is within the window; CUT: the window is whole.
    return files if walk.end != walk.BROKEN else None


# What the read keeps of each row, in the order Iceberg's JSON names them by field id.
READ_COLUMNS = ("scope", "recorded_at", "metric", "column_name", "value")
# Rows per py4j answer of `_read_files`: about 4 KB of JSON, under py4j's 8 KB.
ROWS_PER_ANSWER = 50


def _read_files(spark: SparkSession, metrics, files: list[tuple[str, int]]) -> list[dict]:
    """The rows (`READ_COLUMNS`) of the metrics table's data `files`: read by Iceberg's
    parquet reader on the driver and handed to Python as one JSON text (Iceberg's
    single-value JSON of a list of structs), not a py4j call per row and field."""
    iceberg = spark._jvm.org.apache.iceberg
    projection = metrics.schema().select(list(READ_COLUMNS))
    io = metrics.io()
    readers = spark._jvm.java.util.ArrayList()
    for location, size in files:
        source = io.newInputFile(location, size)
        reader = iceberg.InternalData.read(iceberg.FileFormat.PARQUET, source)
        readers.add(reader.project(projection).build())
    records = iceberg.io.CloseableIterable.concat(readers)
    try:
        collected = iceberg.relocated.com.google.common.collect.Lists.newArrayList(records)
    finally:
        records.close()
    # In chunks: a py4j answer over 8 KB (the JVM writes it in two parts, TCP's Nagle
    # holds the second until the first is acknowledged, which the receiver delays) takes
    # 40 ms more, whatever its size (py4j issue 516); a window's 790 rows were 66 KB.
    list_type = iceberg.types.Types.ListType.ofRequired(0, projection.asStruct())
    count = collected.size()
    chunks = [
        iceberg.SingleValueParser.toJson(
            list_type, collected.subList(start, min(start + ROWS_PER_ANSWER, count))
        )
        for start in range(0, count, ROWS_PER_ANSWER)
    ]
    ids = {name: str(projection.findField(name).fieldId()) for name in READ_COLUMNS}
    timestamp = projection.findField("recorded_at").type()
    spark_type = T.TimestampType() if timestamp.shouldAdjustToUTC() else T.TimestampNTZType()
    return [
        {
            "scope": row.get(ids["scope"]),
            # recorded_at as Spark would return it (see _read_rows)
            "recorded_at": spark_type.fromInternal(_iso_micros(row[ids["recorded_at"]])),
            "metric": row.get(ids["metric"]),
            "column_name": row.get(ids["column_name"]),
            "value": row.get(ids["value"]),
        }
        for chunk in chunks
        for row in json.loads(chunk)
    ]


_FRACTION = re.compile(r"\.(\d+)")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)  # noqa: UP017 (Python 3.9)


def _iso_micros(text: str) -> int:
    """Microseconds since the epoch of Iceberg's ISO text of a timestamp (UTC when it
    names no offset). Python 3.9's fromisoformat takes 3 or 6 fraction digits only."""
    padded = _FRACTION.sub(lambda m: "." + (m.group(1) + "000000")[:6], text, count=1)
    moment = dt.datetime.fromisoformat(padded)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)  # noqa: UP017
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def _window_start(metrics, drops: int) -> int | None:
    """The snapshot after which the latest `drops` published drops were appended, None
    to read the whole table. Main's metrics table is a straight line of appends, one per
    published drop (the data table's lock serializes its writers), so the window is the
    files the newest `drops` snapshots added (an incremental read of them, planned from
    their manifests alone). Any other history (a compaction, expired snapshots: what
    lies before them cannot be read incrementally), or one that begins within the
    window, is read whole."""
    walk = _WindowWalk(metrics, drops)
    for _ in walk:
        pass
    return walk.before.snapshotId() if walk.end == walk.FULL else None


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
                        "scope": SCOPE_TABLE,  # the filter kept only these
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


# The metrics table's metadata keeps at least this many of its latest snapshots (one per
# published drop), and as many as the longest window its checks read (`kept_drops`); older
# ones are dropped from it (`_forget_old_snapshots`), so loading the table, which every
# history read does, costs the same after 10,000 drops as after 100.
KEPT_DROPS = 100


def kept_drops(wanted: dict[Series, int]) -> int:
    """How many of its latest snapshots the metrics table keeps for checks that read
    `wanted` (series -> the drops its window needs)."""
    return max(KEPT_DROPS, *wanted.values()) if wanted else KEPT_DROPS


def record_metrics(
    spark: SparkSession,
    branch_table: CatalogTable,
    ingest_id: str,
    rows: list[tuple],
    keep: int = KEPT_DROPS,
) -> bool:
    """Append `rows` to the metrics table on the run's branch (creating it there), once
    per ingest: a re-run finds its earlier snapshot and appends nothing. Returns whether
    it appended. `keep`: the latest snapshots the table's metadata keeps (`kept_drops`).

    The rows (a few dozen) are written by the driver through Iceberg's Java API, one
    parquet file and one append commit: a Spark write of them would plan and run a job
    (and a Python worker to unpickle the rows) for the same file, about three times the
    cost (docs/benchmarks.md, "Metric history")."""
    table = metrics_ref(branch_table)
    try:
        existing = _load_metrics(spark, table)
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
            existing = _load_metrics(spark, table)
        commit_metric_rows(spark, existing, ingest_id, rows, keep)
        return True
    except Exception as exc:
        raise as_job_error(exc, f"recording the audit's metrics failed: {describe(exc)}") from exc


def commit_metric_rows(
    spark: SparkSession, table, ingest_id: str, rows: list[tuple], keep: int = KEPT_DROPS
) -> None:
    """One data file of `rows` (tuples in METRICS_TABLE_COLUMNS order) and one append
    of it to the Java Iceberg `table`, its snapshot marked with `ingest_id`; in the same
    commit, once the table holds twice `keep` snapshots, those older than the latest
    `keep` are dropped from its metadata (`_forget_old_snapshots`).

    The rows go to the JVM as one JSON text (Iceberg's single-value JSON of a list of
    structs, parsed into its internal values) and are written by Iceberg's parquet
    writer in one call: a py4j call per row and field cost a third of the commit."""
    iceberg = spark._jvm.org.apache.iceberg
    parquet = iceberg.FileFormat.PARQUET
    schema = table.schema()
    struct = iceberg.types.Types.ListType.ofRequired(0, schema.asStruct())
    text, unwritten = _rows_json(schema, rows)
    records = iceberg.SingleValueParser.fromJson(struct, text)
    for index, position, value in unwritten:  # NaN, infinities: set one by one
        records.get(index).set(position, value)
    output = iceberg.io.OutputFileFactory.builderFor(table, 0, 0).format(parquet).build()
    target = output.newOutputFile().encryptingOutputFile()
    appender = iceberg.InternalData.write(parquet, target).forTable(table).build()
    try:
        appender.addAll(records)
    finally:
        appender.close()
    data_file = (
        iceberg.DataFiles.builder(table.spec())
        .withPath(target.location())
        .withFormat(parquet)
        .withFileSizeInBytes(appender.length())
        .withMetrics(appender.metrics())
        .withSplitOffsets(appender.splitOffsets())
        .build()
    )
    # The summary names the file: the history read opens it without the manifests.
    transaction = table.newTransaction()
    transaction.newAppend().appendFile(data_file).set(INGEST_ID_PROPERTY, ingest_id).set(
        METRICS_FILE_PROPERTY, data_file.location()
    ).commit()
    _forget_old_snapshots(spark, transaction, keep)
    transaction.commitTransaction()


def _forget_old_snapshots(spark: SparkSession, transaction, keep: int) -> None:
    """Within `transaction` (one Nessie commit with the append), once the table holds
    more than twice `keep` snapshots, drop all but the latest `keep` from its metadata.

    Their files stay: older Nessie commits still name them, and Nessie's GC (with ours,
    ingestion/maintenance/gc.py) decides when they go; Iceberg's ExpireSnapshots, which
    refuses to run on a table with `gc.enabled=false` as Nessie's tables are, is not
    used. The data files all stay live (the table is only appended to), so a window
    longer than the snapshots kept is still read whole, from the manifests
    (`_window_start`). Twice `keep`: the chain is walked once per `keep` drops, not on
    every commit."""
    ops = transaction.table().operations()
    base = ops.current()
    if base.snapshots().size() <= 2 * keep:
        return
    kept, snapshot = set(), base.currentSnapshot()
    while snapshot is not None and len(kept) < keep:
        kept.add(snapshot.snapshotId())
        parent = snapshot.parentId()
        snapshot = base.snapshot(parent) if parent is not None else None
    old = [s for s in base.snapshots() if s.snapshotId() not in kept]
    if old:
        dropped = spark._jvm.java.util.ArrayList()
        for snapshot in old:
            dropped.add(snapshot)
        builder = spark._jvm.org.apache.iceberg.TableMetadata.buildFrom(base)
        ops.commit(base, builder.removeSnapshots(dropped).build())


def _rows_json(schema, rows: list[tuple]) -> tuple[str, list[tuple[int, int, float]]]:
    """`rows` as Iceberg's single-value JSON of a list of the table's structs: each an
    object keyed by field id, a timestamp as ISO text of the instant Spark would store
    (a naive value is the driver's local time, as in `createDataFrame`), nulls left out;
    and (row, position in the struct, value) of each NaN or infinity, which JSON cannot
    say and are left out too."""
    positions = {field.name(): index for index, field in enumerate(schema.columns())}
    columns = []
    for name, kind, _ in METRICS_TABLE_COLUMNS:
        field = schema.findField(name)
        zoned = kind == "timestamp" and field.type().shouldAdjustToUTC()
        columns.append((str(field.fieldId()), positions[name], kind, zoned))
    texts: dict = {}  # the ISO text of each timestamp (one per audit)
    objects, unwritten = [], []
    for index, row in enumerate(rows):
        values = {}
        # Not zip(strict=True): EMR runs Python 3.9 (a row has every column).
        for (field_id, position, kind, zoned), value in zip(columns, row):  # noqa: B905
            if value is None:
                continue
            if kind == "timestamp":
                if value not in texts:
                    texts[value] = _iso_text(T.TimestampType().toInternal(value), zoned)
                value = texts[value]
            elif kind == "double":
                value = float(value)
                if not math.isfinite(value):
                    unwritten.append((index, position, value))
                    continue
            values[field_id] = value
        objects.append(values)
    return json.dumps(objects, allow_nan=False), unwritten


def _iso_text(micros: int, zoned: bool) -> str:
    """Iceberg's ISO text of a timestamp given in microseconds since the epoch (UTC)."""
    moment = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)
    return moment.isoformat() + ("+00:00" if zoned else "")
