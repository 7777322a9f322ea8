"""How the job records and reads its metric history cheaply: the metrics commit runs no
Spark job (the driver writes its few rows through Iceberg's API), and main's history is
read in a thread of its own while the run goes on."""

from __future__ import annotations

import datetime as dt
import math
import threading

import pytest

from contracts.properties import INGEST_ID_PROPERTY
from spark_jobs import history
from spark_jobs.history import HistoryRead, record_metrics
from spark_jobs.metrics import load_iceberg_table
from spark_jobs.writer import CatalogTable

WHEN = dt.datetime(2026, 3, 1, 12, 30, 15, 123456)  # naive UTC, as utc_now() gives


def _rows(ingest: str) -> list[tuple]:
    return [
        (ingest, WHEN, "table", None, None, "row_count", None, 3.0),
        (ingest, WHEN, "table", None, "amount", "mean", None, 2.5),
        (ingest, WHEN, "table", None, "amount", "min", None, None),
        (ingest, WHEN, "table", None, None, "check", "amount_positive", 0.0),
        (ingest, WHEN, "file", "s3://in/a.csv", None, "row_count", None, 3.0),
    ]


def test_the_metrics_commit_runs_no_spark_job_and_records_every_row(lake):
    lake.sql("CREATE NAMESPACE IF NOT EXISTS lake.rec")
    ref = CatalogTable("lake", "rec", "orders")
    sc = lake.sparkContext
    sc.setJobGroup("record-metrics", "the metrics commit")
    try:
        assert record_metrics(lake, ref, "ing1", _rows("ing1"))
        assert record_metrics(lake, ref, "ing2", _rows("ing2"))
        assert not record_metrics(lake, ref, "ing1", _rows("ing1"))  # a re-run: once
        jobs = list(sc.statusTracker().getJobIdsForGroup("record-metrics"))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    assert jobs == []
    name = "lake.rec.orders__audit_metrics"
    table = load_iceberg_table(lake, name)
    marks = []
    snapshot = table.currentSnapshot()
    while snapshot is not None:
        marks.append(snapshot.summary().get(INGEST_ID_PROPERTY))
        parent = snapshot.parentId()
        snapshot = table.snapshot(parent) if parent is not None else None
    assert marks == ["ing2", "ing1"]
    got = {tuple(row) for row in lake.table(name).where("ingest_id = 'ing1'").collect()}
    assert got == set(_rows("ing1"))


def test_the_history_is_read_in_a_thread_of_its_own(monkeypatch):
    release, threads = threading.Event(), []

    def slow_read(spark, table, wanted):
        threads.append(threading.current_thread())
        assert release.wait(30)
        return {series: [] for series in wanted}

    monkeypatch.setattr(history, "read_history", slow_read)
    wanted = {("row_count", None): 10}
    read = HistoryRead(None, CatalogTable("lake", "ns", "t"), wanted)  # returns at once
    release.set()
    assert read.result() == {("row_count", None): []}
    assert threads and threads[0] is not threading.current_thread()


def test_a_failed_history_read_fails_where_the_history_is_needed(monkeypatch):
    def broken(spark, table, wanted):
        raise RuntimeError("catalog down")

    monkeypatch.setattr(history, "read_history", broken)
    read = HistoryRead(None, CatalogTable("lake", "ns", "t"), {("row_count", None): 10})
    read.wait()  # a run that ends otherwise does not raise it again
    with pytest.raises(RuntimeError, match="catalog down"):
        read.result()


def test_values_json_cannot_say_are_recorded_as_they_are(lake):
    # The rows reach the JVM as JSON, which has no NaN or infinity: those are set apart.
    lake.sql("CREATE NAMESPACE IF NOT EXISTS lake.rec")
    rows = [
        ("odd", WHEN, "table", None, "amount", "mean", None, float("nan")),
        ("odd", WHEN, "table", None, "amount", "max", None, float("inf")),
        ("odd", WHEN, "table", None, "amount", "min", None, float("-inf")),
        ("odd", WHEN, "table", None, None, "row_count", None, 3),
    ]
    assert record_metrics(lake, CatalogTable("lake", "rec", "odd"), "odd", rows)

    got = lake.table("lake.rec.odd__audit_metrics").collect()
    values = {row["metric"]: row["value"] for row in got}
    assert math.isnan(values["mean"])
    assert (values["max"], values["min"], values["row_count"]) == (math.inf, -math.inf, 3.0)
    assert {row["recorded_at"] for row in got} == {WHEN}


def test_the_read_in_its_own_thread_finds_a_catalog_the_session_has_not_used_yet(lake):
    # A job's first use of the catalog may be this thread's (a fresh `wap ingest` process):
    # it must resolve `lake` as the session does, not as a namespace of spark_catalog.
    lake.sql("CREATE NAMESPACE IF NOT EXISTS lake.rec")
    ref = CatalogTable("lake", "rec", "fresh")
    assert record_metrics(lake, ref, "ing1", _rows("ing1"))
    lake._jsparkSession.sessionState().catalogManager().reset()  # no catalog loaded yet

    read = HistoryRead(lake, ref, {("row_count", None): 10})

    assert [point.value for point in read.result()[("row_count", None)]] == [3.0]
