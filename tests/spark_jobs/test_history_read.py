"""Reading the metric history reads only what the window needs (issue 39's benchmark:
1,000 published drops cost about what 10 do): the files of the latest appends, and the
whole table when its history is not a straight line of appends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from urllib.parse import urlparse

from contracts.metric_history import METRICS_TABLE_COLUMNS
from spark_jobs import history
from spark_jobs.history import METRICS_SCHEMA, _iso_micros, read_history, record_metrics
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


def _recorded(spark, table: str, drops: range, keep: int = 100) -> None:
    """Drops committed by the job's own metrics commit (`record_metrics`): drop n recorded
    n rows on day n (half a second past midnight), one file-scope row and a null mean."""
    spark.sql("CREATE NAMESPACE IF NOT EXISTS lake.hist")
    for number in drops:
        when = dt.datetime(2026, 1, 1, 0, 0, 0, 500000) + dt.timedelta(days=number)
        ingest = f"d{number}"
        rows = [
            (ingest, when, "table", None, None, "row_count", None, float(number)),
            (ingest, when, "file", "s3://in/a.csv", None, "row_count", None, 99.0),
            (ingest, when, "table", None, "amount", "mean", None, None),
        ]
        assert record_metrics(spark, CatalogTable("lake", "hist", table), ingest, rows, keep)


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


def test_drops_the_job_recorded_are_read_from_their_files_without_the_manifests(lake):
    # Merge appends gather the table's manifests into one that lists every drop: the
    # window's snapshots name their files, and the read opens only those.
    _recorded(lake, "merged", range(5))
    name = "lake.hist.merged__audit_metrics"
    spark_rows = lake.table(name).where("scope = 'table' AND metric = 'row_count'")
    expected = [(row["recorded_at"], row["value"]) for row in spark_rows.collect()]
    table = load_iceberg_table(lake, name)
    for snapshot in java_iterable(table.snapshots()):
        for manifest in java_iterable(snapshot.allManifests(table.io())):
            Path(urlparse(str(manifest.path())).path).unlink(missing_ok=True)
        Path(urlparse(str(snapshot.manifestListLocation())).path).unlink()

    history = read_history(
        lake, CatalogTable("lake", "hist", "merged"), {ROWS: 3, ("mean", "amount"): 3}
    )

    assert [(p.recorded_at, p.value) for p in history[ROWS]] == sorted(expected)[-3:]
    assert history[("mean", "amount")] == []


def test_a_window_reaching_drops_recorded_before_their_files_were_named_reads_them_too(lake):
    _history(lake, "older", 3)  # Spark appends: their snapshots name no file
    _recorded(lake, "older", range(3, 5))

    assert _values(lake, "older", 2) == [3.0, 4.0]
    assert _values(lake, "older", 4) == [1.0, 2.0, 3.0, 4.0]


def test_the_metadata_keeps_the_latest_snapshots_and_every_drop_stays_readable(lake):
    _recorded(lake, "kept", range(7), keep=3)  # the 7th commit holds more than 2 x 3

    name = "lake.hist.kept__audit_metrics"
    table = load_iceberg_table(lake, name)
    kept = sorted(s.summary().get("wap.ingest-id") for s in java_iterable(table.snapshots()))
    assert kept == ["d4", "d5", "d6"]  # dropped in the same commit as d6's append
    assert history._window_files(table, 3) is not None  # its files, not the manifests
    assert _values(lake, "kept", 3) == [4.0, 5.0, 6.0]
    # A longer window than the snapshots kept: read from the manifests, nothing lost.
    assert _values(lake, "kept", 7) == [float(n) for n in range(7)]
    assert lake.table(name).count() == 7 * 3


def test_iceberg_timestamp_text_to_micros():
    second = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z
    assert _iso_micros("2026-01-01T00:00:00+00:00") == second
    assert _iso_micros("2026-01-01T00:00:00.5+00:00") == second + 500_000
    assert _iso_micros("2026-01-01T00:00:00.000001") == second + 1
