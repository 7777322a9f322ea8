"""Reading the metric history reads only what the window needs (issue 39's benchmark:
1,000 published drops cost about what 10 do): the files of the latest appends, and the
whole table when its history is not a straight line of appends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from urllib.parse import urlparse

from contracts.metric_history import METRICS_TABLE_COLUMNS
from spark_jobs.history import METRICS_SCHEMA, read_history
from spark_jobs.jvm import java_iterable
from spark_jobs.metrics import load_iceberg_table
from spark_jobs.writer import CatalogTable

ROWS = ("row_count", None)


def _history(spark, table: str, drops: int) -> str:
    """`lake.hist.<table>__audit_metrics` with `drops` published drops, one append each;
    drop n recorded n rows on day n."""
    name = f"lake.hist.{table}__audit_metrics"
    columns = ", ".join(f"`{n}` {kind}" for n, kind, _ in METRICS_TABLE_COLUMNS)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.hist")
    spark.sql(f"CREATE TABLE {name} ({columns}) USING iceberg")
    for number in range(drops):
        when = dt.datetime(2026, 1, 1) + dt.timedelta(days=number)
        row = (f"d{number}", when, "table", None, None, "row_count", None, float(number))
        spark.createDataFrame([row], METRICS_SCHEMA).coalesce(1).writeTo(name).append()
    return name


def _values(spark, table: str, window: int) -> list[float]:
    history = read_history(spark, CatalogTable("lake", "hist", table), {ROWS: window})
    return [point.value for point in history[ROWS]]


def test_the_read_touches_only_the_files_of_the_drops_in_the_window(lake):
    name = _history(lake, "orders", 6)
    table = load_iceberg_table(lake, name)
    first = min(java_iterable(table.snapshots()), key=lambda s: s.sequenceNumber())
    for data_file in java_iterable(first.addedDataFiles(table.io())):
        Path(urlparse(str(data_file.location())).path).unlink()  # a full scan would fail here

    assert _values(lake, "orders", 3) == [3.0, 4.0, 5.0]


def test_a_history_that_is_not_a_line_of_appends_is_read_whole(lake):
    name = _history(lake, "items", 5)
    lake.sql(f"DELETE FROM {name} WHERE ingest_id = 'd4'")

    assert _values(lake, "items", 3) == [1.0, 2.0, 3.0]
    assert _values(lake, "items", 10) == [0.0, 1.0, 2.0, 3.0]


def test_the_read_runs_no_spark_job_and_gives_what_spark_reads(lake):
    # The driver reads the few rows through Iceberg's API: a Spark query cost five times
    # the CPU. Its timestamps are what Spark returns for the same rows.
    name = _history(lake, "lines", 4)
    sc = lake.sparkContext
    sc.setJobGroup("read-history", "the history read")
    try:
        history = read_history(lake, CatalogTable("lake", "hist", "lines"), {ROWS: 3})
        jobs = list(sc.statusTracker().getJobIdsForGroup("read-history"))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert jobs == []
    spark_rows = lake.table(name).orderBy("recorded_at").collect()[-3:]
    assert [(p.recorded_at, p.value) for p in history[ROWS]] == [
        (row["recorded_at"], row["value"]) for row in spark_rows
    ]
